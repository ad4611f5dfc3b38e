package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Plans: the write_todos built-in replaces the session's plan as a whole.
// Each successful call writes revision + 1: no tasks is cleared, a planning
// turn writes a draft, every task completed is completed, anything else is
// active. The call is final when the model's response is recorded (no tool
// Step runs); the session writes plan_updated.
//
// Plan mode (Options.PlanModeEnabled): a plan_mode message, or any message
// while a draft exists, starts a planning turn, which may only call
// write_todos (other calls are recorded rejected). execute_plan(revision)
// approves the draft (or the active plan): the plan turns active, the
// session writes plan_execution_started and starts an executing turn with
// the spec's user message.

// Plan statuses and task statuses.
const (
	PlanActive    = "active"
	PlanCompleted = "completed"
	PlanCleared   = "cleared"
	PlanDraft     = "draft"

	PlanTaskPending    = "pending"
	PlanTaskInProgress = "in_progress"
	PlanTaskCompleted  = "completed"
)

// WriteTodosCalledTwice fails each write_todos call of a response that has
// more than one (the spec's text).
const WriteTodosCalledTwice = "write_todos was called more than once in one response"

// Texts of plan mode (the spec's).
const (
	// PlanningOnlyWriteTodos rejects any other call of a planning turn.
	PlanningOnlyWriteTodos = "The tool call was not run: a planning turn can only call write_todos."
	// PlanApprovedMessageFormat is the user message of an executing turn;
	// %d is the plan revision.
	PlanApprovedMessageFormat = "[Dex] The user approved plan revision %d. Execute it and keep the task statuses current with write_todos."
)

// planExecutionMessageID marks the queued message of an approved plan.
const planExecutionMessageID = "plan-execution"

// Limits of a plan: it lives in the session's state and in every model
// call's input, so it stays small.
const (
	maxPlanTasks       = 50
	maxPlanTaskBytes   = 500
	maxTodosInputBytes = 64 << 10
)

type todosArgs struct {
	Todos *[]struct {
		Content *string `json:"content"`
		Status  *string `json:"status"`
	} `json:"todos"`
}

// parseTodos checks write_todos's arguments and returns the tasks.
func parseTodos(args string) ([]wire.PlanTask, error) {
	if len(args) > maxTodosInputBytes {
		return nil, fmt.Errorf("the arguments are over %d bytes", maxTodosInputBytes)
	}
	var a todosArgs
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	if a.Todos == nil {
		return nil, fmt.Errorf("todos is required (a list; empty clears the plan)")
	}
	if len(*a.Todos) > maxPlanTasks {
		return nil, fmt.Errorf("%d tasks; at most %d", len(*a.Todos), maxPlanTasks)
	}
	tasks := []wire.PlanTask{}
	for i, t := range *a.Todos {
		if t.Content == nil || strings.TrimSpace(*t.Content) == "" {
			return nil, fmt.Errorf("todos[%d].content is required and must not be blank", i)
		}
		content := strings.TrimSpace(*t.Content)
		if len(content) > maxPlanTaskBytes || !utf8.ValidString(content) {
			return nil, fmt.Errorf("todos[%d].content is over %d bytes or not UTF-8", i, maxPlanTaskBytes)
		}
		status := ""
		if t.Status != nil {
			status = *t.Status
		}
		switch status {
		case PlanTaskPending, PlanTaskInProgress, PlanTaskCompleted:
		default:
			b, _ := json.Marshal(status) //workflowcheck:ignore (a string)
			return nil, fmt.Errorf("todos[%d].status is %s; want pending, in_progress or completed", i, b)
		}
		tasks = append(tasks, wire.PlanTask{Content: content, Status: status})
	}
	return tasks, nil
}

// writePlan replaces the plan with tasks as the next revision.
func (s *State) writePlan(tasks []wire.PlanTask) wire.Plan {
	rev := 1
	if s.Plan != nil {
		rev = s.Plan.Revision + 1
	}
	status := PlanActive
	switch {
	case len(tasks) == 0:
		status = PlanCleared
	case s.Mode == wire.InteractionPlanning:
		status = PlanDraft
	case allCompleted(tasks):
		status = PlanCompleted
	}
	s.Plan = &wire.Plan{Revision: rev, Status: status, Tasks: tasks}
	return *s.Plan
}

