package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Plans in the chat: /plan TEXT sends TEXT in plan mode (the turn drafts a
// plan with write_todos), the plan is shown as a checklist on attach and
// whenever it changes (plan_updated), and /execute runs the current draft.

// Plan is a session's plan (snapshot.plan).
type Plan = wire.Plan

// writeTodos is the built-in tool that writes the plan.
const writeTodos = "write_todos"

// Plan statuses and task statuses.
const (
	PlanDraft     = "draft"
	PlanActive    = "active"
	PlanCompleted = "completed"
	PlanCleared   = "cleared"

	TaskPending    = "pending"
	TaskInProgress = "in_progress"
	TaskCompleted  = "completed"
)

// TaskBox is a task's checkbox: [ ] pending, [~] in progress, [x] completed.
func TaskBox(status string) string {
	switch status {
	case TaskPending:
		return "[ ]"
	case TaskInProgress:
		return "[~]"
	case TaskCompleted:
		return "[x]"
	}
	return "[?]"
}

// PlanChecklist renders a plan: a header with its revision and status, then
// one line per task with its checkbox.
func PlanChecklist(p *Plan) string {
	var b strings.Builder
	if len(p.Tasks) == 0 {
		fmt.Fprintf(&b, "Plan (revision %d, %s): no tasks\n", p.Revision, p.Status)
		return b.String()
	}
	done := 0
	for _, t := range p.Tasks {
		if t.Status == TaskCompleted {
			done++
		}
	}
	fmt.Fprintf(&b, "Plan (revision %d, %s, %d of %d done):\n", p.Revision, p.Status, done, len(p.Tasks))
	for _, t := range p.Tasks {
		fmt.Fprintf(&b, "  %s %s\n", TaskBox(t.Status), t.Content)
	}
	return b.String()
}

// PlanRefusal says why a session did not take execute_plan for revision,
// from the snapshot loaded after the refusal.
func PlanRefusal(s Snapshot, revision int) string {
	p, st := s.Plan, s.State
	switch {
	case st == nil:
		return "the session has not started"
	case p == nil:
		return "the session has no plan"
	case st.ActiveTurnID != "" && st.InteractionMode == wire.InteractionExecuting:
		return fmt.Sprintf("a plan is executing already (%s)", st.ActiveTurnID)
	case st.ActiveTurnID != "":
		return fmt.Sprintf("a turn is running (%s, %s); try again once it ends", st.ActiveTurnID, st.Status)
	case s.QueuedCount > 0 || len(s.QueuedMessages) > 0:
		return "messages are queued; the session takes a plan only with nothing queued"
	case p.Revision != revision:
		return fmt.Sprintf("the current plan is revision %d (%s)", p.Revision, p.Status)
	case p.Status != PlanDraft && p.Status != PlanActive:
		return fmt.Sprintf("the plan is %s, not a draft or active", p.Status)
	}
	return "plan mode may be off for this agent (plan_mode_enabled in the worker config), " +
		"or the revision started executing and ended meanwhile"
}

// showPlan writes the plan as a checklist unless this revision and status
// were shown already; a draft gets the commands that run or revise it.
func (c *loop) showPlan(p *Plan) {
	if p == nil || (c.plan != nil && c.plan.Revision == p.Revision && c.plan.Status == p.Status) {
		return
	}
	shown := *p
	c.plan = &shown
	if p.Status == PlanCleared && len(p.Tasks) == 0 {
		c.out.endLine()
		c.out.printf("Plan (revision %d): cleared\n", p.Revision)
		return
	}
	c.out.endLine()
	c.out.printf("%s", PlanChecklist(p))
	if p.Status == PlanDraft {
		c.out.printf("(/execute runs this plan; a message revises it)\n")
	}
}

// planEvent shows the plan that plan_updated announced, from the snapshot.
func (c *loop) planEvent(ctx context.Context, p wire.PlanUpdatedPayload) {
	if c.plan != nil && c.plan.Revision == p.Revision && c.plan.Status == p.Status {
		return
	}
	if !c.reload(ctx) || c.snap.Plan == nil || c.snap.Plan.Revision < p.Revision {
		c.out.endLine()
		c.out.printf("Plan (revision %d, %s): %d tasks\n", p.Revision, p.Status, p.TaskCount)
		c.plan = &Plan{Revision: p.Revision, Status: p.Status}
		return
	}
	c.showPlan(c.snap.Plan)
}

// sendPlanning handles "/plan TEXT": TEXT goes in plan mode.
func (c *loop) sendPlanning(ctx context.Context, text string) error {
	if text == "" {
		c.note("(/plan TEXT sends TEXT in plan mode: the agent drafts a plan, which /execute runs)")
		return nil
	}
	_, err := c.send(ctx, "the planning message", "(the session did not accept the planning message: plan mode may be off for this agent)", func(ctx context.Context) (bool, error) {
		return c.s.Client.SendPlanningMessage(ctx, c.s.ID, text)
	})
	return err
}

// executePlan handles "/execute": it runs the current draft (or active
// plan) by its revision, and says why when the session refuses.
func (c *loop) executePlan(ctx context.Context) error {
	if !c.reload(ctx) {
		c.note("(/execute: the snapshot did not load; try again)")
		return nil
	}
	p := c.snap.Plan
	switch {
	case p == nil:
		c.note("(/execute: there is no plan yet; /plan TEXT drafts one)")
		return nil
	case p.Status != PlanDraft && p.Status != PlanActive:
		c.note(fmt.Sprintf("(/execute: the plan (revision %d) is %s; /plan TEXT drafts a new one)", p.Revision, p.Status))
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	ok, err := c.s.Client.ExecutePlan(rctx, c.s.ID, p.Revision)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && c.s.Interactive:
		c.note(fmt.Sprintf("(/execute: %v)", err))
	case err != nil:
		return fmt.Errorf("execute plan revision %d: %w", p.Revision, err)
	case !ok:
		reason := "the session refused it"
		if c.reload(ctx) {
			reason = PlanRefusal(c.snap, p.Revision)
		}
		c.note(fmt.Sprintf("(/execute: plan revision %d did not run: %s)", p.Revision, reason))
	default:
		c.busy = true
	}
	return nil
}

// helpText lists the chat's commands.
const helpText = `(commands:
  /plan TEXT   send TEXT in plan mode: the agent drafts a plan (a checklist) and does nothing yet
  /execute     run the current draft plan; a plain message revises the draft instead
  /model NAME  use one of the models the agent allows from the next turn; /model shows it, /model - resets it
  /stop        stop the running turn now (Ctrl-C does too; Ctrl-C again quits)
  /steer TEXT  end the running turn at its next safe step and start the next turn with TEXT
  /help        this list
 an approval: y approves, r rejects with a reason, anything else rejects; a question: its choice's number or your words, - declines;
 a message typed while a turn runs: q queues it for after the turn, s steers the turn with it)`
