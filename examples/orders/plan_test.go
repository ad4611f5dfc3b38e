package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// planSession plays the session's side of plans for the runner: it keeps
// the messages and the plan, records write_todos calls itself (revision +1,
// draft in a planning turn, completed when every task is), runs the other
// calls, and approves refunds unless reject says otherwise.
type planSession struct {
	t      *testing.T
	r      *stepwise.Runner
	msgs   []pluginapi.Message
	plan   *pluginapi.Plan
	turns  int
	tools  []pluginapi.ToolDefinition
	reject map[string]string // order ID → rejection message
	// steps logs each call of the turns, and the plan after each
	// write_todos.
	steps []string
}

func newPlanSession(t *testing.T, writeTodos bool) *planSession {
	t.Helper()
	r := stepwise.NewRunner("orders", "test", buildAgent)
	cfg, _ := json.Marshal(Config{StorePath: filepath.Join(t.TempDir(), "orders.json")})
	if _, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: cfg}); err != nil {
		t.Fatal(err)
	}
	s := &planSession{t: t, r: r, reject: map[string]string{}}
	if writeTodos {
		s.tools = []pluginapi.ToolDefinition{{Name: "write_todos", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	}
	return s
}

func (s *planSession) add(ms ...pluginapi.FrameworkMessage) {
	for _, m := range ms {
		s.msgs = append(s.msgs, pluginapi.Message{Sequence: int64(len(s.msgs) + 1), Role: m.Role, Text: m.Text, Item: m.Item,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, ToolStatus: m.ToolStatus})
	}
}

// turn runs one turn in mode (chat, planning or executing) and returns its
// answer, the text of its last message.
func (s *planSession) turn(text, mode string) string {
	s.t.Helper()
	ctx := context.Background()
	s.turns++
	u, err := s.r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "orders", Text: text})
	if err != nil {
		s.t.Fatal(err)
	}
	s.add(u.Message)
	turn := pluginapi.TurnContext{Agent: "orders", SessionID: "s", TurnID: fmt.Sprintf("turn-%d", s.turns), HostTools: s.tools, InteractionMode: mode}
	var records []pluginapi.ToolCall
	for range 40 {
		turn.Messages, turn.ToolCalls, turn.Plan = s.msgs, records, s.plan
		resp, err := s.r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: nopWriter{}})
		if err != nil {
			s.t.Fatal(err)
		}
		if resp.TurnCompleted != nil {
			s.add(resp.TurnCompleted.NewMessages...)
			return lastNew(resp.TurnCompleted.NewMessages)
		}
		req := resp.ToolCallsRequested
		s.add(req.NewMessages...)
		turn.RunState = req.RunState
		for _, c := range req.ToolCalls {
			records = append(records, s.run(ctx, turn.TurnID, mode, c))
		}
	}
	s.t.Fatalf("turn %q did not end", text)
	return ""
}

func (s *planSession) run(ctx context.Context, turnID, mode string, c pluginapi.DeferredToolCall) pluginapi.ToolCall {
	s.t.Helper()
	rec := pluginapi.ToolCall{ToolCallID: c.ToolCallID, ToolName: c.ToolName, Arguments: c.Arguments, Status: pluginapi.ToolCallSucceeded}
	if c.ToolName == "write_todos" {
		var a struct {
			Todos []pluginapi.PlanTask `json:"todos"`
		}
		if err := json.Unmarshal([]byte(c.Arguments), &a); err != nil {
			s.t.Fatalf("write_todos %s: %v", c.Arguments, err)
		}
		rev := 1
		if s.plan != nil {
			rev = s.plan.Revision + 1
		}
		status := "active"
		if mode == "planning" {
			status = "draft"
		} else if !strings.Contains(c.Arguments, "pending") && !strings.Contains(c.Arguments, "in_progress") {
			status = "completed"
		}
		s.plan = &pluginapi.Plan{Revision: rev, Status: status, Tasks: a.Todos}
		var line []string
		for _, t := range a.Todos {
			line = append(line, t.Content+"="+t.Status)
		}
		s.steps = append(s.steps, fmt.Sprintf("write_todos r%d %s: %s", rev, status, strings.Join(line, ", ")))
		rec.Output = fmt.Sprintf(`{"revision":%d,"status":"updated","task_count":%d}`, rev, len(a.Todos))
		return rec
	}
	s.steps = append(s.steps, c.ToolName+" "+c.Arguments)
	if mode == "planning" {
		s.t.Fatalf("a planning turn called %s", c.ToolName)
	}
	if c.ToolName == "refund_order" {
		var a refundArgs
		_ = json.Unmarshal([]byte(c.Arguments), &a)
		if msg, ok := s.reject[a.OrderID]; ok {
			rec.Status, rec.RejectionMessage = pluginapi.ToolCallRejected, msg
			return rec
		}
	}
	out, err := s.r.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "orders", IdempotencyKey: "s/" + turnID + "/" + c.ToolCallID,
		ToolCall: pluginapi.ToolCall{ToolCallID: c.ToolCallID, ToolName: c.ToolName, Arguments: c.Arguments}, Events: nopWriter{}})
	var toolErr *pluginapi.ToolExecutionError
	switch {
	case errors.As(err, &toolErr):
		rec.Status, rec.Error = pluginapi.ToolCallFailed, toolErr.Message
	case err != nil || out.Result == nil:
		s.t.Fatalf("%s: %+v %v", c.ToolName, out, err)
	default:
		rec.Output = out.Result.Output
	}
	return rec
}

