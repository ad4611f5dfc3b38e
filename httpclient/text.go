package httpclient

import (
	"strings"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// TurnText assembles a turn's streamed text (text_delta events) by the
// attempt rule: a Step that is retried streams its text again under a
// higher attempt of the same step_execution_id, and only the highest
// attempt's text counts, so a retried model call never shows doubled
// text. Feed it every event of the turn, in order; the zero value is
// ready.
type TurnText struct {
	order []string // step executions, first seen first
	steps map[string]*attemptText
}

type attemptText struct {
	attempt int
	b       strings.Builder
}

// Add takes one event; events other than text_delta are ignored, and so
// is the text of an attempt lower than one already seen.
func (t *TurnText) Add(e Event) {
	if e.Type != wire.EventTextDelta {
		return
	}
	var p struct {
		Text string `json:"text"`
	}
	if e.Payload.Decode(&p) != nil {
		return
	}
	if t.steps == nil {
		t.steps = map[string]*attemptText{}
	}
	st := t.steps[e.StepExecutionID]
	switch {
	case st == nil:
		st = &attemptText{attempt: e.Attempt}
		t.steps[e.StepExecutionID] = st
		t.order = append(t.order, e.StepExecutionID)
	case e.Attempt < st.attempt:
		return
	case e.Attempt > st.attempt:
		st.attempt = e.Attempt
		st.b.Reset()
	}
	st.b.WriteString(p.Text)
}

// String is the text so far: each model call's text, in the order the
// calls began.
func (t *TurnText) String() string {
	var b strings.Builder
	for _, id := range t.order {
		b.WriteString(t.steps[id].b.String())
	}
	return b.String()
}
