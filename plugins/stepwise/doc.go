// Package stepwise is the built-in agent loop: agents defined in Dex terms,
// without a framework. A Runner implements the runner contract
// (pluginapi.Runner): every RunModelStep makes exactly one model call through
// a ModelClient, and every tool call is deferred to its own session Step, so
// approvals, retries by effect class and idempotency keys work as for any
// runner.
//
// A plugin binary builds each agent from its runner_config and serves them
// all. This one reads a real model's configuration (package
// plugins/stepwise/model) and offers one tool:
//
//	package main
//
//	import (
//		"context"
//		"encoding/json"
//		"fmt"
//		"os"
//
//		"github.com/dex-agents/dex-agent-worker/pluginapi"
//		"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"
//		"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
//		"github.com/dex-agents/dex-agent-worker/plugins/stepwise/model"
//	)
//
//	func main() {
//		pluginapi.Serve(pluginapi.ServeOptions{Runner: stepwise.NewRunner("orders", "1.0.0", buildAgent), TracerProvider: otelenv.Provider()})
//	}
//
//	// config is the agent's runner_config, such as
//	// {"model": {"provider": "openai", "name": "gpt-5-mini"}}.
//	type config struct {
//		Model model.Config `json:"model"`
//	}
//
//	type lookupArgs struct {
//		OrderID string `json:"order_id" description:"The order's ID."`
//	}
//
//	func buildAgent(ctx context.Context, agent string, raw json.RawMessage) (*stepwise.AgentDefinition, error) {
//		var cfg config
//		if err := json.Unmarshal(raw, &cfg); err != nil {
//			return nil, fmt.Errorf("runner_config: %w", err)
//		}
//		client, err := model.New(cfg.Model, os.Getenv)
//		if err != nil {
//			return nil, fmt.Errorf("runner_config: %w", err)
//		}
//		lookup := stepwise.MustFunctionTool("lookup_order", "Look up an order by its ID.",
//			func(ctx context.Context, tc stepwise.ToolCallContext, args lookupArgs) (string, error) {
//				return "order " + args.OrderID + " was delivered", nil
//			}, stepwise.WithEffect(pluginapi.EffectRead))
//		return &stepwise.AgentDefinition{
//			Name:          agent,
//			Instructions:  "You help customers with their orders.",
//			Model:         client,
//			ModelName:     cfg.Model.Name,
//			ModelSettings: cfg.Model.Settings,
//			Tools:         []*stepwise.Tool{lookup},
//		}, nil
//	}
//
// Configure reports each agent's tool names, so the worker can warn about
// tool_policies that name a tool the agent does not have.
//
// Before every model call the runner repairs the input it sends
// (RepairItems): each tool call has exactly one result, a call whose result
// is missing (its Step was interrupted) appears as outcome unknown, and an
// extra result is left out, so providers that refuse dangling tool calls
// keep working after any crash. The stored messages are not changed.
//
// ScriptedModelClient answers from a deterministic function of the request,
// so agents run without a model key in demos and tests; the package example
// runs a whole turn with one.
package stepwise
