package uistream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/wire"
)

type fakeSession struct {
	calls map[string]wire.ToolCall
	plan  *wire.Plan
}

func (f fakeSession) ToolCall(id string) (wire.ToolCall, bool) {
	c, ok := f.calls[id]
	return c, ok
}

func (f fakeSession) Plan() *wire.Plan { return f.plan }

func ev(typ, turn, exec string, attempt int, payload string) events.Event {
	return events.Event{Type: typ, TurnID: turn, StepExecutionID: exec, Attempt: attempt, Payload: json.RawMessage(payload)}
}

func text(exec string, attempt int, s string) events.Event {
	b, _ := json.Marshal(map[string]string{"text": s})
	return ev("text_delta", "t1", exec, attempt, string(b))
}

func reasoning(exec string, attempt int, s string) events.Event {
	b, _ := json.Marshal(map[string]string{"text": s})
	return ev("reasoning_delta", "t1", exec, attempt, string(b))
}

var (
	started   = ev("turn_started", "t1", "", 0, `{"sequence":1}`)
	usage     = ev("usage_recorded", "t1", "", 1, `{"recorded":{"model_calls":1},"session":{"model_calls":1}}`)
	completed = ev("turn_completed", "t1", "", 1, `{"message_count":2}`)
)

func deferred(id, name string) events.Event {
	return ev("tool_call_deferred", "t1", "t1/"+id, 1, fmt.Sprintf(`{"tool_call_id":%q,"tool_name":%q,"effect":"read","requires_approval":false}`, id, name))
}

func finished(id, name, status string) events.Event {
	return ev("tool_call_finished", "t1", "t1/"+id, 1, fmt.Sprintf(`{"tool_call_id":%q,"tool_name":%q,"status":%q}`, id, name, status))
}

func raisedApproval(id, name string) events.Event {
	return ev("interrupt_raised", "t1", "t1/"+id, 1, fmt.Sprintf(`{"interrupt_id":%q,"tool_call_id":%q,"tool_name":%q,"deadline":"","kind":"approval","question":"","choices":[],"allows_free_text":false}`, id, id, name))
}

// render writes chunks compactly: type, then the fields that matter.
func render(chunks []Chunk) string {
	var b []string
	for _, c := range chunks {
		s := c.Type
		switch {
		case strings.HasSuffix(c.Type, "-delta"):
			s += " " + c.ID + " " + c.Delta
		case strings.HasSuffix(c.Type, "-start") && c.ID != "":
			s += " " + c.ID
		case strings.HasSuffix(c.Type, "-end"):
			s += " " + c.ID
			if c.ProviderMetadata != nil {
				s += " superseded"
			}
		case c.Type == "start":
			s += " " + c.MessageID
		case c.Type == "tool-input-available":
			s += " " + c.ToolCallID + " " + c.ToolName + " " + string(c.Input)
		case c.Type == "tool-output-available":
			s += " " + c.ToolCallID + " " + string(c.Output)
		case c.Type == "tool-output-error":
			s += " " + c.ToolCallID + " " + c.ErrorText
		case c.Type == "tool-output-denied":
			s += " " + c.ToolCallID
		case c.Type == "tool-approval-request":
			s += " " + c.ApprovalID + " " + c.ToolCallID
		case c.Type == "finish":
			s += " " + c.FinishReason
		case c.Type == "error":
			s += " " + c.ErrorText
		case c.Type == "abort":
			s += " " + c.Reason
		case strings.HasPrefix(c.Type, "data-"):
			d, _ := json.Marshal(c.Data)
			s += " " + c.ID + " " + string(d)
		}
		b = append(b, s)
	}
	return strings.Join(b, "\n")
}

