package main

import (
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func TestEffectivePolicy(t *testing.T) {
	yes, no := true, false
	a := &config.Agent{Name: "support", DefaultToolEffect: config.EffectUnclassified, ToolPolicies: map[string]config.ToolPolicy{
		"refund_order": {Effect: config.EffectNonIdempotentWrite, RequiresApproval: &no},
	}}
	own := map[string]pluginapi.ToolPolicy{
		"refund_order": {Effect: pluginapi.EffectRead},
		"lookup_order": {Effect: pluginapi.EffectRead},
		"quiet":        {RequiresApproval: &no},
		"loud":         {Effect: pluginapi.EffectRead, RequiresApproval: &yes},
	}
	tests := []struct {
		tool          string
		trusted       bool
		runnerDefault pluginapi.Effect
		want          string
	}{
		{"refund_order", true, "", "non_idempotent_write, no approval (tool_policies)"},
		{"lookup_order", true, "", "read, no approval (the runner's policy)"},
		{"loud", true, "", "read, approval (the runner's policy)"},
		{"quiet", true, "", "unclassified, no approval (the runner's policy)"},
		{"label", true, pluginapi.EffectIdempotentWrite, "idempotent_write, no approval (the runner's default effect)"},
		{"label", true, "", "unclassified, approval (default_tool_effect)"},
		{"lookup_order", false, pluginapi.EffectRead, "unclassified, approval (default_tool_effect)"},
		{"refund_order", false, "", "non_idempotent_write, no approval (tool_policies)"},
	}
	for _, tt := range tests {
		p, from := effectivePolicy(a, tt.trusted, tt.tool, own, tt.runnerDefault)
		if got := describePolicy(p, from); got != tt.want {
			t.Errorf("%s (trusted %v): %q, want %q", tt.tool, tt.trusted, got, tt.want)
		}
	}
}
