package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
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
	snap := s.WaitForSnapshot("the read's second attempt and the pending approval", id, func(s client.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && len(s.ToolCalls) == 2 && s.ToolCalls[0].Status == pluginapi.ToolCallSucceeded
	})
	code, body := do(t, "POST", base+"/v1/sessions/"+id+"/interrupts/"+snap.PendingInterrupts[0].InterruptID, tokenAll, `{"approved":false,"rejection_message":"no"}`)
	if code != 200 {
		t.Fatalf("reject: %d %s", code, body)
	}
	frames := eventsOf(t, base, id, func(f sseFrame) bool { return f.data["type"] == "turn_completed" })

	for _, f := range frames {
		if a, _ := f.data["attempt"].(float64); a < 1 {
			t.Errorf("%v has attempt %v; every event carries its Step's attempt (>= 1)", f.data["type"], f.data["attempt"])
		}
	}
	read := find(frames, "tool_call_finished", func(p map[string]any) bool { return p["tool_name"] == "read_gate" }, t)
	if len(read) != 1 || read[0].data["attempt"] != float64(2) {
		t.Errorf("read_gate tool_call_finished = %v; want one, with attempt 2", read)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	var got []agenttest.StepHistoryEntry
	for _, e := range h {
		if e.StepType == client.StepCallTool && e.EventType == "completed" {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Errorf("CallTool in the history = %+v; want one completed at attempt 2", got)
	}

	resolved := find(frames, "interrupt_resolved", nil, t)
	if len(resolved) != 1 {
		t.Fatalf("interrupt_resolved events: %d, want 1", len(resolved))
	}
	p := payloadOf(t, resolved[0])
	want := map[string]any{"interrupt_id": snap.PendingInterrupts[0].InterruptID, "approved": false, "rejection_message": "no",
		"kind": "approval", "answered": false, "cancellation_reason": ""}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("interrupt_resolved payload = %v\nwant %v", p, want)
	}
	if resolved[0].data["attempt"] != float64(1) {
		t.Errorf("interrupt_resolved attempt = %v, want 1 (a waiting Step)", resolved[0].data["attempt"])
	}
	rejected := find(frames, "tool_call_finished", func(p map[string]any) bool { return p["tool_name"] == "approve_write" }, t)
	if len(rejected) != 1 || payloadOf(t, rejected[0])["status"] != "rejected" {
		t.Errorf("approve_write tool_call_finished = %v; want one, rejected", rejected)
	}
	if started := find(frames, "tool_call_started", func(p map[string]any) bool { return p["tool_name"] == "approve_write" }, t); len(started) != 0 {
		t.Errorf("tool_call_started for a call that never ran: %v", started)
	}
}

// TestAPassedDeadlineResolvesLikeTheSpec: interrupt_raised carries every
// field of the spec (empty ones as empty values), and a passed deadline
// resolves with approved false, the deadline text, no cancellation reason,
// and one tool_call_finished.
func TestAPassedDeadlineResolvesLikeTheSpec(t *testing.T) {
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
	frames := eventsOf(t, base, id, func(f sseFrame) bool { return f.data["type"] == "turn_completed" })
	raised := find(frames, "interrupt_raised", nil, t)
	if len(raised) != 1 {
		t.Fatalf("interrupt_raised events: %d", len(raised))
	}
	rp := payloadOf(t, raised[0])
	if diff := fmt.Sprint(keysOf(rp)); diff != "[allows_free_text choices deadline interrupt_id kind question tool_call_id tool_name]" {
		t.Errorf("interrupt_raised fields = %s", diff)
	}
	if rp["deadline"] == "" || rp["question"] != "" || fmt.Sprint(rp["choices"]) != "[]" || rp["allows_free_text"] != false || rp["kind"] != "approval" {
		t.Errorf("interrupt_raised payload = %v", rp)
	}
	resolved := find(frames, "interrupt_resolved", nil, t)
	if len(resolved) != 1 {
		t.Fatalf("interrupt_resolved events: %d", len(resolved))
	}
	p := payloadOf(t, resolved[0])
	if p["approved"] != false || p["rejection_message"] != session.ApprovalDeadlinePassed || p["cancellation_reason"] != "" || p["answered"] != false {
		t.Errorf("interrupt_resolved after the deadline = %v", p)
	}
	if finished := find(frames, "tool_call_finished", nil, t); len(finished) != 1 || payloadOf(t, finished[0])["status"] != "rejected" {
		t.Errorf("tool_call_finished = %v; want one, rejected", finished)
	}
}

// TestHTTPAnswersFalseWhereTheSpecDoes: the HTTP API passes the updates'
// false answers on as 200 with false, not as errors, and pages messages.
func TestHTTPAnswersFalseWhereTheSpecDoes(t *testing.T) {
	s, base := newHTTPStack(t)
	id := start(t, s, "hello")
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	sess := base + "/v1/sessions/" + id
	// A long text is not refused here: the HTTP API sends it by reference
	// (TestLargeContentTravelsByReference).
	for _, c := range []struct{ url, body, want string }{
		{sess + "/messages", `{"text":"  "}`, `{"accepted":false}`},
		{sess + "/interrupts/no-such-interrupt", `{"approved":true}`, `{"resolved":false}`},
	} {
		code, body := do(t, "POST", c.url, tokenAll, c.body)
		if code != 200 || strings.TrimSpace(string(body)) != c.want {
			t.Errorf("POST %s: %d %s, want 200 %s", strings.TrimPrefix(c.url, sess), code, body, c.want)
		}
	}
	code, body := do(t, "GET", sess+"/messages", tokenAll, "")
	var page client.MessagesPage
	if err := json.Unmarshal(body, &page); code != 200 || err != nil || len(page.Messages) != 2 {
		t.Errorf("GET messages without a limit: %d %s; want the whole (2-message) transcript", code, body)
	}
}
