package stepwise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// DefaultMaxModelCallsPerTurn is the spec's limit of model calls in one turn.
const DefaultMaxModelCallsPerTurn = 100

// AgentDefinition defines an agent in Dex terms, without a framework.
type AgentDefinition struct {
	// Name is the agent's name; it appears in logs.
	Name string
	// Instructions are the system instructions. Text that contains "{{" is
	// a Go text/template evaluated in every model call with an
	// InstructionContext.
	Instructions string
	// Model makes the model calls.
	Model ModelClient
	// ModelName is sent as the request's model.
	ModelName     string
	ModelSettings ModelSettings
	// Tools are the agent's function tools, offered in this order.
	Tools []*Tool
	// ToolPolicies override the tools' own policies by tool name. The worker
	// config's tool_policies take precedence over these, and a plugin
	// declared with trusts_tool_policies: false has only the config count.
	ToolPolicies map[string]pluginapi.ToolPolicy
	// DefaultToolEffect applies to tools with no effect of their own and no
	// ToolPolicies entry, before the agent's default_tool_effect in the
	// worker config; empty leaves them to that default.
	DefaultToolEffect pluginapi.Effect
	// PlanningToolChoice is how a planning turn offers write_todos:
	// "auto" (or empty), the model may answer in text instead (a
	// clarifying question ends the turn without a draft); "required"
	// forces write_todos on the first model call of a planning turn while
	// no draft exists. A model client that refuses a forced tool choice
	// (ForcedToolChoiceChecker) makes "required" a definition error.
	PlanningToolChoice string
	// MaxModelCallsPerTurn bounds the model calls of one turn (0: 100).
	// After that many calls the next call offers no tools, and a tool call
	// the model makes anyway is not run while the turn ends.
	MaxModelCallsPerTurn int
	// ResolveModel, when set, picks the model of each model call from the
	// turn's session settings (a JSON object; empty when there are none):
	// return one of the models this runner built, never one a setting
	// describes (a key, a URL). A nil choice keeps Model, ModelName and
	// ModelSettings. An error fails the turn with its text, which
	// snapshots show, so keep the settings out of it.
	ResolveModel func(settings json.RawMessage) (*ModelChoice, error)
	// SettingChoices are reported by Configure: the session settings whose
	// values ResolveModel (or the tools) choose among, for user interfaces.
	SettingChoices []pluginapi.SettingChoice
}

// ModelChoice is the model ResolveModel picks for a call.
type ModelChoice struct {
	Client   ModelClient
	Name     string
	Settings ModelSettings
}

// model returns the model of a call with the turn's session settings.
func (d *AgentDefinition) model(settings json.RawMessage) (ModelChoice, error) {
	def := ModelChoice{Client: d.Model, Name: d.ModelName, Settings: d.ModelSettings}
	if d.ResolveModel == nil {
		return def, nil
	}
	choice, err := d.ResolveModel(settings)
	if err != nil {
		return ModelChoice{}, err
	}
	if choice == nil {
		return def, nil
	}
	if choice.Client == nil {
		return ModelChoice{}, fmt.Errorf("ResolveModel chose model %q without a client", choice.Name)
	}
	return *choice, nil
}

// InstructionContext is the data of an instructions template.
type InstructionContext struct {
	Agent     string
	SessionID string
	TurnID    string
	Attempt   int
	// ModelCalls counts the model calls this turn made before this one.
	ModelCalls int
	// MessageCount is the number of stored messages.
	MessageCount int
	// SessionSettings are the turn's session settings, an empty map when
	// there are none: in a template, {{with index .SessionSettings
	// "model"}}{{.}}{{else}}the default{{end}}.
	// The application sets them; never take a key or URL from them.
	SessionSettings map[string]any
}

// The values of AgentDefinition.PlanningToolChoice.
const (
	PlanningToolChoiceAuto     = "auto"
	PlanningToolChoiceRequired = "required"
)

// ForcedToolChoiceChecker is what a ModelClient implements when some of its
// models refuse a forced tool choice (tool_choice "required" or a tool's
// name), such as Anthropic's with extended thinking.
type ForcedToolChoiceChecker interface {
	SupportsForcedToolChoice(model string, settings ModelSettings) bool
}

// settingsMap decodes a turn's session settings for InstructionContext:
// an empty map when there are none.
func settingsMap(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // the session checked they are one object
	}
	return m
}

// compiled is a validated AgentDefinition.
type compiled struct {
	def          *AgentDefinition
	instructions *template.Template
	tools        map[string]*Tool
	maxCalls     int
}

