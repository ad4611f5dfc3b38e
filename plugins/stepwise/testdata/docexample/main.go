package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise/model"
)

func main() {
	pluginapi.Serve(pluginapi.ServeOptions{Runner: stepwise.NewRunner("orders", "1.0.0", buildAgent), TracerProvider: otelenv.Provider()})
}

// config is the agent's runner_config, such as
// {"model": {"provider": "openai", "name": "gpt-5-mini"}}.
type config struct {
	Model model.Config `json:"model"`
}

type lookupArgs struct {
	OrderID string `json:"order_id" description:"The order's ID."`
}

func buildAgent(ctx context.Context, agent string, raw json.RawMessage) (*stepwise.AgentDefinition, error) {
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("runner_config: %w", err)
	}
	client, err := model.New(cfg.Model, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("runner_config: %w", err)
	}
	lookup := stepwise.MustFunctionTool("lookup_order", "Look up an order by its ID.",
		func(ctx context.Context, tc stepwise.ToolCallContext, args lookupArgs) (string, error) {
			return "order " + args.OrderID + " was delivered", nil
		}, stepwise.WithEffect(pluginapi.EffectRead))
	return &stepwise.AgentDefinition{
		Name:          agent,
		Instructions:  "You help customers with their orders.",
		Model:         client,
		ModelName:     cfg.Model.Name,
		ModelSettings: cfg.Model.Settings,
		Tools:         []*stepwise.Tool{lookup},
	}, nil
}
