package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestPrintPlan(t *testing.T) {
	t.Parallel()
	command := func(sub string, args ...string) string {
		return "dex-agent-worker session " + sub + " " + strings.Join(args, " ") + " --address h:1"
	}
	waiting := &wire.SessionState{Status: wire.StatusWaitingForUserMessage, TurnCount: 1, InteractionMode: wire.InteractionChat}
	tests := []struct {
		name string
		snap wire.Snapshot
		want string
	}{
		{
			name: "no plan",
			snap: wire.Snapshot{SessionID: "s-1", State: waiting},
			want: "session s-1 has no plan yet: the agent writes one with write_todos (plan mode: dex-agent-worker session send --plan s-1 'what to plan' --address h:1)\n",
		},
		{
			name: "a draft",
			snap: wire.Snapshot{SessionID: "s-1", State: waiting, Plan: &wire.Plan{Revision: 2, Status: "draft", Tasks: []wire.PlanTask{
				{Content: "Refund order 3", Status: "pending"}, {Content: "Refund order 7", Status: "pending"},
			}}},
			want: `plan of session s-1: revision 2, draft (0 of 2 tasks completed)
  [ ] Refund order 3
  [ ] Refund order 7
execute: dex-agent-worker session execute-plan s-1 --revision 2 --address h:1
revise:  dex-agent-worker session send s-1 'what to change' --address h:1
`,
		},
		{
			name: "a draft while its turn still runs",
			snap: wire.Snapshot{SessionID: "s-1",
				State: &wire.SessionState{Status: wire.StatusRunningModel, ActiveTurnID: "turn-2", InteractionMode: wire.InteractionPlanning},
				Plan:  &wire.Plan{Revision: 1, Status: "draft", Tasks: []wire.PlanTask{{Content: "Refund order 3", Status: "pending"}}}},
			want: `plan of session s-1: revision 1, draft (0 of 1 tasks completed)
  [ ] Refund order 3
execute: dex-agent-worker session execute-plan s-1 --revision 1 --address h:1  (once turn-2 ends)
revise:  dex-agent-worker session send s-1 'what to change' --address h:1
`,
		},
		{
			name: "executing",
			snap: wire.Snapshot{SessionID: "s-1",
				State: &wire.SessionState{Status: wire.StatusRunningTools, ActiveTurnID: "turn-3", InteractionMode: wire.InteractionExecuting},
				Plan: &wire.Plan{Revision: 4, Status: "active", Tasks: []wire.PlanTask{
					{Content: "Refund order 3", Status: "completed"}, {Content: "Refund order 7", Status: "in_progress"}, {Content: "Tell the customer", Status: "pending"},
				}}},
			want: `plan of session s-1: revision 4, active (1 of 3 tasks completed, 1 in progress)
  [x] Refund order 3
  [~] Refund order 7
  [ ] Tell the customer
executing in turn-3
`,
		},
		{
			name: "cleared",
			snap: wire.Snapshot{SessionID: "s-1", State: waiting, Plan: &wire.Plan{Revision: 5, Status: "cleared", Tasks: []wire.PlanTask{}}},
			want: "plan of session s-1: revision 5, cleared (no tasks)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printPlan(&b, tt.snap, command)
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("printPlan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanToExecute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		plan    *wire.Plan
		want    int
		wantErr string
	}{
		{nil, 0, "session s-1 has no plan to execute: draft one first with `session send --plan s-1 TEXT`"},
		{&wire.Plan{Revision: 3, Status: "draft"}, 3, ""},
		{&wire.Plan{Revision: 4, Status: "active"}, 4, ""},
		{&wire.Plan{Revision: 5, Status: "completed"}, 0, "session s-1 has no draft or active plan to execute: its plan (revision 5) is completed"},
		{&wire.Plan{Revision: 6, Status: "cleared"}, 0, "session s-1 has no draft or active plan to execute: its plan (revision 6) is cleared"},
	}
	for _, tt := range tests {
		got, err := planToExecute(wire.Snapshot{SessionID: "s-1", Plan: tt.plan})
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.wantErr {
			t.Errorf("planToExecute(%+v) = %d, %q; want %d, %q", tt.plan, got, gotErr, tt.want, tt.wantErr)
		}
	}
}

func TestExecuteRefusal(t *testing.T) {
	t.Parallel()
	draft := &wire.Plan{Revision: 2, Status: "draft"}
	idle := &wire.SessionState{Status: wire.StatusWaitingForUserMessage, InteractionMode: wire.InteractionChat}
	tests := []struct {
		name string
		snap wire.Snapshot
		want string
	}{
		{"not started", wire.Snapshot{Plan: draft}, "the session has not started"},
		{"no plan", wire.Snapshot{State: idle}, "the session has no plan"},
		{"executing", wire.Snapshot{State: &wire.SessionState{Status: wire.StatusRunningModel, ActiveTurnID: "turn-4", InteractionMode: wire.InteractionExecuting}, Plan: draft},
			"a plan is executing already (turn-4)"},
		{"a turn runs", wire.Snapshot{State: &wire.SessionState{Status: wire.StatusRunningModel, ActiveTurnID: "turn-4", InteractionMode: wire.InteractionPlanning}, Plan: draft},
			"a turn is running (turn-4, running_model); try again once it ends"},
		{"queued", wire.Snapshot{State: idle, Plan: draft, QueuedCount: 1}, "messages are queued; the session takes a plan only with nothing queued"},
		{"another revision", wire.Snapshot{State: idle, Plan: &wire.Plan{Revision: 3, Status: "draft"}}, "the current plan is revision 3 (draft)"},
		{"completed", wire.Snapshot{State: idle, Plan: &wire.Plan{Revision: 2, Status: "completed"}}, "the plan is completed, not a draft or active"},
		{"plan mode off", wire.Snapshot{State: idle, Plan: draft}, "plan mode may be off for this agent (plan_mode_enabled in the worker config), or the revision started executing and ended meanwhile"},
	}
	for _, tt := range tests {
		if got, want := executeRefusal(tt.snap, 2), "the session did not execute plan revision 2: "+tt.want; got != want {
			t.Errorf("%s: executeRefusal = %q, want %q", tt.name, got, want)
		}
	}
}

// TestSessionPlanFlagErrors: bad arguments are refused before any dial.
func TestSessionPlanFlagErrors(t *testing.T) {
	clearSessionEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"session", "execute-plan", "s1", "--revision", "0"}, "error: --revision 0: a plan revision is 1 or more\n"},
		{[]string{"session", "execute-plan"}, "error: accepts 1 arg(s), received 0\n"},
		{[]string{"session", "plan", "s1", "s2"}, "error: accepts 1 arg(s), received 2\n"},
		{[]string{"session", "send", "--plan", "s1"}, "error: accepts 2 arg(s), received 1\n"},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != 1 || stderr != tt.want {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant:\n%s", tt.args, code, stderr, tt.want)
		}
	}
	// --plan reaches the dial like a plain send does.
	_, stderr, code := runCLI(t, "session", "send", "--plan", "s1", "plan it", "--tls-cert", "c.pem")
	if code != 1 || stderr != "error: --tls-cert and --tls-key go together (a client certificate and its key)\n" {
		t.Errorf("send --plan: exit %d, stderr %q", code, stderr)
	}
}