// approve approves the plan (execute_plan): a draft turns active, and the
// executing turn runs.
func (s *planSession) approve() string {
	s.plan.Status = "active"
	return s.turn(fmt.Sprintf("[Dex] The user approved plan revision %d. Execute it and keep the task statuses current with write_todos.", s.plan.Revision), "executing")
}

// TestPlanRefunds: in plan mode "refund orders 3 and 7" drafts one task per
// order; the approved plan's turn marks each task in progress, looks its
// order up, refunds it, and marks it completed, then reports.
func TestPlanRefunds(t *testing.T) {
	t.Parallel()
	s := newPlanSession(t, true)
	if got := s.turn("refund orders 3 and 7", "planning"); got != "Here is the plan (revision 1, 2 tasks). Each refund asks for your approval. Execute the plan to start, or tell me what to change." {
		t.Errorf("planning answer = %q", got)
	}
	// Feedback revises the draft.
	if got := s.turn("also order 5", "planning"); !strings.HasPrefix(got, "Here is the plan (revision 2, 3 tasks).") {
		t.Errorf("revised answer = %q", got)
	}
	got := s.approve()
	if want := "The plan is done. Refunded $32.50 of order 3 (monitor arm); order status: refunded. " +
		"Refunded $62.50 of order 7 (office chair); order status: refunded. " +
		"Refunded $47.50 of order 5 (webcam); order status: refunded."; got != want {
		t.Errorf("executing answer = %q, want %q", got, want)
	}
	want := []string{
		"write_todos r1 draft: Refund order 3=pending, Refund order 7=pending",
		"write_todos r2 draft: Refund order 3=pending, Refund order 7=pending, Refund order 5=pending",
		"write_todos r3 active: Refund order 3=in_progress, Refund order 7=pending, Refund order 5=pending",
		`lookup_order {"order_id":"3"}`,
		`refund_order {"order_id":"3","amount_cents":3250}`,
		"write_todos r4 active: Refund order 3=completed, Refund order 7=in_progress, Refund order 5=pending",
		`lookup_order {"order_id":"7"}`,
		`refund_order {"order_id":"7","amount_cents":6250}`,
		"write_todos r5 active: Refund order 3=completed, Refund order 7=completed, Refund order 5=in_progress",
		`lookup_order {"order_id":"5"}`,
		`refund_order {"order_id":"5","amount_cents":4750}`,
		"write_todos r6 completed: Refund order 3=completed, Refund order 7=completed, Refund order 5=completed",
	}
	if diff := cmp.Diff(want, s.steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestPlanEdges: a planning message that names no order asks in text; an
// unknown or refunded order is skipped and its task completed; a rejected
// refund stops the plan; outside plan mode the plan is written and run at
// once, and without write_todos the model says to refund one by one.
func TestPlanEdges(t *testing.T) {
	t.Parallel()
	s := newPlanSession(t, true)
	if got := s.turn("make a plan", "planning"); got != `Which orders should the plan refund? Say "refund orders 3 and 7", for example.` || s.plan != nil {
		t.Errorf("no orders named: %q, plan %+v", got, s.plan)
	}
	s.turn("refund orders 42, 7 and 3", "planning")
	s.reject["3"] = "not this one"
	got := s.approve()
	if want := "OK, I did not refund order 3. (not this one) I stop the plan here; its other tasks stay open."; got != want {
		t.Errorf("after a rejection: %q", got)
	}
	if p := s.plan; p.Status != "active" || p.Tasks[0].Status != "completed" || p.Tasks[1].Status != "completed" || p.Tasks[2].Status != "in_progress" {
		t.Errorf("plan after the rejection: %+v", p)
	}
	if !strings.Contains(strings.Join(s.steps, "\n"), `lookup_order {"order_id":"42"}`+"\nwrite_todos r3 active: Refund order 42=completed, Refund order 7=in_progress") {
		t.Errorf("the unknown order was not skipped:\n%s", strings.Join(s.steps, "\n"))
	}

	// Outside plan mode: order 7 is refunded already.
	s = newPlanSession(t, true)
	s.turn("refund order 7", "chat")
	s.steps = nil
	got = s.turn("refund orders 7 and 1", "chat")
	if got != "The plan is done. Refunded $17.50 of order 1 (desk lamp); order status: refunded." {
		t.Errorf("chat-mode plan answer = %q", got)
	}
	if s.steps[0] != "write_todos r1 active: Refund order 7=in_progress, Refund order 1=pending" ||
		s.steps[2] != "write_todos r2 active: Refund order 7=completed, Refund order 1=in_progress" {
		t.Errorf("chat-mode steps:\n%s", strings.Join(s.steps, "\n"))
	}

	s = newPlanSession(t, false)
	if got := s.turn("refund orders 3 and 7", "chat"); got != `I refund several orders by a plan, and this session has no write_todos. Refund them one at a time: say "refund order 3".` {
		t.Errorf("without write_todos: %q", got)
	}
}
