package session

import (
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Tool tasks: a tool Step that returns ToolTaskStarted hands remote work to
// the session. The call waits in waiting_for_task; PollToolTask Steps poll
// it after a durable timer of the task's interval (1 s to a day), until a
// poll returns a result or an error. A poll may ask to be polled again
// (ToolTaskPending, with a continuation) or ask the user a question
// (ToolInputRequested), whose answer, decline or passed deadline the next
// poll hands over at once as PollToolTaskRequest.PendingAnswer. No Step
// holds a connection while the work runs; a worker restart only delays the
// next poll. A task whose turn is cancelled is abandoned: its polls stop
// and the CancelToolTask Step asks the runner to stop it (control.go).

// Limits of a tool task.
const (
	minPollSeconds   = 1
	maxPollSeconds   = 24 * 3600
	maxTaskIDBytes   = 1024
	pollStepAttempts = 3
)

// pollSeconds rounds a runner's poll interval into 1 s..1 day.
func pollSeconds(n int) int { return min(max(n, minPollSeconds), maxPollSeconds) }

// taskStarted applies a tool Step's ToolTaskStarted for record c.
func (s *State) taskStarted(c int, t TaskStart, attempt int) []Command {
	rec := &s.ToolCalls[c]
	if t.TaskID == "" || len(t.TaskID) > maxTaskIDBytes {
		// The remote work may have started; without a usable handle
		// nothing can poll it, so the effect decides.
		return s.toolStepFailed(c, "the tool started a task without a usable task ID (1 to 1024 bytes)", false, attempt)
	}
	rec.TaskID = t.TaskID
	rec.TaskPollIntervalSeconds = pollSeconds(t.PollIntervalSeconds)
	rec.Status = wire.ToolCallWaitingForTask
	cmds := []Command{
		Emit{Event: newEvent(wire.EventToolTaskStarted, s.ActiveTurnID, max(attempt, 1), wire.ToolTaskStartedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, TaskID: rec.TaskID,
		}).forStep(toolStep(s.ActiveTurnID, rec.ToolCallID))},
	}
	if cancelling(s.Control) {
		// The turn was cancelled while the tool started its task.
		return append(cmds, s.abandonTask(c)...)
	}
	return append(cmds, s.nextPoll(*rec))
}

// nextPoll is what a waiting task does next: a poll at once when it holds
// an answer to hand over, else the timer before the next poll.
func (s *State) nextPoll(rec wire.ToolCall) Command {
	if rec.TaskAnswerPending != nil {
		return s.runPoll(rec)
	}
	return StartTaskTimer{ToolCallID: rec.ToolCallID, DelayMs: int64(pollSeconds(rec.TaskPollIntervalSeconds)) * 1000}
}

func (s *State) runPoll(rec wire.ToolCall) RunPoll {
	limits := s.Options.Tool
	limits.MaximumAttempts = pollStepAttempts
	return RunPoll{
		ActivityID: toolStep(s.ActiveTurnID, rec.ToolCallID),
		Limits:     limits,
		Input: PollInput{
			Agent: s.Options.Agent, SessionID: s.SessionID, TurnID: s.ActiveTurnID,
			ToolCall: rec, StoreOutput: s.Options.Messages.Store, HostSource: s.hostSource(rec),
		},
	}
}

// waitingTask finds the record of the active turn that waits for its task.
func (s *State) waitingTask(turnID, toolCallID string) int {
	if turnID != s.ActiveTurnID {
		return -1
	}
	c := s.findCall(toolCallID)
	// An abandoned task (CancellationReason set) is polled no more.
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallWaitingForTask || s.ToolCalls[c].CancellationReason != "" {
		return -1
	}
	return c
}

func (s *State) taskPollTimerFired(t TaskPollTimerFired) Result {
	c := s.waitingTask(t.TurnID, t.ToolCallID)
	if c < 0 {
		return Result{}
	}
	return applied([]Command{s.runPoll(s.ToolCalls[c])})
}

// taskPollDone applies a poll's outcome. The answer it handed over is
// delivered.
func (s *State) taskPollDone(p TaskPollDone) Result {
	c := s.waitingTask(p.TurnID, p.ToolCallID)
	if c < 0 {
		return Result{}
	}
	rec := &s.ToolCalls[c]
	rec.TaskAnswerPending = nil
	out := p.Outcome
	switch {
	case out.TaskPending != nil && out.Output == nil && out.Error == nil && out.InputRequested == nil && out.TaskStarted == nil:
		rec.TaskPollIntervalSeconds = pollSeconds(out.TaskPending.PollIntervalSeconds)
		rec.InputContinuation = out.TaskPending.Continuation
		return applied([]Command{s.nextPoll(*rec)})
	case out.TaskStarted != nil:
		return applied(s.toolStepFailed(c, "the poll returned task_started, which only the tool Step may return", false, out.Attempt))
	}
	return applied(s.toolStepDone(c, out, p.NowMs))
}

// taskPollFailed records a task whose poll spent its attempts: failed for
// a read call, outcome_unknown otherwise (the task may still run).
func (s *State) taskPollFailed(p TaskPollFailed) Result {
	c := s.waitingTask(p.TurnID, p.ToolCallID)
	if c < 0 {
		return Result{}
	}
	return applied(s.toolStepFailed(c, "PollToolTask failed: "+p.Detail, false, p.Attempt))
}

// taskQuestionResolved hands the resolution of a task's question to the
// task: the next poll runs at once and carries it.
func (s *State) taskQuestionResolved(c int, a wire.QuestionAnswer) Command {
	rec := &s.ToolCalls[c]
	rec.Status = wire.ToolCallWaitingForTask
	rec.TaskAnswerPending = &a
	return s.runPoll(*rec)
}
