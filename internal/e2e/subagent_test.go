package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// subAgentConfig is the test config with a second agent, helper, that the
// test agent may delegate to.
func subAgentConfig(plugin string) string {
	cfg := testConfig(plugin)
	cfg = strings.Replace(cfg, "    default_tool_effect: unclassified\n",
		"    default_tool_effect: unclassified\n    sub_agents:\n      - {agent: helper, description: Runs the task it is given., max_turns: 4}\n", 1)
	// helper is the test agent again, under another name and flow type.
	i := strings.Index(cfg, "  - name: test\n")
	helper := strings.Replace(cfg[i:], "  - name: test\n", "  - name: helper\n", 1)
	helper = strings.Replace(helper, "flow_type: "+flowType, "flow_type: "+flowType+"Helper", 1)
	helper = strings.Replace(helper, "    sub_agents:\n      - {agent: helper, description: Runs the task it is given., max_turns: 4}\n", "", 1)
	return cfg + helper
}

// newBackgroundStack is newSubAgentStack with helper in background mode.
func newBackgroundStack(t *testing.T) *agenttest.Stack {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	return agenttest.NewStack(t, strings.Replace(subAgentConfig(plugin), "max_turns: 4}", "max_turns: 4, mode: background}", 1))
}

func newSubAgentStack(t *testing.T) *agenttest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	return agenttest.NewStack(t, subAgentConfig(plugin))
}

// delegate is the scripted message that delegates task to helper.
func delegate(task string) string {
	b, _ := json.Marshal(map[string]string{"task": task})
	return "args:delegate_to_helper:" + string(b)
}

// TestSubAgentApprovalThroughParent delegates a task whose write needs an
// approval: the parent lists the child's approval with the child's session
// ID and path, the approval given through the parent reaches the child,
// the write runs once, the child's answer is the call's result, and the
// child closes.
func TestSubAgentApprovalThroughParent(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:refund-9"))
	child := parent + ".sub-1"
	snap := s.WaitForSnapshot("the child's approval in the parent", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if in.SessionID != child || strings.Join(in.Path, ">") != parent+">"+child || in.Kind != wire.InterruptKindApproval || in.ToolName != "approve_write" {
		t.Fatalf("the parent's pending interrupt: %+v", in)
	}
	if len(snap.ToolCalls) != 1 || snap.ToolCalls[0].Status != wire.ToolCallWaitingForSubAgent || snap.ToolCalls[0].ChildSessionID != child {
		t.Fatalf("the delegating call: %+v", snap.ToolCalls)
	}
	if len(snap.SubAgents) != 1 || snap.SubAgents[0].SessionID != child || snap.SubAgents[0].Name != "helper" {
		t.Fatalf("the parent's sub-agents: %+v", snap.SubAgents)
	}
	cs, err := s.Sessions.GetAgentSnapshot(ctx(t), child)
	if err != nil {
		t.Fatal(err)
	}
	if cs.SubAgent == nil || cs.SubAgent.ParentSessionID != parent || cs.Agent != "helper" || len(cs.Messages) == 0 || cs.Messages[0].Text != "call:approve_write:refund-9" {
		t.Fatalf("the child: %+v %+v", cs.SubAgent, cs.Messages)
	}
	// Resolving through the parent with an ID the parent does not hold
	// itself reaches the child; the same with the child named.
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest}); err != nil || !ok {
		t.Fatalf("approve through the parent: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the parent's answer", parent, idleWithAnswer)
	want := `done: delegate_to_helper=succeeded:{"status":"completed","session_id":"` + child + `","answer":"done: approve_write=succeeded:wrote refund-9"}`
	wantAnswer(t, snap, want)
	if len(snap.PendingInterrupts) != 0 || len(snap.SubAgents) != 0 {
		t.Fatalf("the parent still lists its child: %+v %+v", snap.PendingInterrupts, snap.SubAgents)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Fatalf("approve_write ran %d times", n)
	}
	waitClosed(t, s, child, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	// A second resolve of the same approval is false everywhere.
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, SessionID: child}); err != nil || ok {
		t.Fatalf("a second approve: %v %v", ok, err)
	}
}