// TestOrdersPlanThroughTheCLI drafts a plan in plan mode with the orders
// demo ("refund orders 3 and 7": one task per order), shows it, executes
// it, approves each refund, and watches the checklist move to done.
func TestOrdersPlanThroughTheCLI(t *testing.T) {
	t.Parallel()
	o := newOrdersCLI(t, "    built_in_tools: [write_todos]\n    plan_mode_enabled: true\n", `  - name: no-plans
    flow_type: NoPlansAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
    built_in_tools: [write_todos]
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
      request_return_label: {effect: idempotent_write}
`)
	stack, cli, session := o.stack, o.run, o.session
	wantError := func(want string, args ...string) {
		t.Helper()
		if _, stderr, code := cli(args...); code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("session %v: exit %d, stderr %q; want %q", args, code, stderr, want)
		}
	}
	id := strings.TrimSpace(session("start", "--agent", "orders"))
	if got := session("plan", id); !strings.HasPrefix(got, "session "+id+" has no plan yet") {
		t.Errorf("plan before any: %q", got)
	}
	if got := session("plan", id, "--json"); got != "null\n" {
		t.Errorf("plan --json before any: %q", got)
	}
	wantError("has no plan to execute: draft one first", "execute-plan", id)

	if got := session("send", "--plan", id, "refund orders 3 and 7"); got != "queued (plan mode)\n" {
		t.Errorf("send --plan printed %q", got)
	}
	snap := stack.WaitForSnapshot("the draft", id, func(s wire.Snapshot) bool {
		return s.State.TurnCount == 1 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if p := snap.Plan; p == nil || p.Revision != 1 || p.Status != "draft" || len(p.Tasks) != 2 {
		t.Fatalf("plan after the planning turn: %+v", p)
	}
	human := session("plan", id)
	for _, want := range []string{
		"plan of session " + id + ": revision 1, draft (0 of 2 tasks completed)\n  [ ] Refund order 3\n  [ ] Refund order 7\n",
		"execute: dex-agent-worker session execute-plan " + id + " --revision 1 --address " + stack.Address(),
	} {
		if !strings.Contains(human, want) {
			t.Errorf("plan text lacks %q:\n%s", want, human)
		}
	}
	var viaJSON wire.Plan
	if err := json.Unmarshal([]byte(session("plan", id, "--json")), &viaJSON); err != nil || viaJSON.Revision != 1 || viaJSON.Tasks[1].Content != "Refund order 7" {
		t.Errorf("plan --json: %+v %v", viaJSON, err)
	}
	if data, _ := os.ReadFile(filepath.Join(stack.Dir, "orders.json")); strings.Contains(string(data), `"idempotency_key"`) {
		t.Errorf("the planning turn refunded something")
	}
	wantError("the session did not execute plan revision 2: the current plan is revision 1 (draft)", "execute-plan", id, "--revision", "2")

	if got := session("execute-plan", id); got != "executing plan revision 1\n" {
		t.Errorf("execute-plan printed %q", got)
	}
	for _, order := range []string{"3", "7"} {
		snap = stack.WaitForSnapshot("the refund of order "+order, id, func(s wire.Snapshot) bool {
			return len(s.PendingInterrupts) == 1 && strings.Contains(s.PendingInterrupts[0].Arguments, `"order_id":"`+order+`"`)
		})
		human = session("plan", id)
		if !strings.Contains(human, "[~] Refund order "+order+"\n") || !strings.Contains(human, "executing in turn-2\n") {
			t.Errorf("plan while order %s waits:\n%s", order, human)
		}
		wantError("a plan is executing already (turn-2)", "execute-plan", id, "--revision", fmt.Sprint(snap.Plan.Revision))
		session("approve", id, snap.PendingInterrupts[0].InterruptID)
	}
	snap = stack.WaitForSnapshot("the executed plan", id, func(s wire.Snapshot) bool {
		return s.State.TurnCount == 2 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if got := snap.Messages[len(snap.Messages)-1].Text; got != "The plan is done. Refunded $32.50 of order 3 (monitor arm); order status: refunded. Refunded $62.50 of order 7 (office chair); order status: refunded." {
		t.Errorf("final answer = %q", got)
	}
	if got, want := session("plan", id), "plan of session "+id+": revision 4, completed (2 of 2 tasks completed)\n  [x] Refund order 3\n  [x] Refund order 7\n"; got != want {
		t.Errorf("plan at the end = %q, want %q", got, want)
	}
	wantError("its plan (revision 4) is completed", "execute-plan", id)

	// An agent without plan mode refuses a planning message.
	other := strings.TrimSpace(session("start", "--agent", "no-plans"))
	wantError("the session refused the planning message: plan mode is off for this agent", "send", "--plan", other, "refund orders 1 and 2")
}
