// Command dex-runner-stepwise serves Stepwise agents configured entirely in
// the worker's YAML, without Go code of the user's: instructions, a model,
// and the model call limit. Agents with function tools are built as their
// own plugin binaries on the stepwise library (see examples/orders).
//
// runner_config:
//
//	instructions: You answer questions about our product.
//	model:
//	  provider: openai          # openai | openai-chat | openai-compatible | anthropic | scripted
//	  name: gpt-5-mini
//	  api_key_env: OPENAI_API_KEY  # list it in plugins.stepwise.env
//	  settings: {reasoning_effort: low, max_output_tokens: 2000}
//	max_model_calls_per_turn: 100
//
// The model block is plugins/stepwise/model.Config (api_base,
// request_options and the settings are described there). Provider
// "scripted" with name "echo" answers "Demo reply: <user text>", so an agent
// runs without a model key.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise/model"
)

var version = "dev"

type config struct {
	Instructions         string       `json:"instructions"`
	Model                model.Config `json:"model"`
	MaxModelCallsPerTurn int          `json:"max_model_calls_per_turn"`
}

func build(_ context.Context, agent string, raw json.RawMessage) (*stepwise.AgentDefinition, error) {
	var cfg config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("stepwise runner_config: %w", err)
	}
	var client stepwise.ModelClient
	switch cfg.Model.Provider {
	case model.ProviderScripted:
		if cfg.Model.Name != "echo" {
			return nil, fmt.Errorf("stepwise runner_config: model.name %q: the scripted provider has only \"echo\"", cfg.Model.Name)
		}
		client = stepwise.NewScriptedModelClient(echo)
	case "":
		return nil, fmt.Errorf("stepwise runner_config: model.provider is required (openai, openai-chat, openai-compatible, anthropic or scripted)")
	default:
		c, err := model.New(cfg.Model, os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("stepwise runner_config: %w", err)
		}
		client = c
	}
	return &stepwise.AgentDefinition{
		Name:                 agent,
		Instructions:         cfg.Instructions,
		Model:                client,
		ModelName:            cfg.Model.Name,
		ModelSettings:        cfg.Model.Settings,
		MaxModelCallsPerTurn: cfg.MaxModelCallsPerTurn,
	}, nil
}

func echo(_ context.Context, req *stepwise.ModelRequest) (stepwise.ScriptedReply, error) {
	texts := stepwise.UserTexts(req)
	if len(texts) == 0 {
		return stepwise.ScriptedReply{Text: "Hello!"}, nil
	}
	return stepwise.ScriptedReply{Text: "Demo reply: " + texts[len(texts)-1]}, nil
}

func main() {
	pluginapi.Serve(stepwise.NewRunner("stepwise", version, build))
}