func compile(def *AgentDefinition) (*compiled, error) {
	if def == nil {
		return nil, errors.New("no agent definition")
	}
	var problems []string
	if def.Model == nil {
		problems = append(problems, "model: a ModelClient is required")
	}
	c := &compiled{def: def, tools: map[string]*Tool{}, maxCalls: def.MaxModelCallsPerTurn}
	if c.maxCalls == 0 {
		c.maxCalls = DefaultMaxModelCallsPerTurn
	}
	if c.maxCalls < 0 {
		problems = append(problems, fmt.Sprintf("max_model_calls_per_turn: %d is negative", def.MaxModelCallsPerTurn))
	}
	switch def.PlanningToolChoice {
	case "", PlanningToolChoiceAuto:
	case PlanningToolChoiceRequired:
		if f, ok := def.Model.(ForcedToolChoiceChecker); ok && !f.SupportsForcedToolChoice(def.ModelName, def.ModelSettings) {
			problems = append(problems, fmt.Sprintf("planning_tool_choice: model %q refuses a forced tool choice (extended thinking, or a model that never accepts one); use \"auto\"", def.ModelName))
		}
	default:
		problems = append(problems, fmt.Sprintf("planning_tool_choice: %q is neither \"auto\" nor \"required\"", def.PlanningToolChoice))
	}
	if def.DefaultToolEffect != "" && !def.DefaultToolEffect.Valid() {
		problems = append(problems, fmt.Sprintf("default_tool_effect: unknown effect %q", def.DefaultToolEffect))
	}
	for i, t := range def.Tools {
		if t == nil {
			problems = append(problems, fmt.Sprintf("tools[%d]: nil tool", i))
			continue
		}
		name := t.def.Name
		if _, dup := c.tools[name]; dup {
			problems = append(problems, fmt.Sprintf("tools[%d]: two tools are named %q", i, name))
		}
		c.tools[name] = t
	}
	for name, p := range def.ToolPolicies {
		if !p.Effect.Valid() {
			problems = append(problems, fmt.Sprintf("tool_policies.%s: unknown effect %q", name, p.Effect))
		}
	}
	if strings.Contains(def.Instructions, "{{") {
		tmpl, err := template.New("instructions").Option("missingkey=error").Parse(def.Instructions)
		if err != nil {
			problems = append(problems, "instructions: "+err.Error())
		}
		c.instructions = tmpl
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("agent %s: %s", def.Name, strings.Join(problems, "; "))
	}
	return c, nil
}

func (c *compiled) renderInstructions(ic InstructionContext) (string, error) {
	if c.instructions == nil {
		return c.def.Instructions, nil
	}
	var b bytes.Buffer
	if err := c.instructions.Execute(&b, ic); err != nil {
		return "", fmt.Errorf("instructions template: %w", err)
	}
	return b.String(), nil
}

// policy resolves a tool's policy. For a tool the session runs: the
// worker's policy for it, or its host definition's effect. For the agent's
// own: the worker config's explicit policy, else the runner's (ownPolicy),
// else the worker config's default effect.
func (c *compiled) policy(turn *pluginapi.TurnContext, name string) pluginapi.ToolPolicy {
	if i := slices.IndexFunc(turn.HostTools, func(h pluginapi.ToolDefinition) bool { return h.Name == name }); i >= 0 {
		// A tool the session runs (a built-in, an MCP tool): its
		// definition's effect, as the worker's policies resolve it.
		return turn.Policies.Resolve(name, turn.HostTools[i].Effect)
	}
	if _, ok := c.tools[name]; !ok {
		// Unknown tools fail in their tool Step without approval.
		no := false
		return pluginapi.ToolPolicy{Effect: pluginapi.EffectUnclassified, RequiresApproval: &no}
	}
	if p, ok := turn.Policies.Policies[name]; ok {
		return p
	}
	p, _ := c.ownPolicy(name)
	if !p.Effect.Valid() {
		p.Effect = turn.Policies.Resolve(name, "").Effect
	}
	return p
}

// ownPolicy is the runner's policy for one of the agent's tools, where the
// worker config is silent: the definition's ToolPolicies entry, else the
// tool's own effect (WithEffect, RequiresApproval), else the definition's
// DefaultToolEffect; a RequiresApproval of the tool's own holds without an
// effect. ok is false when none of them says anything.
func (c *compiled) ownPolicy(name string) (pluginapi.ToolPolicy, bool) {
	if p, ok := c.def.ToolPolicies[name]; ok {
		return p, true
	}
	t, ok := c.tools[name]
	if !ok {
		return pluginapi.ToolPolicy{}, false
	}
	p := pluginapi.ToolPolicy{Effect: t.def.Effect, RequiresApproval: t.requiresApproval}
	if !p.Effect.Valid() {
		p.Effect = c.def.DefaultToolEffect
	}
	return p, p.Effect.Valid() || p.RequiresApproval != nil
}

// ownPolicies are the runner's policies of every tool of the agent that
// has one, for ConfigureResponse.
func (c *compiled) ownPolicies() map[string]pluginapi.ToolPolicy {
	out := map[string]pluginapi.ToolPolicy{}
	for name := range c.tools {
		if p, ok := c.ownPolicy(name); ok {
			out[name] = p
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
