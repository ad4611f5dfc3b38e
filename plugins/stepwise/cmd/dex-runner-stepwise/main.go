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
//	models:                     # optional: models a session may pick by its settings
//	  deep: {provider: openai, name: gpt-5, api_key_env: OPENAI_API_KEY}
//	settings_model_key: model   # the session setting that names one (default "model")
//	planning_tool_choice: auto  # auto | required: force write_todos on a planning turn's first call
//
// The model block is plugins/stepwise/model.Config (api_base,
// request_options and the settings are described there). Provider
// "scripted" with name "echo" answers "Demo reply: <user text>", so an agent
// runs without a model key.
//
// A session whose settings hold {"model": "deep"} makes its model calls
// with models.deep; without that setting, with model. A setting that names
// no model of the list fails the turn with an error that says so: the
// settings choose among the models configured here, never describe one.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise/model"
)

var version = "dev"

type config struct {
	Instructions         string                  `json:"instructions"`
	Model                model.Config            `json:"model"`
	MaxModelCallsPerTurn int                     `json:"max_model_calls_per_turn"`
	Models               map[string]model.Config `json:"models"`
	SettingsModelKey     string                  `json:"settings_model_key"`
	PlanningToolChoice   string                  `json:"planning_tool_choice"`
}

func build(_ context.Context, agent string, raw json.RawMessage) (*stepwise.AgentDefinition, error) {
	var cfg config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("stepwise runner_config: %w", err)
	}
	client, err := newClient("model", cfg.Model)
	if err != nil {
		return nil, err
	}
	def := &stepwise.AgentDefinition{
		Name:                 agent,
		Instructions:         cfg.Instructions,
		Model:                client,
		ModelName:            cfg.Model.Name,
		ModelSettings:        cfg.Model.Settings,
		MaxModelCallsPerTurn: cfg.MaxModelCallsPerTurn,
		PlanningToolChoice:   cfg.PlanningToolChoice,
	}
	if len(cfg.Models) > 0 {
		key := cfg.SettingsModelKey
		if key == "" {
			key = "model"
		}
		choices := map[string]*stepwise.ModelChoice{}
		var names []string
		for name, mc := range cfg.Models {
			c, err := newClient("models."+name, mc)
			if err != nil {
				return nil, err
			}
			choices[name] = &stepwise.ModelChoice{Client: c, Name: mc.Name, Settings: mc.Settings}
			names = append(names, name)
		}
		sort.Strings(names)
		def.SettingChoices = []pluginapi.SettingChoice{{Key: key, Values: names, Default: cfg.Model.Name}}
		def.ResolveModel = func(settings json.RawMessage) (*stepwise.ModelChoice, error) {
			var s map[string]any
			if len(settings) > 0 {
				if err := json.Unmarshal(settings, &s); err != nil {
					return nil, fmt.Errorf("the session settings are not a JSON object: %w", err)
				}
			}
			v, ok := s[key]
			if !ok || v == nil {
				return nil, nil
			}
			name, _ := v.(string)
			if c, ok := choices[name]; ok {
				return c, nil
			}
			return nil, fmt.Errorf("the session setting %q names no model of agent %s (it may name: %s)", key, agent, strings.Join(names, ", "))
		}
	} else if cfg.SettingsModelKey != "" {
		return nil, fmt.Errorf("stepwise runner_config: settings_model_key needs models to choose from")
	}
	return def, nil
}

// newClient builds the model client of one model block.
func newClient(where string, mc model.Config) (stepwise.ModelClient, error) {
	switch mc.Provider {
	case model.ProviderScripted:
		if mc.Name != "echo" {
			return nil, fmt.Errorf("stepwise runner_config: %s.name %q: the scripted provider has only \"echo\"", where, mc.Name)
		}
		return stepwise.NewScriptedModelClient(echo), nil
	case "":
		return nil, fmt.Errorf("stepwise runner_config: %s.provider is required (openai, openai-chat, openai-compatible, anthropic or scripted)", where)
	}
	c, err := model.New(mc, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("stepwise runner_config: %s: %w", where, err)
	}
	return c, nil
}

func echo(_ context.Context, req *stepwise.ModelRequest) (stepwise.ScriptedReply, error) {
	if stepwise.IsSummaryRequest(req) {
		return stepwise.ScriptedReply{Text: stepwise.ScriptedSummary(req)}, nil
	}
	texts := stepwise.UserTexts(req)
	if len(texts) == 0 {
		return stepwise.ScriptedReply{Text: "Hello!"}, nil
	}
	return stepwise.ScriptedReply{Text: "Demo reply: " + texts[len(texts)-1]}, nil
}

func main() {
	pluginapi.Serve(pluginapi.ServeOptions{Runner: stepwise.NewRunner("stepwise", version, build), TracerProvider: otelenv.Provider()})
}