func TestTranslate(t *testing.T) {
	sess := fakeSession{calls: map[string]wire.ToolCall{
		"c1": {ToolCallID: "c1", ToolName: "lookup_order", Arguments: `{"order_id":7}`, Status: wire.ToolCallSucceeded, Output: "order 7: shipped"},
		"c2": {ToolCallID: "c2", ToolName: "refund_order", Arguments: `{"order_id":7}`, Status: wire.ToolCallRejected},
		"c3": {ToolCallID: "c3", ToolName: "flaky", Arguments: `not json`, Status: wire.ToolCallFailed, Error: "boom"},
		"c4": {ToolCallID: "c4", ToolName: "write", Arguments: `{}`, Status: wire.ToolCallOutcomeUnknown, Error: "the worker died"},
	}}
	tests := []struct {
		name   string
		opts   Options
		events []events.Event
		want   string
	}{{
		name:   "a text turn",
		events: []events.Event{started, text("m1", 1, "Hel"), text("m1", 1, "lo"), usage, completed},
		want: `start t1
start-step
text-start t1-text-1
text-delta t1-text-1 Hel
text-delta t1-text-1 lo
text-end t1-text-1
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name: "tools, then a second model call in a second step",
		events: []events.Event{started, reasoning("m1", 1, "think"), text("m1", 1, "Looking."), usage,
			deferred("c1", "lookup_order"), finished("c1", "lookup_order", "succeeded"),
			text("m2", 1, "Shipped."), usage, completed},
		want: `start t1
start-step
reasoning-start t1-reasoning-1
reasoning-delta t1-reasoning-1 think
text-start t1-text-2
text-delta t1-text-2 Looking.
reasoning-end t1-reasoning-1
text-end t1-text-2
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
tool-input-available c1 lookup_order {"order_id":7}
tool-output-available c1 "order 7: shipped"
finish-step
start-step
text-start t1-text-3
text-delta t1-text-3 Shipped.
text-end t1-text-3
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "a model call with tool calls only opens its step at its usage",
		events: []events.Event{started, usage, deferred("c1", "lookup_order"), finished("c1", "lookup_order", "succeeded"), usage, completed},
		want: `start t1
start-step
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
tool-input-available c1 lookup_order {"order_id":7}
tool-output-available c1 "order 7: shipped"
finish-step
start-step
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "an approval pauses the stream",
		events: []events.Event{started, usage, deferred("c2", "refund_order"), raisedApproval("c2", "refund_order")},
		want: `start t1
start-step
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
tool-input-available c2 refund_order {"order_id":7}
tool-approval-request c2 c2`,
	}, {
		name: "the continuation after a rejection",
		opts: Options{Turn: "t1", Continuing: true},
		events: []events.Event{ev("interrupt_resolved", "t1", "t1/c2", 1, `{"interrupt_id":"c2","approved":false,"kind":"approval"}`),
			finished("c2", "refund_order", "rejected"), text("m2", 1, "Not refunded."), usage, completed},
		want: `start t1
tool-output-denied c2
finish-step
start-step
text-start t1-text-1
text-delta t1-text-1 Not refunded.
text-end t1-text-1
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "failed and outcome-unknown calls, arguments that are not JSON",
		events: []events.Event{started, usage, deferred("c3", "flaky"), finished("c3", "flaky", "failed"), deferred("c4", "write"), finished("c4", "write", "outcome_unknown")},
		want: `start t1
start-step
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
tool-input-available c3 flaky "not json"
tool-output-error c3 boom
tool-input-available c4 write {}
tool-output-error c4 outcome unknown: the worker died`,
	}, {
		name:   "a retry that repeats the text sends only what the client lacks",
		events: []events.Event{started, text("m1", 1, "Hello "), text("m1", 1, "wor"), text("m1", 2, "Hello "), text("m1", 2, "world"), text("m1", 1, "ld!!"), usage, completed},
		want: `start t1
start-step
text-start t1-text-1
text-delta t1-text-1 Hello 
text-delta t1-text-1 wor
text-delta t1-text-1 ld
text-end t1-text-1
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "v6: a retry that writes other text supersedes the stale part",
		events: []events.Event{started, text("m1", 1, "Hello wor"), text("m1", 2, "Hi "), text("m1", 2, "there"), usage, completed},
		want: `start t1
start-step
text-start t1-text-1
text-delta t1-text-1 Hello wor
text-end t1-text-1 superseded
text-start t1-text-2
text-delta t1-text-2 Hi 
text-delta t1-text-2 there
text-end t1-text-2
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "v7: a retry that writes other text resets the step",
		opts:   Options{V7: true},
		events: []events.Event{started, reasoning("m1", 1, "plan"), text("m1", 1, "Hello wor"), reasoning("m1", 2, "plan"), text("m1", 2, "Hi"), usage, completed},
		want: `start t1
start-step
reasoning-start t1-reasoning-1
reasoning-delta t1-reasoning-1 plan
text-start t1-text-2
text-delta t1-text-2 Hello wor
reset-step
reasoning-start t1-reasoning-3
reasoning-delta t1-reasoning-3 plan
text-start t1-text-4
text-delta t1-text-4 Hi
reasoning-end t1-reasoning-3
text-end t1-text-4
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "a retry that ends shorter than what was sent is replaced at the call's end",
		events: []events.Event{started, text("m1", 1, "Hello wor"), text("m1", 2, "Hello"), usage, completed},
		want: `start t1
start-step
text-start t1-text-1
text-delta t1-text-1 Hello wor
text-end t1-text-1 superseded
text-start t1-text-2
text-delta t1-text-2 Hello
text-end t1-text-2
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name: "a question is a data part, updated when answered",
		events: []events.Event{started, usage, deferred("q1", "ask_user"),
			ev("interrupt_raised", "t1", "t1/q1", 1, `{"interrupt_id":"q1","tool_call_id":"q1","tool_name":"ask_user","deadline":"","kind":"question","question":"Which?","choices":["3","7"],"allows_free_text":false}`),
			ev("interrupt_resolved", "t1", "t1/q1", 1, `{"interrupt_id":"q1","approved":true,"kind":"question","answered":true}`)},
		want: `start t1
start-step
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
tool-input-available q1 ask_user {}
data-dex-question q1 {"interrupt_id":"q1","tool_call_id":"q1","tool_name":"ask_user","question":"Which?","choices":["3","7"],"allows_free_text":false,"status":"pending"}
data-dex-question q1 {"interrupt_id":"q1","tool_call_id":"q1","tool_name":"ask_user","question":"Which?","choices":["3","7"],"allows_free_text":false,"status":"answered"}`,
	}, {
		name:   "a failed turn",
		events: []events.Event{started, text("m1", 1, "Hm"), ev("turn_failed", "t1", "", 1, `{"error":"the model failed"}`)},
		want: `start t1
start-step
text-start t1-text-1
text-delta t1-text-1 Hm
text-end t1-text-1
finish-step
error the model failed
finish error`,
	}, {
		name:   "cancelled and steered turns",
		events: []events.Event{started, ev("turn_cancelled", "t1", "", 0, `{"message_count":1}`), completed},
		want: `start t1
abort turn_cancelled`,
	}, {
		name: "a message sent while a turn runs follows the next turn",
		opts: Options{SkipTurn: "t0"},
		events: []events.Event{ev("text_delta", "t0", "m0", 1, `{"text":"old"}`), ev("turn_completed", "t0", "", 1, `{}`),
			ev("turn_started", "t0", "", 0, `{}`), started, text("m1", 1, "new"), ev("text_delta", "t9", "m9", 1, `{"text":"other"}`), usage, completed},
		want: `start t1
start-step
text-start t1-text-1
text-delta t1-text-1 new
text-end t1-text-1
data-dex-usage usage {"recorded":{"model_calls":1},"session":{"model_calls":1}}
finish-step
finish stop`,
	}, {
		name:   "a plan update carries the tasks",
		events: []events.Event{started, ev("plan_updated", "t1", "", 1, `{"revision":2,"status":"active","task_count":1}`)},
		want: `start t1
data-dex-plan plan {"revision":2,"status":"active","task_count":1,"tasks":[{"content":"refund 7","status":"pending"}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sess
			s.plan = &wire.Plan{Revision: 2, Status: "active", Tasks: []wire.PlanTask{{Content: "refund 7", Status: "pending"}}}
			tr := New(tt.opts, s)
			var got []Chunk
			for _, e := range tt.events {
				got = append(got, tr.Add(e)...)
			}
			if g := render(got); g != tt.want {
				t.Errorf("chunks:\n%s\nwant:\n%s", g, tt.want)
			}
			for _, c := range got {
				if _, err := json.Marshal(c); err != nil {
					t.Errorf("chunk %s does not marshal: %v", c.Type, err)
				}
			}
		})
	}
}

func TestPauseAndPendingApprovals(t *testing.T) {
	tr := New(Options{}, fakeSession{})
	tr.Add(started)
	tr.Add(text("m1", 1, "I will refund."))
	if got := render(tr.Pause()); got != "text-end t1-text-1\nfinish tool-calls" {
		t.Errorf("Pause = %q", got)
	}
	if !tr.Ended() || tr.Add(text("m1", 1, " more")) != nil || tr.Pause() != nil {
		t.Error("the translator goes on after Pause")
	}

	tr = New(Options{}, fakeSession{})
	tr.Add(started)
	tr.Add(raisedApproval("a", "refund_order"))
	tr.Add(raisedApproval("b", "refund_order"))
	if n := len(tr.PendingApprovals()); n != 2 {
		t.Errorf("%d pending approvals, want 2", n)
	}
	tr.Add(ev("interrupt_resolved", "t1", "t1/a", 1, `{"interrupt_id":"a","approved":true,"kind":"approval"}`))
	if got := tr.PendingApprovals(); len(got) != 1 || got[0] != "b" {
		t.Errorf("pending %v, want [b]", got)
	}
	if tr.RequestApproval("b", "b", "refund_order", "") != nil {
		t.Error("an approval was requested twice")
	}
}

func TestContinuingStreamSendsWhatSettledBefore(t *testing.T) {
	calls := []wire.ToolCall{
		{ToolCallID: "c1", ToolName: "lookup_order", Status: wire.ToolCallSucceeded, Output: "ok"},
		{ToolCallID: "c2", ToolName: "refund_order", Status: client_awaiting},
	}
	tr := New(Options{Turn: "t1", Continuing: true}, fakeSession{})
	got := render(tr.Settled(calls))
	if got != "start t1\ntool-output-available c1 \"ok\"" {
		t.Errorf("Settled = %q", got)
	}
	// A continuing stream never creates tool parts the client holds.
	if got := render(tr.Add(finished("c2", "refund_order", "succeeded"))); got != `tool-output-available c2 ""` {
		t.Errorf("output = %q", got)
	}
}

const client_awaiting = wire.ToolCallStatus("awaiting_approval")

// FuzzTranslate feeds event sequences (types, step executions, attempts
// and payloads chosen by the input, any payload bytes) to the translator:
// it never panics, every delta and end names an open part of its kind,
// nothing follows the turn's end, and a v6 stream never gets reset-step.
// (The text a client ends up with is checked by TestTranslate's cases.)
func FuzzTranslate(f *testing.F) {
	f.Add([]byte{0, 1, 1, 'a', 0, 2, 1, 'b', 1, 2, 'a', 3, 0, 0, 7}, false)
	f.Add([]byte{0, 1, 1, 'x', 0, 1, 2, 'y', 2, 1, 1, 'z', 3, 0, 0, 4, 5, 6, 7}, true)
	f.Fuzz(func(t *testing.T, in []byte, v7 bool) {
		tr := New(Options{Turn: "t1", V7: v7}, fakeSession{calls: map[string]wire.ToolCall{}})
		types := []string{"text_delta", "reasoning_delta", "text_delta", "usage_recorded", "tool_call_deferred", "tool_call_finished", "interrupt_raised", "turn_completed"}
		open := map[string]string{} // part ID -> kind
		ended := false
		for i := 0; i+3 < len(in); i += 4 {
			typ := types[int(in[i])%len(types)]
			exec := fmt.Sprintf("m%d", in[i+1]%3)
			attempt := int(in[i+2]%3) + 1
			var payload string
			switch typ {
			case "text_delta", "reasoning_delta":
				payload = fmt.Sprintf(`{"text":%q}`, string(rune('a'+in[i+3]%4)))
			case "tool_call_deferred", "tool_call_finished", "interrupt_raised":
				payload = fmt.Sprintf(`{"tool_call_id":"c%d","interrupt_id":"c%d","tool_name":"x","status":"succeeded","kind":"approval"}`, in[i+3]%2, in[i+3]%2)
			default:
				payload = string(in[i+3 : i+4]) // not JSON: must not matter
			}
			chunks := tr.Add(ev(typ, "t1", exec, attempt, payload))
			if ended && len(chunks) > 0 {
				t.Fatalf("chunks after the end: %s", render(chunks))
			}
			for _, c := range chunks {
				kind, suffix, _ := strings.Cut(c.Type, "-")
				switch {
				case c.Type == "reset-step":
					if !v7 {
						t.Fatal("reset-step to a v6 client")
					}
					for id := range open {
						delete(open, id) // the client dropped the step's parts
					}
				case (kind == "text" || kind == "reasoning") && suffix == "start":
					open[c.ID] = kind
				case (kind == "text" || kind == "reasoning") && (suffix == "delta" || suffix == "end"):
					if open[c.ID] != kind {
						t.Fatalf("%s for part %s, which is not open (%v)", c.Type, c.ID, open)
					}
					if suffix == "end" {
						delete(open, c.ID)
					}
				case c.Type == "finish":
					ended = true
				}
				if _, err := json.Marshal(c); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

func TestApprovalIDCarriesTheDigest(t *testing.T) {
	digest := "v1." + strings.Repeat("A", 43)
	for _, c := range []struct{ interrupt, digest string }{
		{"call_1", digest}, {"call_1", ""}, {"a#b", digest}, {"toolu_01#v1.short", ""}, {"x", "v1.-_"},
	} {
		id := ApprovalID(c.interrupt, c.digest)
		in, d := ParseApprovalID(id)
		wantIn, wantD := c.interrupt, c.digest
		if len(c.digest) != len(digest) {
			// Not a digest's shape: the whole ID is the interrupt's.
			wantIn, wantD = id, ""
		}
		if in != wantIn || d != wantD {
			t.Errorf("ParseApprovalID(%q) = %q, %q; want %q, %q", id, in, d, wantIn, wantD)
		}
	}
	tr := New(Options{}, fakeSession{calls: map[string]wire.ToolCall{}})
	chunks := tr.RequestApproval("c1", "c1", "refund_order", digest)
	last := chunks[len(chunks)-1]
	if last.Type != "tool-approval-request" || last.ApprovalID != "c1#"+digest {
		t.Fatalf("approval request = %+v", last)
	}
}

// TestSubAgentParts: a sub-agent's events in the parent's stream (their
// session ID the child's, their turn IDs the child's own, which may equal
// the parent's) update one data-dex-subagent part and never the parent's
// text or tools.
func TestSubAgentParts(t *testing.T) {
	tr := New(Options{Turn: "t1", SessionID: "p"}, fakeSession{calls: map[string]wire.ToolCall{"d1": {ToolCallID: "d1", ToolName: "delegate_to_returns", Arguments: `{"task":"label 7"}`}}})
	child := func(e events.Event) events.Event { e.SessionID = "p.sub-1"; return e }
	parent := func(e events.Event) events.Event { e.SessionID = "p"; return e }
	var got []Chunk
	for _, e := range []events.Event{
		parent(started),
		parent(deferred("d1", "delegate_to_returns")),
		parent(ev("sub_agent_started", "t1", "t1/d1", 1, `{"tool_call_id":"d1","child_session_id":"p.sub-1","name":"returns","agent":"returns","mode":"wait","task":"label 7"}`)),
		child(started),
		child(text("r/1", 1, "Looking ")),
		child(text("r/1", 1, "it up")),
		child(raisedApproval("c1", "issue_label")),
		child(ev("interrupt_resolved", "t1", "t1/c1", 1, `{"interrupt_id":"c1","approved":true,"rejection_message":"","kind":"approval","answered":false,"cancellation_reason":""}`)),
		child(finished("c1", "issue_label", "succeeded")),
		child(completed),
		parent(ev("sub_agent_finished", "t1", "t1/d1", 1, `{"tool_call_id":"d1","child_session_id":"p.sub-1","outcome":"completed","error":""}`)),
	} {
		got = append(got, tr.Add(e)...)
	}
	var last subAgent
	parts := 0
	for _, c := range got {
		switch c.Type {
		case DataSubAgent:
			parts++
			last = c.Data.(subAgent)
			if c.ID != "subagent-p.sub-1" {
				t.Fatalf("part ID %q", c.ID)
			}
		case "text-delta", "finish", "tool-approval-request":
			t.Fatalf("a child's event became the parent's %s: %+v", c.Type, c)
		}
	}
	// Started, two texts, raised, resolved, the tool's end, finished.
	if parts != 7 {
		t.Errorf("%d sub-agent chunks, want 7: %s", parts, render(got))
	}
	if last.Status != "completed" || last.Text != "Looking it up" || len(last.Tools) != 1 || last.Tools[0].Status != "succeeded" || len(last.Pending) != 0 {
		t.Errorf("last part: %+v", last)
	}
	if tr.Ended() {
		t.Error("the child's turn_completed ended the parent's turn")
	}
}

// settlingSession's records for the batch predate the call's end; read
// again, the call has its output.
type settlingSession struct {
	fakeSession
	settled map[string]wire.ToolCall
	reads   int
}

func (s *settlingSession) SettledToolCall(id string) (wire.ToolCall, bool) {
	s.reads++
	c, ok := s.settled[id]
	return c, ok
}

func TestAFinishedCallsOutputIsReadAgainWhenTheRecordPredatesIt(t *testing.T) {
	s := &settlingSession{
		fakeSession: fakeSession{calls: map[string]wire.ToolCall{"c1": {ToolCallID: "c1", ToolName: "refund", Arguments: `{"id":"7"}`, Status: wire.ToolCallApproved}}},
		settled:     map[string]wire.ToolCall{"c1": {ToolCallID: "c1", ToolName: "refund", Arguments: `{"id":"7"}`, Status: wire.ToolCallSucceeded, Output: "Refunded $62.50"}},
	}
	tr := New(Options{}, s)
	var out []Chunk
	for _, e := range []events.Event{started, deferred("c1", "refund"), finished("c1", "refund", "succeeded")} {
		out = append(out, tr.Add(e)...)
	}
	var got string
	for _, c := range out {
		if c.Type == "tool-output-available" {
			got = string(c.Output)
		}
	}
	if got != `"Refunded $62.50"` || s.reads != 1 {
		t.Fatalf("output %s after %d reads; chunks: %s", got, s.reads, render(out))
	}
}
