package stepwise

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func TestPlanNote(t *testing.T) {
	plan := &pluginapi.Plan{Revision: 3, Status: "active", Tasks: []pluginapi.PlanTask{
		{Content: "Look up order 7", Status: "completed"}, {Content: "Refund it", Status: "in_progress"},
	}}
	want := "[Dex] The current plan (revision 3, active):\n1. [completed] Look up order 7\n2. [in_progress] Refund it\nKeep the task statuses current with write_todos."
	if got := PlanNote(plan); got != want {
		t.Errorf("PlanNote = %q\nwant      %q", got, want)
	}
	if got := PlanNote(&pluginapi.Plan{Revision: 4, Status: "cleared", Tasks: []pluginapi.PlanTask{}}); got != "" {
		t.Errorf("a cleared plan has a note: %q", got)
	}
	// The note goes before the turn's message, after the history.
	items := []ModelItem{
		{Kind: ItemUserText, Text: "earlier"}, {Kind: ItemModelOutput},
		{Kind: ItemUserText, Text: "now"}, {Kind: ItemToolResult, ToolCallID: "c1"},
	}
	got := withPlan(&pluginapi.TurnContext{Plan: plan}, items)
	var kinds []string
	for _, it := range got {
		kinds = append(kinds, string(it.Kind)+":"+it.Text)
	}
	wantKinds := []string{string(ItemUserText) + ":earlier", string(ItemModelOutput) + ":", string(ItemUserText) + ":" + want, string(ItemUserText) + ":now", string(ItemToolResult) + ":"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("withPlan (-want +got):\n%s", diff)
	}
	if got := withPlan(&pluginapi.TurnContext{}, items); len(got) != len(items) {
		t.Errorf("no plan, yet %d items", len(got))
	}
}

// TestPlanningTurnOffersOnlyWriteTodos: a planning turn offers the model
// only write_todos and the planning note (with the draft); other turns
// offer every tool.
func TestPlanningTurnOffersOnlyWriteTodos(t *testing.T) {
	own := MustFunctionTool("lookup", "Looks up.", func(context.Context, ToolCallContext, struct{}) (string, error) { return "", nil })
	c := &compiled{def: &AgentDefinition{Tools: []*Tool{own}}}
	host := []pluginapi.ToolDefinition{{Name: "ask_user"}, {Name: "write_todos"}}
	names := func(mode string) string {
		var out []string
		for _, d := range offeredTools(c, &pluginapi.TurnContext{HostTools: host, InteractionMode: mode}) {
			out = append(out, d.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names("planning"); got != "write_todos" {
		t.Errorf("planning offers %s", got)
	}
	if got := names("executing"); got != "lookup,ask_user,write_todos" {
		t.Errorf("executing offers %s", got)
	}
	draft := &pluginapi.Plan{Revision: 1, Status: "draft", Tasks: []pluginapi.PlanTask{{Content: "Pack", Status: "pending"}}}
	if got := planNote(draft, "planning"); !strings.HasPrefix(got, PlanningNote+"\n[Dex] The current plan (revision 1, draft):\n1. [pending] Pack") {
		t.Errorf("planning note = %q", got)
	}
	if got := planNote(nil, "planning"); got != PlanningNote {
		t.Errorf("planning note without a draft = %q", got)
	}
}

// TestHostToolCallsClaimTheHostsPolicy: a call of a tool the session runs
// claims the worker's policy for its definition's effect, so an MCP read
// stays a read; a policy naming it wins; the agent's own tool of the same
// name does not decide.
func TestHostToolCallsClaimTheHostsPolicy(t *testing.T) {
	own := MustFunctionTool("files__read", "Mine.", func(context.Context, ToolCallContext, struct{}) (string, error) { return "", nil },
		WithEffect(pluginapi.EffectNonIdempotentWrite))
	c := &compiled{def: &AgentDefinition{Tools: []*Tool{own}}, tools: map[string]*Tool{"files__read": own}}
	turn := &pluginapi.TurnContext{
		HostTools: []pluginapi.ToolDefinition{{Name: "files__read", Effect: pluginapi.EffectRead}, {Name: "files__write"}},
		Policies: pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified, Policies: map[string]pluginapi.ToolPolicy{
			"files__delete": {Effect: pluginapi.EffectNonIdempotentWrite},
		}},
	}
	if p := c.policy(turn, "files__read"); p.Effect != pluginapi.EffectRead {
		t.Errorf("files__read policy = %+v, want read", p)
	}
	if p := c.policy(turn, "files__write"); p.Effect != pluginapi.EffectUnclassified {
		t.Errorf("files__write policy = %+v, want the default", p)
	}
	turn.HostTools = append(turn.HostTools, pluginapi.ToolDefinition{Name: "files__delete", Effect: pluginapi.EffectRead})
	if p := c.policy(turn, "files__delete"); p.Effect != pluginapi.EffectNonIdempotentWrite {
		t.Errorf("files__delete policy = %+v, want the configured write", p)
	}
}
