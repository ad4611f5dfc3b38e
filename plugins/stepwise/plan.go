package stepwise

import (
	"fmt"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// PlanNoteHeader starts the note that shows the model the session's plan
// (write_todos) in every model call.
const PlanNoteHeader = "[Dex] The current plan (revision %d, %s):"

// PlanNoteFooter ends the plan note of a plan that is not completed.
const PlanNoteFooter = "Keep the task statuses current with write_todos."

// PlanningNote is the note of a planning turn (plan mode).
const PlanningNote = "[Dex] Plan mode: do not act yet. Write the plan with write_todos (the only tool you have now); " +
	"the user reviews it and runs it. Ask in text if you need to know more first."

// PlanNote renders a plan for the model: one line per task with its
// status. A cleared plan has no note.
func PlanNote(p *pluginapi.Plan) string {
	return planNote(p, "")
}

// planNote is the note of a plan in an interaction mode: a planning turn
// gets the planning note, with the draft if any.
func planNote(p *pluginapi.Plan, mode string) string {
	if mode == "planning" {
		if n := planNote(p, ""); n != "" {
			return PlanningNote + "\n" + n
		}
		return PlanningNote
	}
	if p == nil || p.Status == "cleared" || len(p.Tasks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, PlanNoteHeader, p.Revision, p.Status)
	for i, t := range p.Tasks {
		fmt.Fprintf(&b, "\n%d. [%s] %s", i+1, t.Status, t.Content)
	}
	if p.Status != "completed" {
		b.WriteString("\n" + PlanNoteFooter)
	}
	return b.String()
}

// withPlan puts the plan note, if any, before the turn's items: before the
// last user text (the turn's message), so the model always sees the latest
// plan and the stable history before it stays a cacheable prefix.
func withPlan(turn *pluginapi.TurnContext, items []ModelItem) []ModelItem {
	note := planNote(turn.Plan, turn.InteractionMode)
	if note == "" {
		return items
	}
	at := 0
	for i, it := range items {
		if it.Kind == ItemUserText {
			at = i
		}
	}
	out := make([]ModelItem, 0, len(items)+1)
	out = append(out, items[:at]...)
	out = append(out, ModelItem{Kind: ItemUserText, Text: note})
	return append(out, items[at:]...)
}