// TestSubAgentCancelledWithParentTurn cancels the parent's turn while its
// child waits for an approval: the child's turn is cancelled with the
// reason parent_cancelled, its write never runs, and both sessions end
// their turns.
func TestSubAgentCancelledWithParentTurn(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:refund-10"))
	child := parent + ".sub-1"
	snap := s.WaitForSnapshot("the child's approval in the parent", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.CancelTurn(ctx(t), parent, snap.State.ActiveTurnID); err != nil || !ok {
		t.Fatalf("cancel the parent's turn: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the parent's cancelled turn", parent, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && s.State.ActiveTurnID == ""
	})
	if len(snap.PendingInterrupts) != 0 {
		t.Fatalf("the parent still lists the child's approval: %+v", snap.PendingInterrupts)
	}
	waitClosed(t, s, child, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	if n := s.Log().Count("tool", "approve_write"); n != 0 {
		t.Fatalf("approve_write ran %d times after the parent cancelled", n)
	}
	// The child's turn ended cancelled: its answer to the parent came too
	// late to matter, and it closed itself.
	cs, err := s.Sessions.GetAgentSnapshot(ctx(t), child)
	if err != nil {
		t.Fatal(err)
	}
	if cs.State == nil || !cs.State.Closed || cs.State.TurnCount != 1 {
		t.Fatalf("the child after the cancel: %+v", cs.State)
	}
}

// TestSubAgentEndsWithTerminatedParent terminates the parent while its
// child waits: the explicit parent-close policy cancels the child, so it
// never outlives its parent.
func TestSubAgentEndsWithTerminatedParent(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:refund-11"))
	child := parent + ".sub-1"
	s.WaitForSnapshot("the child's approval in the parent", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if err := s.Client.TerminateWorkflow(ctx(t), parent, "", "test"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, s, child, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)
	if n := s.Log().Count("tool", "approve_write"); n != 0 {
		t.Fatalf("approve_write ran %d times", n)
	}
}

// waitClosed waits until a session's workflow closed with status.
func waitClosed(t *testing.T, s *agenttest.Stack, id string, status enumspb.WorkflowExecutionStatus) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := s.Client.DescribeWorkflowExecution(ctx(t), id, "")
		if err == nil && d.GetWorkflowExecutionInfo().GetStatus() == status {
			return
		}
		if time.Now().After(deadline) {
			got := "?"
			if err == nil {
				got = d.GetWorkflowExecutionInfo().GetStatus().String()
			}
			t.Fatalf("session %s: status %s, want %s (%v)", id, got, status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSubAgentSurvivesAWorkerKill SIGKILLs the worker while the child
// waits for its approval: a new worker finds both sessions where they
// were, the approval through the parent reaches the child, and the write
// and every model call ran once.
func TestSubAgentSurvivesAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	w := s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:k1"))
	snap := s.WaitForSnapshot("the child's approval in the parent", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	w.Kill()
	s.StartWorker()
	in := snap.PendingInterrupts[0]
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest, SessionID: in.SessionID}); err != nil || !ok {
		t.Fatalf("approve through the parent after the kill: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the parent's answer", parent, idleWithAnswer)
	if !strings.Contains(lastText(snap), `"answer":"done: approve_write=succeeded:wrote k1"`) {
		t.Fatalf("answer: %q", lastText(snap))
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
	if p, c := s.Log().Count("model", "test"), s.Log().Count("model", "helper"); p != 2 || c != 2 {
		t.Errorf("model calls: parent %d, child %d; want 2 and 2", p, c)
	}
}

// TestSubAgentRunnerKilledMidWrite SIGKILLs the runner while the child's
// non-idempotent write runs: the write is not run again, the child's
// call is outcome_unknown and its answer says so to the parent.
func TestSubAgentRunnerKilledMidWrite(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	gate := s.Gate("tool-kw")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	parent := start(t, s, delegate("call:write_gate:kw"))
	pid := reached(t, gate)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the runner %d: %v", pid, err)
	}
	_ = gate.Release()
	snap := s.WaitForSnapshot("the parent's answer", parent, idleWithAnswer)
	if !strings.Contains(lastText(snap), "write_gate=outcome_unknown") {
		t.Fatalf("answer: %q", lastText(snap))
	}
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("write_gate ran %d times, want 1", n)
	}
}

// TestParentCancelledWhileChildWrites cancels the parent's turn while the
// child's write runs: the parent's turn ends at once, the write runs to
// its end once (its effect class: a started write is never abandoned),
// and the child's turn is cancelled after it.
func TestParentCancelledWhileChildWrites(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	gate := s.Gate("tool-cw")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	parent := start(t, s, delegate("call:write_gate:cw"))
	child := parent + ".sub-1"
	reached(t, gate)
	if ok, err := s.Sessions.CancelTurn(ctx(t), parent, "turn-1"); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	s.WaitForSnapshot("the parent's cancelled turn", parent, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.ActiveTurnID == "" && s.State.TurnCount == 1
	})
	if cs, err := s.Sessions.GetAgentSnapshot(ctx(t), child); err != nil || cs.State == nil || cs.State.ActiveTurnID != "turn-1" {
		t.Fatalf("the child stopped before its started write ended: %+v %v", cs.State, err)
	}
	_ = gate.Release()
	waitClosed(t, s, child, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("write_gate ran %d times, want 1", n)
	}
	msgs, err := s.StoredMessages(child)
	if err != nil {
		t.Fatal(err)
	}
	// The write's result is in the child's transcript; no model call came
	// after it.
	found := false
	for _, m := range msgs {
		found = found || m.ToolName == "write_gate" && m.ToolStatus == "succeeded"
	}
	if !found {
		t.Errorf("the child's transcript lacks the write's result: %+v", msgs)
	}
	if n := s.Log().Count("model", "helper"); n != 1 {
		t.Errorf("the child's model ran %d times, want 1", n)
	}
}

// TestLongSubAgentAnswerIsWholeAndHistoryStaysSmall: a child's answer
// longer than a preview reaches the parent's model whole (read from the
// message store), and no payload of the parent's history holds it.
func TestLongSubAgentAnswerIsWholeAndHistoryStaysSmall(t *testing.T) {
	t.Parallel()
	s := newSubAgentStack(t)
	s.StartWorker()
	parent := start(t, s, delegate("call:big:20000"))
	snap := s.WaitForSnapshot("the parent's answer", parent, idleWithAnswer)
	msgs, err := s.StoredMessages(parent)
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1].Text
	if n := strings.Count(last, "x"); n < 20000 || !strings.Contains(last, `"session_id":"`+parent+`.sub-1"`) {
		t.Fatalf("the parent's model saw %d x of the child's answer; answer starts %q", n, last[:min(200, len(last))])
	}
	_ = snap
	hist := s.Client.GetWorkflowHistory(ctx(t), parent, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	largest := 0
	for hist.HasNext() {
		e, err := hist.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := proto.Marshal(e)
		largest = max(largest, len(b))
	}
	if largest > 12<<10 {
		t.Errorf("the parent's largest history event is %d bytes: the answer went through it", largest)
	}
}

// TestSubAgentStopsWhenTheParentsBudgetIsSpent: the parent agent's
// per-session budget of 2 model calls bounds the child too: the parent's
// call and the child's first use it up, so the child's second call is
// refused (parent_session), its failure is the call's result, and the
// parent's next call is refused as well.
func TestSubAgentStopsWhenTheParentsBudgetIsSpent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(subAgentConfig(plugin), "    run_model_limit:", "    spend_limits: {per_session: {model_calls: 2}}\n    run_model_limit:", 1)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	parent := start(t, s, delegate("call:noop:b"))
	child := parent + ".sub-1"
	snap := s.WaitForSnapshot("the parent's failed turn", parent, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.ActiveTurnID == "" && s.State.LastTurnError != ""
	})
	if !strings.Contains(snap.State.LastTurnError, "spend limit") {
		t.Errorf("the parent's error: %q", snap.State.LastTurnError)
	}
	cs, err := s.Sessions.GetAgentSnapshot(ctx(t), child)
	if err != nil {
		t.Fatal(err)
	}
	if cs.State == nil || !strings.Contains(cs.State.LastTurnError, "spend limit reached: the parent session with its sub-agents used 2 model calls of its 2 model calls") {
		t.Errorf("the child's error: %+v", cs.State)
	}
	if p, c := s.Log().Count("model", "test"), s.Log().Count("model", "helper"); p != 1 || c != 1 {
		t.Errorf("model calls: parent %d, child %d; want 1 and 1", p, c)
	}
	if snap.Spend == nil || snap.Spend.SubAgents == nil || snap.Spend.SubAgents.ModelCalls != 1 {
		t.Errorf("the parent's spend: %+v", snap.Spend)
	}
}

