package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestSessionControlThroughTheCLI: with the orders demo, a refund waits
// for approval; `session send --mode steer` steers it (the approval is
// rejected without the refund), `session cancel` stops the next turn's
// wait, a queued message is deleted, `session close` refuses later
// messages, and `session terminate` ends another session.
func TestSessionControlThroughTheCLI(t *testing.T) {
	t.Parallel()
	o := newOrdersCLI(t, "    built_in_tools: [ask_user]\n", "")
	stack, run := o.stack, o.run
	session := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(o.session(args...))
	}
	pendingApproval := func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind == wire.InterruptKindApproval
	}
	id := session("start", "--agent", "orders", "--id", "cli-control", "--message", "refund order 7")
	stack.WaitForSnapshot("a pending approval", id, pendingApproval)
	if out := session("send", "--mode", "steer", id, "what is order 3?"); out != "steered" {
		t.Errorf("send --mode steer: %q", out)
	}
	snap := stack.WaitForSnapshot("the steered turn's answer", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 2
	})
	for _, m := range snap.Messages {
		if strings.Contains(m.Text, "Refunded") {
			t.Errorf("the steered refund ran: %q", m.Text)
		}
	}
	// The next refund waits; a queued message is deleted, then the turn is
	// cancelled.
	session("send", id, "refund order 7")
	stack.WaitForSnapshot("a second approval", id, pendingApproval)
	session("send", id, "and order 3")
	snap = stack.WaitForSnapshot("a queued message", id, func(s wire.Snapshot) bool { return len(s.QueuedMessages) == 1 })
	if out := session("delete-queued", id, snap.QueuedMessages[0].MessageID); out != "deleted" {
		t.Errorf("delete-queued: %q", out)
	}
	if _, stderr, code := run("delete-queued", id, snap.QueuedMessages[0].MessageID); code == 0 || !strings.Contains(stderr, "is not queued") {
		t.Errorf("a second delete-queued: exit %d %s", code, stderr)
	}
	if out := session("cancel", id); out != "cancelled turn-3" {
		t.Errorf("cancel: %q", out)
	}
	stack.WaitForSnapshot("the cancelled turn's end", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 3 && len(s.QueuedMessages) == 0
	})
	if _, stderr, code := run("cancel", id); code == 0 || !strings.Contains(stderr, "runs no turn") {
		t.Errorf("cancel while idle: exit %d %s", code, stderr)
	}
	if out := session("close", id); out != "closed" {
		t.Errorf("close: %q", out)
	}
	// Errors say "session" and what was tried, never an update's or a
	// query's name, nor "workflow".
	peopleOnly := func(what, stderr string) {
		t.Helper()
		for _, internal := range []string{"workflow", "send_user_message", "get_agent_snapshot", "resolve_interrupt", "list_agent_messages"} {
			if strings.Contains(strings.ToLower(stderr), internal) {
				t.Errorf("%s: the error names %q: %s", what, internal, stderr)
			}
		}
	}
	stack.WaitForSnapshot("the closed session", id, func(s wire.Snapshot) bool { return s.State != nil && s.State.Status == wire.StatusClosed })
	waitEnded := func(id string) {
		t.Helper()
		err := agenttest.WaitFor(t.Context(), "the workflow's end", time.Minute, func() (bool, error) {
			d, err := stack.Client.DescribeWorkflowExecution(t.Context(), id, "")
			return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitEnded(id)
	if _, stderr, code := run("send", id, "more"); code == 0 || !strings.Contains(stderr, "send a message to session "+id+": the session was closed: it takes no messages or answers") {
		t.Errorf("send after close: exit %d %s", code, stderr)
	} else {
		peopleOnly("send after close", stderr)
	}
	other := session("start", "--agent", "orders", "--id", "cli-terminate", "--message", "refund order 7")
	snap = stack.WaitForSnapshot("a pending approval", other, pendingApproval)
	if out := session("terminate", other, "--reason", "test"); out != "terminated" {
		t.Errorf("terminate: %q", out)
	}
	waitEnded(other)
	if _, stderr, code := run("approve", other, snap.PendingInterrupts[0].InterruptID); code == 0 || !strings.Contains(stderr, "approve or reject a call of session cli-terminate: the session was terminated") {
		t.Errorf("approve after terminate: exit %d %s", code, stderr)
	} else {
		peopleOnly("approve after terminate", stderr)
	}
	for _, args := range [][]string{{"snapshot", "no-such-session"}, {"send", "no-such-session", "hi"}, {"messages", "no-such-session"}} {
		if _, stderr, code := run(args...); code == 0 || !strings.Contains(stderr, "session no-such-session: no such session is running (it ended, or never existed)") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		} else {
			peopleOnly(args[0]+" of an unknown session", stderr)
		}
	}
}

// TestSessionUpgradeNeedsADeployment: without --deployment or a config
// with temporal.deployment, `session upgrade` says what it needs.
func TestSessionUpgradeNeedsADeployment(t *testing.T) {
	t.Parallel()
	o := newOrdersCLI(t, "", "")
	_, stderr, code := runCLI(t, "session", "upgrade", "--address", o.stack.Address())
	if code == 0 || !strings.Contains(stderr, "name the worker deployment: --deployment NAME, or --config FILE with temporal.deployment") {
		t.Errorf("session upgrade: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "session", "upgrade", "--address", o.stack.Address(), "--deployment", "nowhere")
	if code == 0 || !strings.Contains(stderr, "describe worker deployment nowhere") {
		t.Errorf("session upgrade --deployment nowhere: exit %d, stderr %q", code, stderr)
	}
}
