package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

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