// TestSubAgentOverHTTP: the parent's event stream holds the child's events
// only when asked (sub_agents=true), tagged with the child's session ID;
// waiting_for=approval lists the parent, and the child with its
// parent_session_id; the approval POSTed to the parent with session_id
// reaches the child; a token scoped to other sessions cannot.
func TestSubAgentOverHTTP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	s := agenttest.NewStack(t, subAgentConfig(plugin)+fmt.Sprintf(`http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
      - {name: acme, token: %s, session_prefix: "acme-"}
`, port, tokenAll, tokenAcme))
	s.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForPage(t, base)
	parent := start(t, s, delegate("call:approve_write:h1"))
	child := parent + ".sub-1"
	snap := s.WaitForSnapshot("the child's approval in the parent", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]

	page := expectPage(t, "waiting_for=approval", func() wire.SessionsPage { return listPage(t, base, tokenAll, "waiting_for=approval") }, parent, child)
	for _, row := range page.Sessions {
		if want := map[string]string{parent: "", child: parent}[row.SessionID]; row.ParentSessionID != want {
			t.Errorf("row %s: parent_session_id %q, want %q", row.SessionID, row.ParentSessionID, want)
		}
	}

	// The inbox lists the child's approval once, through its parent.
	code, out := do(t, "GET", base+"/v1/inbox", tokenAll, "")
	var inbox wire.InboxPage
	if code != 200 || json.Unmarshal(out, &inbox) != nil || len(inbox.Items) != 1 {
		t.Fatalf("inbox: %d %s", code, out)
	}
	if it := inbox.Items[0]; it.SessionID != parent || it.HolderSessionID != child || it.InterruptID != in.InterruptID || it.Kind != "approval" || it.ToolName != "approve_write" {
		t.Errorf("inbox item: %+v", it)
	}
	if code, out := do(t, "GET", base+"/v1/inbox?kind=question", tokenAll, ""); code != 200 || !strings.Contains(string(out), `"items":[]`) {
		t.Errorf("inbox of questions: %d %s", code, out)
	}
	if code, out := do(t, "GET", base+"/v1/inbox", tokenAcme, ""); code != 200 || !strings.Contains(string(out), `"items":[]`) {
		t.Errorf("another scope's inbox: %d %s", code, out)
	}
	if code, _ := do(t, "GET", base+"/v1/inbox?kind=alarm", tokenAll, ""); code != 400 {
		t.Errorf("inbox?kind=alarm: %d", code)
	}

	sess := base + "/v1/sessions/" + parent
	own := readSSE(t, ctx(t), sess+"/events", tokenAll, "", func(f sseFrame) bool { return f.data["type"] == "sub_agent_started" })
	for _, f := range own {
		if f.data["session_id"] != parent {
			t.Errorf("without sub_agents=true the stream has %v", f.data)
		}
	}
	all := readSSE(t, ctx(t), sess+"/events?sub_agents=true", tokenAll, "", func(f sseFrame) bool {
		return f.data["type"] == "interrupt_raised" && f.data["session_id"] == child
	})
	if n := len(all); n <= len(own) {
		t.Errorf("sub_agents=true read %d events, no more than the parent's %d", n, len(own))
	}
	if code, _ := do(t, "GET", sess+"/events?sub_agents=maybe", tokenAll, ""); code != 400 {
		t.Errorf("sub_agents=maybe: %d", code)
	}

	body := fmt.Sprintf(`{"approved": true, "digest": %q, "session_id": %q}`, in.Digest, child)
	if code, _ := do(t, "POST", sess+"/interrupts/"+in.InterruptID, tokenAcme, body); code != 403 && code != 404 {
		t.Errorf("another scope's token resolved it: %d", code)
	}
	code, out = do(t, "POST", sess+"/interrupts/"+in.InterruptID, tokenAll, body)
	if code != 200 || !strings.Contains(string(out), `"resolved":true`) {
		t.Fatalf("resolve through the parent: %d %s", code, out)
	}
	s.WaitForSnapshot("the parent's answer", parent, idleWithAnswer)
	code, out = do(t, "POST", sess+"/interrupts/"+in.InterruptID, tokenAll, body)
	if code != 200 || !strings.Contains(string(out), `"resolved":false`) || !strings.Contains(string(out), "approved") {
		t.Errorf("a second resolve: %d %s", code, out)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
}

