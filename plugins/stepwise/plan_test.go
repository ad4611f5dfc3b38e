package stepwise

import (
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
