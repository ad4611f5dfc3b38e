package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/internal/session"
)

// payloadOf decodes an SSE frame's payload (JSON text).
func payloadOf(t *testing.T, f sseFrame) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(fmt.Sprint(f.data["payload"])), &p); err != nil {
		t.Fatalf("payload of %v: %v", f.data["type"], err)
	}
	return p
}

func keysOf(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// eventsOf reads a session's events from the oldest the worker holds
// until stop.
func eventsOf(t *testing.T, base, id string, stop func(sseFrame) bool) []sseFrame {
	t.Helper()
	return readSSE(t, ctx(t), base+"/v1/sessions/"+id+"/events", tokenAll, "", stop)
}

// apiClient is a Go client of the API at base with token.
func apiClient(t *testing.T, base, token string) *httpclient.Client {
	t.Helper()
	c, err := httpclient.New(base, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sessionEvents reads a session's events with the Go client, from the
// oldest the worker holds, until stop.
func sessionEvents(t *testing.T, c *httpclient.Client, id string, stop func(httpclient.Event) bool) []httpclient.Event {
	t.Helper()
	es, err := c.Events(ctx(t), id, "", "")
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	defer es.Close()
	var events []httpclient.Event
	for {
		d, err := es.Next()
		if err != nil {
			t.Fatalf("stream ended: %v (after %d events)", err, len(events))
		}
		events = append(events, d.Event)
		if stop(d.Event) {
			return events
		}
	}
}

// eventPayload decodes an event's payload.
func eventPayload(t *testing.T, e httpclient.Event) map[string]any {
	t.Helper()
	var p map[string]any
	if err := e.Payload.Decode(&p); err != nil {
		t.Fatalf("payload of %v: %v", e.Type, err)
	}
	return p
}

// findEvents returns the events of type typ whose payload satisfies where
// (nil: all of them).
func findEvents(t *testing.T, events []httpclient.Event, typ string, where func(map[string]any) bool) []httpclient.Event {
	t.Helper()
	var out []httpclient.Event
	for _, e := range events {
		if e.Type == typ && (where == nil || where(eventPayload(t, e))) {
			out = append(out, e)
		}
	}
	return out
}

// eventsString shows events in a failure message.
func eventsString(events []httpclient.Event) string {
	var parts []string
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("{%s attempt %d %s}", e.Type, e.Attempt, e.Payload))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func find(frames []sseFrame, typ string, where func(map[string]any) bool, t *testing.T) []sseFrame {
	var out []sseFrame
	for _, f := range frames {
		if f.data["type"] == typ && (where == nil || where(payloadOf(t, f))) {
			out = append(out, f)
		}
	}
	return out
}

// TestEventsCarryTheirStepsAttempt: a read tool is killed mid-call and
// runs again on a second worker. Its tool_call_finished carries attempt 2,
// the attempt the engine recorded for the Step; the events the session
// writes for a waiting Step (an approval that is rejected) carry attempt 1,
// with every field of the spec's interrupt_resolved.
func TestEventsCarryTheirStepsAttempt(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	gate := s.Gate("tool-c")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	id := start(t, s, "call:read_gate:c call:approve_write:r")
	reached(t, gate)
	s.KillWorkers()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the read's second attempt and the pending approval", id, func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && len(s.ToolCalls) == 2 && s.ToolCalls[0].Status == wire.ToolCallSucceeded
	})
	c := apiClient(t, base, tokenAll)
	if ok, err := c.ResolveInterrupt(ctx(t), id, snap.PendingInterrupts[0].InterruptID, httpclient.Resolution{Approved: false, RejectionMessage: "no"}); err != nil || !ok {
		t.Fatalf("reject: %v %v", ok, err)
	}
	events := sessionEvents(t, c, id, func(e httpclient.Event) bool { return e.Type == wire.EventTurnCompleted })

	for _, e := range events {
		if e.Attempt < 1 {
			t.Errorf("%v has attempt %v; every event carries its Step's attempt (>= 1)", e.Type, e.Attempt)
		}
	}
	read := findEvents(t, events, wire.EventToolCallFinished, func(p map[string]any) bool { return p["tool_name"] == "read_gate" })
	if len(read) != 1 || read[0].Attempt != 2 {
		t.Errorf("read_gate tool_call_finished = %s; want one, with attempt 2", eventsString(read))
	}
	// The second attempt said first that the turn recovers, and that the
	// killed attempt had reached the tool.
	recovering := findEvents(t, events, wire.EventTurnRecovering, nil)
	if len(recovering) != 1 || recovering[0].Attempt != 2 {
		t.Fatalf("turn_recovering = %s; want one, of attempt 2", eventsString(recovering))
	}
	wantRecovering := map[string]any{"step": "CallTool", "attempt": float64(2), "tool_call_id": eventPayload(t, read[0])["tool_call_id"], "tool_name": "read_gate", "previous_attempt_reached_tool": true}
	if diff := cmp.Diff(wantRecovering, eventPayload(t, recovering[0])); diff != "" {
		t.Errorf("turn_recovering payload (-want +got):\n%s", diff)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	var got []agenttest.StepHistoryEntry
	for _, e := range h {
		if e.StepType == wire.StepCallTool && e.EventType == "completed" {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Errorf("CallTool in the history = %+v; want one completed at attempt 2", got)
	}

	resolved := findEvents(t, events, wire.EventInterruptResolved, nil)
	if len(resolved) != 1 {
		t.Fatalf("interrupt_resolved events: %d, want 1", len(resolved))
	}
	p := eventPayload(t, resolved[0])
	want := map[string]any{"interrupt_id": snap.PendingInterrupts[0].InterruptID, "approved": false, "rejection_message": "no",
		"kind": "approval", "answered": false, "cancellation_reason": "",
		// The API answered for the token named all.
		"resolved_via": "http", "resolved_by": "all"}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("interrupt_resolved payload = %v\nwant %v", p, want)
	}
	if resolved[0].Attempt != 1 {
		t.Errorf("interrupt_resolved attempt = %v, want 1 (a waiting Step)", resolved[0].Attempt)
	}
	rejected := findEvents(t, events, wire.EventToolCallFinished, func(p map[string]any) bool { return p["tool_name"] == "approve_write" })
	if len(rejected) != 1 || eventPayload(t, rejected[0])["status"] != "rejected" {
		t.Errorf("approve_write tool_call_finished = %s; want one, rejected", eventsString(rejected))
	}
	if started := findEvents(t, events, wire.EventToolCallStarted, func(p map[string]any) bool { return p["tool_name"] == "approve_write" }); len(started) != 0 {
		t.Errorf("tool_call_started for a call that never ran: %s", eventsString(started))
	}
}

// TestAPassedDeadlineResolvesLikeTheSpec: interrupt_raised carries every
// field of the spec (empty ones as empty values), and a passed deadline
// resolves with approved false, the deadline text, no cancellation reason,
// and one tool_call_finished.
func TestAPassedDeadlineResolvesLikeTheSpec(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	cfg := testConfig(plugin) + fmt.Sprintf(`
  - name: hurried
    flow_type: HurriedAgent
    runner: testrunner
    runner_config: {state_dir: "{{DIR}}"}
    tool_policies:
      approve_write: {effect: non_idempotent_write, requires_approval: true}
    interrupt_deadline: 1s
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
`, port, tokenAll)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: "HurriedAgent", InitialMessage: "call:approve_write:late"})
	if err != nil {
		t.Fatal(err)
	}
	events := sessionEvents(t, apiClient(t, base, tokenAll), id, func(e httpclient.Event) bool { return e.Type == wire.EventTurnCompleted })
	raised := findEvents(t, events, wire.EventInterruptRaised, nil)
	if len(raised) != 1 {
		t.Fatalf("interrupt_raised events: %d", len(raised))
	}
	rp := eventPayload(t, raised[0])
	if diff := fmt.Sprint(keysOf(rp)); diff != "[allows_free_text choices deadline interrupt_id kind question tool_call_id tool_name]" {
		t.Errorf("interrupt_raised fields = %s", diff)
	}
	if rp["deadline"] == "" || rp["question"] != "" || fmt.Sprint(rp["choices"]) != "[]" || rp["allows_free_text"] != false || rp["kind"] != "approval" {
		t.Errorf("interrupt_raised payload = %v", rp)
	}
	resolved := findEvents(t, events, wire.EventInterruptResolved, nil)
	if len(resolved) != 1 {
		t.Fatalf("interrupt_resolved events: %d", len(resolved))
	}
	p := eventPayload(t, resolved[0])
	if p["approved"] != false || p["rejection_message"] != session.ApprovalDeadlinePassed || p["cancellation_reason"] != "" || p["answered"] != false {
		t.Errorf("interrupt_resolved after the deadline = %v", p)
	}
	if finished := findEvents(t, events, wire.EventToolCallFinished, nil); len(finished) != 1 || eventPayload(t, finished[0])["status"] != "rejected" {
		t.Errorf("tool_call_finished = %s; want one, rejected", eventsString(finished))
	}
}

