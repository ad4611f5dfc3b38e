package chat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

var planTasks = []string{"Refund order 3", "Refund order 7"}

// setPlan writes the plan (revision rev, status, one task status per
// task) into the snapshot and publishes plan_updated in turn.
func (f *fakeAPI) setPlan(turn string, rev int, status string, statuses ...string) {
	p := &Plan{Revision: rev, Status: status, Tasks: []wire.PlanTask{}}
	for i, st := range statuses {
		p.Tasks = append(p.Tasks, wire.PlanTask{Content: planTasks[i], Status: st})
	}
	f.update(func(s *Snapshot) { s.Plan = p })
	f.publishIn(turn, wire.EventPlanUpdated, "", 1, map[string]any{"revision": rev, "status": status, "task_count": len(statuses)})
}

// writeTodos plays a write_todos call of the active turn: its events, with
// the plan it writes.
func (f *fakeAPI) writeTodos(id string, rev int, status string, statuses ...string) {
	turn := ""
	f.update(func(s *Snapshot) { turn = s.State.ActiveTurnID })
	f.publish(wire.EventToolCallDeferred, "", 1, map[string]any{"tool_call_id": id, "tool_name": "write_todos", "effect": "read", "requires_approval": false})
	f.setPlan(turn, rev, status, statuses...)
	f.publish(wire.EventToolCallFinished, "", 1, map[string]any{"tool_call_id": id, "tool_name": "write_todos", "status": ToolCallSucceeded})
}

// askRefund raises the approval of refund_order for an order.
func (f *fakeAPI) askRefund(order string) {
	id := "refund_" + order
	args := `{"order_id":"` + order + `"}`
	f.update(func(s *Snapshot) {
		f.setCall(s, ToolCall{ToolCallID: id, ToolName: "refund_order", Arguments: args, Effect: "non_idempotent_write", RequiresApproval: true, Status: "awaiting_approval"})
		s.PendingInterrupts = []Interrupt{{InterruptID: id, ToolCallID: id, ToolName: "refund_order", Arguments: args, Kind: "approval"}}
		s.State.Status = StatusRunningTools
	})
	f.publish(wire.EventToolCallDeferred, "", 1, map[string]any{"tool_call_id": id, "tool_name": "refund_order", "effect": "non_idempotent_write", "requires_approval": true})
	f.publish(wire.EventInterruptRaised, "", 1, map[string]any{"interrupt_id": id, "tool_call_id": id, "tool_name": "refund_order", "kind": "approval"})
}

func (f *fakeAPI) endTurn(answer string) {
	turn := ""
	f.update(func(s *Snapshot) { turn = s.State.ActiveTurnID })
	f.deltas("run/"+turn+"/end", 1, answer)
	f.update(func(s *Snapshot) {
		f.addMessage(s, RoleAssistant, answer, "", "")
		s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: s.State.TurnCount, InteractionMode: "chat"}
		s.ToolCalls = []ToolCall{}
	})
	f.publishIn(turn, wire.EventTurnCompleted, "", 0, map[string]int{"message_count": 2})
}

func (f *fakeAPI) startTurn(n int, mode, text string) {
	turn := fmt.Sprintf("turn-%d", n)
	f.update(func(s *Snapshot) {
		s.State = &State{Status: StatusRunningModel, ActiveTurnID: turn, TurnCount: n, InteractionMode: mode}
		f.addMessage(s, RoleUser, text, "", "")
	})
	f.publish(wire.EventTurnStarted, "", 1, map[string]int64{"sequence": f.seq})
}

const (
	planDraftAnswer = "Here is the plan (revision 1, 2 tasks). Each refund asks for your approval."
	planDoneAnswer  = "The plan is done. Refunded order 3 and order 7."
)

// scriptPlan plays plan mode with the orders demo: a planning message
// drafts "refund order 3" and "refund order 7"; execute_plan of revision 1
// runs them, each refund waiting for approval, the plan moving along.
func (f *fakeAPI) scriptPlan() {
	f.onPlanMessage = func(f *fakeAPI, text string) {
		f.startTurn(1, "planning", text)
		f.writeTodos("todo_1", 1, PlanDraft, TaskPending, TaskPending)
		f.endTurn(planDraftAnswer)
	}
	f.onExecute = func(f *fakeAPI, rev int) bool {
		ok := false
		f.update(func(s *Snapshot) {
			ok = s.Plan != nil && s.Plan.Revision == rev && s.Plan.Status == PlanDraft && s.State.ActiveTurnID == ""
		})
		if !ok {
			return false
		}
		f.setPlan("", 1, PlanActive, TaskPending, TaskPending)
		f.startTurn(2, "executing", "[Dex] The user approved plan revision 1. Execute it and keep the task statuses current with write_todos.")
		f.publish(wire.EventPlanExecutionStarted, "", 1, map[string]int{"revision": 1})
		f.writeTodos("todo_2", 2, PlanActive, TaskInProgress, TaskPending)
		f.askRefund("3")
		return true
	}
	f.onResolve = func(f *fakeAPI, id string, r Resolution) bool {
		f.update(func(s *Snapshot) { s.PendingInterrupts = []Interrupt{}; s.State.Status = StatusRunningModel })
		f.publish(wire.EventInterruptResolved, "", 1, map[string]any{"interrupt_id": id, "approved": r.Approved, "kind": "approval"})
		f.publish(wire.EventToolCallFinished, "", 1, map[string]any{"tool_call_id": id, "tool_name": "refund_order", "status": ToolCallSucceeded})
		if id == "refund_3" {
			f.writeTodos("todo_3", 3, PlanActive, TaskCompleted, TaskInProgress)
			f.askRefund("7")
			return true
		}
		go func() {
			f.writeTodos("todo_4", 4, PlanCompleted, TaskCompleted, TaskCompleted)
			f.endTurn(planDoneAnswer)
		}()
		return true
	}
}