// TestBackgroundSubAgent: the delegating call answers at once and the
// parent's turn ends while the child waits for its approval; the parent,
// idle, lists that approval; approved through the parent, the child's
// answer arrives as a message that starts the parent's next turn. A
// second child is cancelled with cancel_sub_agent, and its cancel is told
// the same way.
func TestBackgroundSubAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	s := newBackgroundStack(t)
	s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:bg1"))
	child := parent + ".sub-1"
	snap := s.WaitForSnapshot("the parent idle, its child waiting", parent, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && len(s.PendingInterrupts) == 1
	})
	wantAnswer(t, snap, `done: delegate_to_helper=succeeded:{"status":"started","session_id":"`+child+`"}`)
	if len(snap.SubAgents) != 1 || snap.SubAgents[0].Mode != wire.SubAgentModeBackground {
		t.Fatalf("sub-agents: %+v", snap.SubAgents)
	}
	in := snap.PendingInterrupts[0]
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest, SessionID: in.SessionID}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the parent's turn the answer started", parent, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && s.State.TurnCount == 2
	})
	if want := "echo: [Dex] The sub-agent helper (session " + child; !strings.HasPrefix(lastText(snap), want) || !strings.Contains(lastText(snap), "done: approve_write=succeeded:wrote bg1") {
		t.Fatalf("the parent's second answer: %q", lastText(snap))
	}
	if len(snap.SubAgents) != 0 {
		t.Fatalf("sub-agents after the answer: %+v", snap.SubAgents)
	}
	waitClosed(t, s, child, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)

	// A second child, cancelled while it waits.
	if ok, err := s.Sessions.SendUserMessage(ctx(t), parent, delegate("call:approve_write:bg2")); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	second := parent + ".sub-2"
	s.WaitForSnapshot("the second child's approval", parent, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && s.State.TurnCount == 3 && len(s.PendingInterrupts) == 1
	})
	b, _ := json.Marshal(map[string]string{"session_id": second})
	if ok, err := s.Sessions.SendUserMessage(ctx(t), parent, "args:cancel_sub_agent:"+string(b)); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the cancel's message", parent, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && s.State.TurnCount == 5
	})
	if !strings.Contains(lastText(snap), "was cancelled before it finished") || len(snap.PendingInterrupts) != 0 {
		t.Fatalf("the parent's last answer: %q, pending %+v", lastText(snap), snap.PendingInterrupts)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times, want 1", n)
	}
	// Closing the parent with nothing running completes it.
	if ok, err := s.Sessions.CloseSession(ctx(t), parent); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	waitClosed(t, s, parent, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
}

// TestBackgroundChildClosesWithItsParent: closing a parent whose
// background child waits closes the child too.
func TestBackgroundChildClosesWithItsParent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	s := newBackgroundStack(t)
	s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:bg3"))
	s.WaitForSnapshot("the parent idle, its child waiting", parent, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && len(s.PendingInterrupts) == 1
	})
	if ok, err := s.Sessions.CloseSession(ctx(t), parent); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	waitClosed(t, s, parent+".sub-1", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	waitClosed(t, s, parent, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	if n := s.Log().Count("tool", "approve_write"); n != 0 {
		t.Errorf("approve_write ran %d times", n)
	}
}
