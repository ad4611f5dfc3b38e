package stepwise

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// TestOwnToolPolicyOrder: the config's entry, else the definition's
// ToolPolicies, else the tool's own effect, else the definition's
// DefaultToolEffect, else the config's default effect. Configure reports
// the runner's own policies.
func TestOwnToolPolicyOrder(t *testing.T) {
	fn := func(context.Context, ToolCallContext, struct{}) (string, error) { return "", nil }
	yes := true
	read := MustFunctionTool("lookup", "", fn, WithEffect(pluginapi.EffectRead))
	loud := MustFunctionTool("loud", "", fn, RequiresApproval(true))
	plain := MustFunctionTool("plain", "", fn)
	listed := MustFunctionTool("listed", "", fn, WithEffect(pluginapi.EffectRead))
	def := &AgentDefinition{
		Name: "a", Model: NewScriptedModelClient(nil),
		Tools:             []*Tool{read, loud, plain, listed},
		ToolPolicies:      map[string]pluginapi.ToolPolicy{"listed": {Effect: pluginapi.EffectIdempotentWrite}},
		DefaultToolEffect: pluginapi.EffectNonIdempotentWrite,
	}
	c, err := compile(def)
	if err != nil {
		t.Fatal(err)
	}
	turn := &pluginapi.TurnContext{Policies: pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified, Policies: map[string]pluginapi.ToolPolicy{
		"lookup": {Effect: pluginapi.EffectNonIdempotentWrite},
	}}}
	tests := []struct {
		tool string
		want pluginapi.ToolPolicy
	}{
		{"lookup", pluginapi.ToolPolicy{Effect: pluginapi.EffectNonIdempotentWrite}},
		{"listed", pluginapi.ToolPolicy{Effect: pluginapi.EffectIdempotentWrite}},
		{"loud", pluginapi.ToolPolicy{Effect: pluginapi.EffectNonIdempotentWrite, RequiresApproval: &yes}},
		{"plain", pluginapi.ToolPolicy{Effect: pluginapi.EffectNonIdempotentWrite}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, c.policy(turn, tt.tool)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.tool, diff)
		}
	}
	def.DefaultToolEffect = ""
	if got := c.policy(turn, "plain"); got.Effect != pluginapi.EffectUnclassified {
		t.Errorf("plain without the runner's default = %+v, want the config's default", got)
	}

	r := NewRunner("t", "1", func(context.Context, string, json.RawMessage) (*AgentDefinition, error) {
		return &AgentDefinition{Name: "a", Model: NewScriptedModelClient(nil), Tools: []*Tool{read, plain}, DefaultToolEffect: pluginapi.EffectIdempotentWrite}, nil
	})
	resp, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pluginapi.ToolPolicy{"lookup": {Effect: pluginapi.EffectRead}, "plain": {Effect: pluginapi.EffectIdempotentWrite}}
	if diff := cmp.Diff(want, resp.ToolPolicies); diff != "" || resp.DefaultToolEffect != pluginapi.EffectIdempotentWrite {
		t.Errorf("Configure's policies (-want +got):\n%s default %q", diff, resp.DefaultToolEffect)
	}
}
