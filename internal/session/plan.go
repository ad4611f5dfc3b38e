package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Plans: the write_todos built-in replaces the session's plan as a whole.
// Each successful call writes revision + 1: no tasks is cleared, every task
// completed is completed, anything else is active. The call is final when
// the model's response is recorded (no tool Step runs); the session writes
// plan_updated. Plan mode (drafts, planning turns, execute_plan) is not
// built yet (issue #11).

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

// EventPlanUpdated is written when write_todos changes the plan.
const EventPlanUpdated = "plan_updated"

type planUpdatedPayload struct {
	Revision  int    `json:"revision"`
	Status    string `json:"status"`
	TaskCount int    `json:"task_count"`
}

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
func parseTodos(args string) ([]pluginapi.PlanTask, error) {
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
	tasks := []pluginapi.PlanTask{}
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
		tasks = append(tasks, pluginapi.PlanTask{Content: content, Status: status})
	}
	return tasks, nil
}

// writePlan replaces the plan with tasks as the next revision.
func (s *State) writePlan(tasks []pluginapi.PlanTask) pluginapi.Plan {
	rev := 1
	if s.Plan != nil {
		rev = s.Plan.Revision + 1
	}
	status := PlanActive
	switch {
	case len(tasks) == 0:
		status = PlanCleared
	case allCompleted(tasks):
		status = PlanCompleted
	}
	s.Plan = &pluginapi.Plan{Revision: rev, Status: status, Tasks: tasks}
	return *s.Plan
}

func allCompleted(tasks []pluginapi.PlanTask) bool {
	for _, t := range tasks {
		if t.Status != PlanTaskCompleted {
			return false
		}
	}
	return true
}
