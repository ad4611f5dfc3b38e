package main

import (
	"fmt"
	"slices"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Where a tool's effective policy comes from, as config validate prints it.
const (
	fromToolPolicies  = "tool_policies"
	fromRunner        = "the runner's policy"
	fromRunnerDefault = "the runner's default effect"
	fromDefault       = "default_tool_effect"
	fromAnnotations   = "the MCP server's annotations"
	fromBuiltIn       = "built-in"
)

// effectivePolicy is the policy a call of one of the runner's own tools
// runs under in a new session, and where it comes from: the order of
// session.AuthorizeRunnerPolicy, with the runner's policies as its
// Configure reported them (own, runnerDefault).
func effectivePolicy(a *config.Agent, trusted bool, tool string, own map[string]pluginapi.ToolPolicy, runnerDefault pluginapi.Effect) (pluginapi.ToolPolicy, string) {
	if p, ok := a.ToolPolicies[tool]; ok {
		return pluginapi.ToolPolicy{Effect: pluginapi.Effect(p.Effect), RequiresApproval: p.RequiresApproval}, fromToolPolicies
	}
	if trusted {
		if p, ok := own[tool]; ok && (p.Effect.Valid() || p.RequiresApproval != nil) {
			if !p.Effect.Valid() {
				p.Effect = pluginapi.Effect(a.DefaultToolEffect)
			}
			return p, fromRunner
		}
		if runnerDefault.Valid() {
			return pluginapi.ToolPolicy{Effect: runnerDefault}, fromRunnerDefault
		}
	}
	return pluginapi.ToolPolicy{Effect: pluginapi.Effect(a.DefaultToolEffect)}, fromDefault
}

// describePolicy is "read, no approval (tool_policies)".
func describePolicy(p pluginapi.ToolPolicy, from string) string {
	approval := "no approval"
	if p.ApprovalRequired() {
		approval = "approval"
	}
	return fmt.Sprintf("%s, %s (%s)", p.Effect, approval, from)
}

// policyLines are config validate's lines for an agent's own tools and
// built-ins: each tool's effective policy and its source.
func policyLines(a *config.Agent, trusted bool, tools []string, own map[string]pluginapi.ToolPolicy, runnerDefault pluginapi.Effect) []string {
	var lines []string
	for _, tool := range tools {
		p, from := effectivePolicy(a, trusted, tool, own, runnerDefault)
		lines = append(lines, fmt.Sprintf("agent %s: tool %s: %s", a.Name, tool, describePolicy(p, from)))
	}
	for _, b := range slices.Sorted(slices.Values(a.BuiltInTools)) {
		lines = append(lines, fmt.Sprintf("agent %s: tool %s: %s", a.Name, b, describePolicy(pluginapi.ToolPolicy{Effect: pluginapi.EffectRead}, fromBuiltIn)))
	}
	if !trusted {
		lines = append(lines, fmt.Sprintf("agent %s: runner %s is declared trusts_tool_policies: false: its own policies do not apply", a.Name, a.Runner))
	}
	return lines
}
