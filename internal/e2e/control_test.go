package e2e

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// waitLog waits until the invocation log holds n records of kind and name.
func waitLog(t *testing.T, s *agenttest.Stack, kind, name string, n int) {
	t.Helper()
	if err := agenttest.WaitFor(ctx(t), kind+" "+name+" logged", time.Minute, func() (bool, error) {
		return s.Log().Count(kind, name) >= n, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// waitCompleted waits until the session's workflow completed.
func waitCompleted(t *testing.T, s *agenttest.Stack, id string) {
	t.Helper()
	if err := agenttest.WaitFor(ctx(t), "the workflow completes", time.Minute, func() (bool, error) {
		d, err := s.Client.DescribeWorkflowExecution(ctx(t), id, "")
		if err != nil {
			return false, err
		}
		return d.GetWorkflowExecutionInfo().GetStatus().String() == "Completed", nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCancelTurnStopsTheModelCall: cancel_turn during a model call reaches
// the runner (its call's context ends), the turn ends cancelled with no
// answer, a second cancel is true, and the next message runs a turn.
func TestCancelTurnStopsTheModelCall(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("model-slow")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	id := start(t, s, "modelgate:slow hello")
	reached(t, gate)
	snap := s.WaitForSnapshot("a running turn", id, func(s wire.Snapshot) bool { return s.State != nil && s.State.ActiveTurnID != "" })
	turn := snap.State.ActiveTurnID
	if !snap.State.AcceptsTurnControl {
		t.Errorf("accepts_turn_control = false while a turn runs")
	}
	for range 2 {
		if ok, err := s.Sessions.CancelTurn(ctx(t), id, turn); err != nil || !ok {
			t.Fatalf("cancel_turn(%s) = %v, %v", turn, ok, err)
		}
	}
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, "turn-9"); err != nil || ok {
		t.Errorf("cancel_turn of another turn = %v, %v; want false", ok, err)
	}
	snap = s.WaitForSnapshot("the cancelled turn's end", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if snap.State.ActiveTurnID != "" || snap.State.LastTurnError != "" {
		t.Errorf("after the cancel: %+v", snap.State)
	}
	for _, m := range snap.Messages {
		if m.Role == wire.RoleAssistant {
			t.Errorf("a cancelled model call left an answer: %+v", m)
		}
	}
	waitLog(t, s, "model_cancelled", "test", 1)
	// The fast path ended the call; the Step still ends as the engine's
	// cancel ends it: cancelled, in its first attempt, never retried.
	var steps []agenttest.StepHistoryEntry
	if err := agenttest.WaitFor(ctx(t), "the RunModel Step's end", 30*time.Second, func() (bool, error) {
		var err error
		steps, err = s.StepHistory(id)
		for _, st := range steps {
			if st.StepType == wire.StepRunModel && st.EventType != "completed" {
				return true, err
			}
		}
		return false, err
	}); err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if st.StepType == wire.StepRunModel && st.EventType != "completed" && (st.EventType != "canceled" || st.Attempt != 1) {
			t.Errorf("the cancelled model call's Step ended %s in attempt %d, want canceled in attempt 1", st.EventType, st.Attempt)
		}
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "echo again"); err != nil || !ok {
		t.Fatalf("send after the cancel: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the next answer", id, idleWithAnswer)
	wantAnswer(t, snap, "echo: echo again")
}

// TestSteerRejectsAPendingApproval: a steer while a write waits for
// approval records it rejected (steered) without running it, and the next
// turn starts with the steered text; the model sees the spec's result.
func TestSteerRejectsAPendingApproval(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "call:approve_write:a")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if ok, err := s.Sessions.SteerUserMessage(ctx(t), id, wire.SteerUserMessageRequest{Text: "items"}); err != nil || !ok {
		t.Fatalf("steer: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the steered turn's answer", id, idleWithAnswer)
	if got := lastText(snap); !strings.HasPrefix(got, "items=") || !strings.HasSuffix(got, "|items") {
		t.Errorf("the steered turn's answer = %q; want the model to see the steered text last", got)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 0 {
		t.Errorf("approve_write ran %d times after the steer, want 0", n)
	}
	// The rejected call's result is in the transcript the model saw.
	found := false
	for _, m := range snap.Messages {
		if m.ToolCallID == in.ToolCallID && strings.Contains(m.Text, session.SteeredToolResult) {
			found = true
		}
	}
	stored, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stored {
		if strings.Contains(m.Text, "superseded_by_steered_user_message") || strings.Contains(m.Item, "superseded_by_steered_user_message") {
			found = true
		}
		// The runner built the turn's exact transcript: no note besides it.
		if strings.HasPrefix(m.Text, session.TurnFailureNoteHeader) {
			t.Errorf("a steered turn whose runner built its unfinished-turn messages also stored the note: %q", m.Text)
		}
	}
	if !found {
		t.Errorf("no stored message carries the steered call's result %s", session.SteeredToolResult)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || ok {
		t.Errorf("approving the steered call = %v, %v; want false", ok, err)
	}
}

// TestCancelWhileAToolRunsLetsItFinish: a tool that started runs to its
// end after cancel_turn, even when the worker is killed on the way: the
// retried attempt sees the stop at its started marker and does not run
// the tool again; the turn ends cancelled with no further model call.
func TestCancelWhileAToolRunsLetsItFinish(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("tool-k")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:read_gate:k")
	reached(t, gate)
	snap := s.WaitForSnapshot("a running tool", id, func(s wire.Snapshot) bool { return s.State != nil && s.State.Status == wire.StatusRunningTools })
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, snap.State.ActiveTurnID); err != nil || !ok {
		t.Fatalf("cancel_turn: %v %v", ok, err)
	}
	// Killed between the cancel and the turn's end: the started read's
	// attempt dies with the worker.
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap = s.WaitForSnapshot("the cancelled turn's end", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 1
	})
	if n := s.Log().Count("tool", "read_gate"); n != 1 {
		t.Errorf("read_gate ran %d times, want 1 (the retry must stop at its started marker)", n)
	}
	if n := modelCalls(t, s); n != 1 {
		t.Errorf("model calls = %d, want 1 (a cancelled turn makes no more)", n)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCallTool); n != 0 {
		t.Errorf("CallTool completed %d times, want 0", n)
	}
}

// TestCloseSessionOverHTTP: close finishes the running turn, refuses new
// messages with 409 session_closed, completes the workflow, and the closed
// session stays readable.
func TestCloseSessionOverHTTP(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "")
	const tokenOps = "ops-token-0123456789abcdef"
	cfg += "      - {name: ops, token: " + tokenOps + ", operator: true}\n"
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "call:approve_write:c")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	url := base + "/v1/sessions/" + id
	c := apiClient(t, base, tokenAll)
	if ok, err := c.Close(ctx(t), id); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	var apiErr *httpclient.APIError
	if ok, err := c.SendMessage(ctx(t), id, "more"); !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Code != "session_closed" {
		t.Errorf("a message after close: %v %v; want 409 session_closed", ok, err)
	}
	// An authorization check: raw.
	if code, body := do(t, "POST", url+"/terminate", tokenAll, `{}`); code != 403 {
		t.Errorf("terminate with an app token: %d %s; want 403", code, body)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	waitCompleted(t, s, id)
	// The workflow completed: a message or an answer is still 409
	// session_closed, not 404.
	if ok, err := c.SendMessage(ctx(t), id, "after the end"); !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Code != "session_closed" ||
		apiErr.Message != "session "+id+" was closed: it takes no messages or answers" {
		t.Errorf("a message to the completed session: %v %v; want 409 session_closed", ok, err)
	}
	if code, body := do(t, "POST", url+"/interrupts/"+snap.PendingInterrupts[0].InterruptID, tokenAll, `{"approved":true}`); code != 409 || !strings.Contains(string(body), `"session_closed"`) {
		t.Errorf("an approval to the completed session: %d %s; want 409 session_closed", code, body)
	}
	// An operator token terminates another session at once.
	other := start(t, s, "call:approve_write:t")
	s.WaitForSnapshot("another pending approval", other, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := apiClient(t, base, tokenOps).Terminate(ctx(t), other, "test"); err != nil || !ok {
		t.Errorf("terminate with the operator token: %v %v", ok, err)
	}
	d, err := s.Client.DescribeWorkflowExecution(ctx(t), other, "")
	if err != nil || d.GetWorkflowExecutionInfo().GetStatus().String() != "Terminated" {
		t.Errorf("the terminated session: %v %v", d.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	if ok, err := c.SendMessage(ctx(t), other, "after the end"); !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Message != "session "+other+" was terminated: it takes no messages or answers" {
		t.Errorf("a message to the terminated session: %v %v; want 409 session_closed", ok, err)
	}
	closed, _, err := c.Snapshot(ctx(t), id)
	if err != nil || closed.State == nil || closed.State.Status != wire.StatusClosed ||
		!slices.ContainsFunc(closed.Messages, func(m wire.Message) bool { return strings.Contains(m.Text, "done: approve_write=succeeded") }) {
		t.Errorf("the closed session's snapshot: %+v, %v", closed, err)
	}
}

// TestCancelTurnAbandonsATaskThroughAWorkerKill: cancel_turn abandons a
// started tool task: its polls stop and CancelToolTask asks the runner to
// cancel it. The worker is killed during that Step: the retry asks again
// (twice in all), and the call records one result, outcome_unknown with
// cancellation_reason turn_cancelled.
func TestCancelTurnAbandonsATaskThroughAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("taskcancel-box")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:labeler:box")
	snap := s.WaitForSnapshot("a waiting task", id, func(s wire.Snapshot) bool {
		c := findCall(s, "labeler")
		return c != nil && c.Status == wire.ToolCallWaitingForTask
	})
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, snap.State.ActiveTurnID); err != nil || !ok {
		t.Fatalf("cancel_turn: %v %v", ok, err)
	}
	reached(t, gate)
	waitingIn(t, s, id, wire.StepCancelToolTask)
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap = s.WaitForSnapshot("the cancelled turn's end", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 1
	})
	if n := s.Log().Count("task_cancel", "job-box"); n != 2 {
		t.Errorf("the runner's cancel ran %d times, want 2 (the killed attempt and its retry)", n)
	}
	polls := s.Log().Count("poll", "job-box")
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCancelToolTask); n != 1 {
		t.Errorf("CancelToolTask completed %d times, want 1", n)
	}
	stored, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, m := range stored {
		if m.Role == pluginapi.RoleTool && m.ToolName == "labeler" {
			results++
			if m.ToolStatus != "" && m.ToolStatus != pluginapi.ToolCallOutcomeUnknown {
				t.Errorf("the task's call: %+v; want outcome_unknown", m)
			}
		}
	}
	if results > 1 {
		t.Errorf("the task's call has %d results, want at most one", results)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "echo after"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	s.WaitForSnapshot("the next answer", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && lastText(s) == "echo: echo after" })
	if n := s.Log().Count("poll", "job-box"); n != polls {
		t.Errorf("the abandoned task was polled %d more times", n-polls)
	}
}

// TestRecordControlHistory runs a steered turn, a cancelled model call, an
// abandoned task and close_session, and records the history as
// control_turns.json for the replay test of internal/session with
// -update-histories.
func TestRecordControlHistory(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("model-h")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	id := start(t, s, "call:approve_write:h")
	s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "echo queued"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap := s.WaitForSnapshot("a queued message", id, func(s wire.Snapshot) bool { return len(s.QueuedMessages) == 1 })
	if ok, err := s.Sessions.SteerUserMessage(ctx(t), id, wire.SteerUserMessageRequest{MessageID: snap.QueuedMessages[0].MessageID}); err != nil || !ok {
		t.Fatalf("steer: %v %v", ok, err)
	}
	s.WaitForSnapshot("the steered turn's answer", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && lastText(s) == "echo: echo queued" })
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "modelgate:h cancel me"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	reached(t, gate)
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, "turn-3"); err != nil || !ok {
		t.Fatalf("cancel the model call: %v %v", ok, err)
	}
	s.WaitForSnapshot("the cancelled turn", id, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 3
	})
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "call:labeler:h"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	s.WaitForSnapshot("a waiting task", id, func(s wire.Snapshot) bool {
		c := findCall(s, "labeler")
		return c != nil && c.Status == wire.ToolCallWaitingForTask
	})
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, "turn-4"); err != nil || !ok {
		t.Fatalf("cancel the task: %v %v", ok, err)
	}
	s.WaitForSnapshot("the abandoned task's turn", id, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 4
	})
	if ok, err := s.Sessions.CloseSession(ctx(t), id); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	waitCompleted(t, s, id)
	if *updateHistories {
		recordHistory(t, s, id, "control_turns.json")
	}
}

// TestAgentsSayWhatTheyOffer: GET /v1/agents tells a UI whether an
// agent's plan mode is on and which built-in tools its sessions offer.
func TestAgentsSayWhatTheyOffer(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "    plan_mode_enabled: true\n")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	// httpclient.Agent has no plan_mode_enabled nor built_in_tools: raw.
	code, body := do(t, "GET", base+"/v1/agents", tokenAll, "")
	if code != 200 || !strings.Contains(string(body), `"plan_mode_enabled":true`) || !strings.Contains(string(body), `"built_in_tools":["ask_user","durable_wait","write_todos"]`) {
		t.Errorf("GET /v1/agents: %d %s", code, body)
	}
}