// inOrder reports whether out holds each of parts, in order.
func inOrder(out string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(out, p)
		if i < 0 {
			return false
		}
		out = out[i+len(p):]
	}
	return true
}

// TestSessionPlanMode: /plan sends a planning message, the draft shows as
// a checklist, /execute runs it by its revision, and the checklist moves
// with each plan_updated while the refunds are approved.
func TestSessionPlanMode(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptPlan()
	out, notes, err := runChat(t, f, "/plan refund orders 3 and 7\n/execute\ny\ny\n")
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	draft := "Plan (revision 1, draft, 0 of 2 done):\n  [ ] Refund order 3\n  [ ] Refund order 7\n(/execute runs this plan; a message revises it)\n"
	if !inOrder(out,
		"you> /plan refund orders 3 and 7\n",
		draft,
		planDraftAnswer+"\n",
		"you> /execute\n",
		"Plan (revision 2, active, 0 of 2 done):\n  [~] Refund order 3\n  [ ] Refund order 7\n",
		`Approve refund_order {"order_id":"3"}? [y/N/r=reject with reason] y`,
		"✓ refund_order succeeded\n",
		"Plan (revision 3, active, 1 of 2 done):\n  [x] Refund order 3\n  [~] Refund order 7\n",
		`Approve refund_order {"order_id":"7"}? [y/N/r=reject with reason] y`,
		"Plan (revision 4, completed, 2 of 2 done):\n  [x] Refund order 3\n  [x] Refund order 7\n",
		planDoneAnswer+"\n",
	) {
		t.Errorf("transcript:\n%s", out)
	}
	for _, once := range []string{"Plan (revision 1, draft", "Plan (revision 2,", "Plan (revision 3,", "Plan (revision 4,"} {
		if n := strings.Count(out, once); n != 1 {
			t.Errorf("%q shown %d times:\n%s", once, n, out)
		}
	}
	if strings.Contains(out, "write_todos") {
		t.Errorf("the write_todos calls are shown besides the checklist:\n%s", out)
	}
	if !strings.Contains(notes, "(executing plan revision 1)") {
		t.Errorf("notes = %q", notes)
	}
	if !f.requested("plan message refund orders 3 and 7") || !f.requested("execute 1") || f.requested("message /") {
		t.Errorf("requests: %q", f.requestLog())
	}
}

// TestSessionPlanOnAttach: joining a session shows its plan after the
// history; /execute without a plan, with a finished one, or refused says
// why; /plan with plan mode off says so; /help lists the commands.
func TestSessionPlanOnAttach(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	f.onMessage(f, "hello")
	f.update(func(s *Snapshot) {
		s.Plan = &Plan{Revision: 2, Status: PlanActive, Tasks: []wire.PlanTask{{Content: "Refund order 3", Status: TaskCompleted}, {Content: "Refund order 7", Status: TaskInProgress}}}
	})
	out, notes, err := runChat(t, f, "/execute\n/plan refund order 3\n/plan\n/help\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "you> hello\nI can refund orders.\nPlan (revision 2, active, 1 of 2 done):\n  [x] Refund order 3\n  [~] Refund order 7\n\n"; !strings.HasPrefix(out, want) {
		t.Errorf("attach shows:\n%s\nwant it to start with:\n%s", out, want)
	}
	for _, want := range []string{
		"(/execute: plan revision 2 did not run: plan mode may be off for this agent",
		"(the session did not accept the planning message: plan mode may be off for this agent)",
		"(/plan TEXT sends TEXT in plan mode: the agent drafts a plan, which /execute runs)",
		"  /plan TEXT   send TEXT in plan mode",
		"  /execute     run the current draft plan",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !f.requested("execute 2") || !f.requested("plan message refund order 3") || f.requested("message /") {
		t.Errorf("requests: %q", f.requestLog())
	}

	f = newFakeAPI(t)
	f.scriptPlan()
	_, notes, err = runChat(t, f, "/execute\n")
	if err != nil || !strings.Contains(notes, "(/execute: there is no plan yet; /plan TEXT drafts one)") || f.requested("execute ") {
		t.Errorf("no plan: %v, notes %q, requests %q", err, notes, f.requestLog())
	}
	f.update(func(s *Snapshot) { s.Plan = &Plan{Revision: 4, Status: PlanCompleted, Tasks: []wire.PlanTask{}} })
	_, notes, err = runChat(t, f, "/execute\n")
	if err != nil || !strings.Contains(notes, "(/execute: the plan (revision 4) is completed; /plan TEXT drafts a new one)") {
		t.Errorf("a completed plan: %v, notes %q", err, notes)
	}
}

// TestSessionPlanLostEvents: the plan's events are lost; the snapshot
// reloaded after a quiet spell still shows the plan that changed.
func TestSessionPlanLostEvents(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.onPlanMessage = func(f *fakeAPI, text string) {
		f.startTurn(1, "planning", text)
		f.mu.Lock()
		f.muted = true
		f.mu.Unlock()
		f.writeTodos("todo_1", 1, PlanDraft, TaskPending, TaskPending)
		f.endTurn(planDraftAnswer)
	}
	out, _, err := runChat(t, f, "/plan refund orders 3 and 7\n", func(s *Session) { s.PollInterval = 100 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	if !inOrder(out, "Plan (revision 1, draft, 0 of 2 done):\n  [ ] Refund order 3\n  [ ] Refund order 7\n", planDraftAnswer) {
		t.Errorf("transcript:\n%s", out)
	}
}