// TestHTTPAnswersFalseWhereTheSpecDoes: the HTTP API passes the updates'
// false answers on as 200 with false, not as errors, and pages messages.
func TestHTTPAnswersFalseWhereTheSpecDoes(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	id := start(t, s, "hello")
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	sess := base + "/v1/sessions/" + id
	// A long text is not refused here: the HTTP API sends it by reference
	// (TestLargeContentTravelsByReference). Sent raw: the check is of the
	// wire form, exactly 200 with the false body, which the client hides.
	for _, c := range []struct{ url, body, want string }{
		{sess + "/messages", `{"text":"  "}`, `{"accepted":false}`},
		{sess + "/interrupts/no-such-interrupt", `{"approved":true}`, `{"reason":"the session has no interrupt no-such-interrupt (a pending one's ID is in its snapshot)","resolved":false}`},
	} {
		code, body := do(t, "POST", c.url, tokenAll, c.body)
		if code != 200 || strings.TrimSpace(string(body)) != c.want {
			t.Errorf("POST %s: %d %s, want 200 %s", strings.TrimPrefix(c.url, sess), code, body, c.want)
		}
	}
	if page, err := apiClient(t, base, tokenAll).Messages(ctx(t), id, 0, 0); err != nil || len(page.Messages) != 2 {
		t.Errorf("GET messages without a limit: %+v, %v; want the whole (2-message) transcript", page, err)
	}
}