// refuseInPlanning records a call of a planning turn that is not
// write_todos: rejected, with the spec's text for the model.
func (s *State) refuseInPlanning(rec wire.ToolCall, attempt int) []Command {
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	rec.Status, rec.RejectionMessage = wire.ToolCallRejected, PlanningOnlyWriteTodos
	s.ToolCalls = append(s.ToolCalls, rec)
	return []Command{
		Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect), RequiresApproval: rec.RequiresApproval,
		}).forStep(step)},
		Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(rec.Status),
		}).forStep(step)},
	}
}

// denyByRule rejects a call an approval rule denied: it never runs, and
// the model sees the rule's reason as its result.
func (s *State) denyByRule(rec wire.ToolCall, d *RuleDecision, attempt int) []Command {
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	rec.RequiresApproval = false
	rec.Status, rec.RejectionMessage = wire.ToolCallRejected, d.Reason
	s.ToolCalls = append(s.ToolCalls, rec)
	return []Command{
		Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect),
			ApprovalRule: rec.ApprovalRule, ApprovalDecision: rec.ApprovalDecision,
			ShadowApprovalRule: rec.ShadowApprovalRule, ShadowApprovalDecision: rec.ShadowApprovalDecision,
		}).forStep(step)},
		Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(rec.Status),
		}).forStep(step)},
	}
}

// executePlan applies execute_plan: accepted only while the session waits
// for a user message with nothing queued, and its plan has the revision
// and is a draft or active.
func (s *State) executePlan(in ExecutePlan) Result {
	p := s.Plan
	if s.Closed && s.Started {
		return refused(SessionClosedReason)
	}
	if !s.Started || !s.Options.PlanModeEnabled && s.Options.Version < ExecutePlanVersion || s.Phase != phaseNone || len(s.Queued) > 0 ||
		p == nil || p.Revision != in.Revision || p.Status != PlanDraft && p.Status != PlanActive {
		return Result{}
	}
	var cmds []Command
	if p.Status == PlanDraft {
		p.Status = PlanActive
		cmds = append(cmds, Emit{Event: newEvent(wire.EventPlanUpdated, "", waitingStepAttempt, wire.PlanUpdatedPayload{Revision: p.Revision, Status: p.Status, TaskCount: len(p.Tasks)})})
	}
	s.Queued = append(s.Queued, wire.QueuedMessage{MessageID: planExecutionMessageID, Text: fmt.Sprintf(PlanApprovedMessageFormat, p.Revision)})
	cmds = append(cmds, s.next()...)
	return applied(append(cmds, Emit{Event: newEvent(wire.EventPlanExecutionStarted, s.ActiveTurnID, waitingStepAttempt, wire.PlanExecutionStartedPayload{Revision: p.Revision})}))
}

func allCompleted(tasks []wire.PlanTask) bool {
	for _, t := range tasks {
		if t.Status != PlanTaskCompleted {
			return false
		}
	}
	return true
}

// UnknownToolFormat is the error of a call whose name no tool source
// offered; %s is the name.
const UnknownToolFormat = "unknown tool %s"

// failUnknown fails a call whose name no tool source offered: it never
// runs, asks no one, and the model sees "unknown tool <name>".
func (s *State) failUnknown(rec wire.ToolCall, attempt int) []Command {
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	rec.Effect, rec.RequiresApproval = wire.EffectUnclassified, false
	rec.ToolSourceReference = ""
	rec.Status, rec.Error = wire.ToolCallFailed, fmt.Sprintf(UnknownToolFormat, rec.ToolName)
	s.ToolCalls = append(s.ToolCalls, rec)
	return []Command{
		Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect),
		}).forStep(step)},
		Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(rec.Status),
		}).forStep(step)},
	}
}
