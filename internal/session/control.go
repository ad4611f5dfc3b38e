package session

import (
	"slices"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Turn control: steering, queued messages, turn cancellation and closing
// (the spec's "Steering and turn cancellation", Flow shape rows
// ApplyTurnControl and FinishTurnCancellation).
//
// steer_user_message moves a queued message (or new text) into Steered and
// marks the active turn steered. A steered turn ends at its next safe Step
// boundary: a running model call or compaction finishes (a final answer
// still completes the turn), a started tool runs to its end, and so does a
// started tool task, questions included; every wait that has not started a
// tool (approvals, questions no task asked, durable waits, tool Steps that
// have not passed their started marker) is recorded rejected with the
// reason "steered". ApplyTurnControl then ends the turn with the runner's
// unfinished-turn messages or the note of the calls that ran, writes
// turn_steered, and the next turn starts with every steered message, in
// order.
//
// cancel_turn stops the turn now: it cancels a running model call or
// compaction (whose answer is dropped; its usage still counts), every wait,
// and the next poll of every started task; a started task is abandoned
// (CancelToolTask asks the runner to stop it, best effort, and the call
// records outcome_unknown). A tool that has started still runs to its end.
// The turn ends with turn_cancelled and no new turn: messages queued or
// steered before then start the next turn as usual, so none is lost.
//
// close_session lets the running turn and the messages already accepted
// finish, refuses new ones, and then completes the session's workflow; the
// closed session stays readable.

// Turn control requests of the active turn (State.Control).
const (
	controlNone      = ""
	controlSteered   = wire.CancellationSteered
	controlCancelled = wire.CancellationTurnCancelled
	// controlParentCancelled cancels a sub-agent's turn for its parent.
	controlParentCancelled = wire.CancellationParentCancelled
)

// What the model sees as the result of a call that a steer or a cancel
// stopped before it ran (the spec's texts).
const (
	SteeredToolResult   = `{"status":"cancelled","reason":"superseded_by_steered_user_message"}`
	CancelledToolResult = `{"status":"cancelled","reason":"turn_cancelled_by_user"}`
)

// Send modes of send_user_message (client.SendMode*).
const (
	sendQueue        = wire.SendModeQueue
	sendSteer        = wire.SendModeSteer
	sendInterrupt    = wire.SendModeInterrupt
	sendRejectIfBusy = wire.SendModeRejectIfBusy
)

// SessionClosedReason refuses a message to a session that close_session
// closed.
const SessionClosedReason = wire.SessionClosedReason

// Requests of turn control.
type (
	// SteerUserMessage is steer_user_message: exactly one of MessageID (a
	// queued message) and Text (new text, or TextRef for a stored one).
	SteerUserMessage struct {
		MessageID string
		Text      string
		TextRef   string
		PlanMode  bool
	}
	// DeleteQueuedMessage is delete_queued_message.
	DeleteQueuedMessage struct {
		MessageID string
	}
	// CancelTurn is cancel_turn.
	CancelTurn struct {
		TurnID string
	}
	// CloseSession is close_session.
	CloseSession struct{}
	// TaskCancelDone is the end of a CancelToolTask Step: Detail is set
	// when its attempts were spent without reaching the runner.
	TaskCancelDone struct {
		TurnID     string
		ToolCallID string
		Detail     string
		Attempt    int
	}
)

func (SteerUserMessage) isInput()    {}
func (DeleteQueuedMessage) isInput() {}
func (CancelTurn) isInput()          {}
func (CloseSession) isInput()        {}
func (TaskCancelDone) isInput()      {}

// CancelStep cancels the Step or timer with this key (StepKey): a model
// call, a compaction, a tool Step that has not started its tool, a poll,
// or a timer. A cancelled Step's result is stale when it arrives.
type CancelStep struct {
	Key string
}

// CancelTask runs the CancelToolTask Step for an abandoned task; its result
// is TaskCancelDone.
type CancelTask struct {
	ActivityID string
	Limits     Limits
	Input      PollInput
}

func (CancelStep) isCommand() {}
func (CancelTask) isCommand() {}

// Keys of the Steps and timers a turn control may cancel. The glue files
// each future under its key.
// ModelStepTurn returns the turn of a model call's Step key (RunModel or
// CompactContext), for the fast path of a cancel; false for other keys.
func ModelStepTurn(key string) (string, bool) {
	if turn, ok := strings.CutPrefix(key, "model:"); ok {
		return turn, true
	}
	return strings.CutPrefix(key, "compact:")
}

func modelStepKey(turn string) string             { return "model:" + turn }
func compactStepKey(turn string) string           { return "compact:" + turn }
func toolStepKey(turn, call string) string        { return "tool:" + turn + "/" + call }
func pollStepKey(turn, call string) string        { return "poll:" + turn + "/" + call }
func taskTimerKey(turn, call string) string       { return "task-timer:" + turn + "/" + call }
func waitTimerKey(turn, call string) string       { return "wait-timer:" + turn + "/" + call }
func cancelTaskActivity(turn, call string) string { return toolStep(turn, call) + "/cancel" }

// StepKey returns the key under which the glue files the future of a
// command, or "" for a command no turn control cancels.
func StepKey(cmd Command, turnID string) string {
	switch c := cmd.(type) {
	case RunModel:
		return modelStepKey(c.Input.TurnID)
	case CompactContext:
		return compactStepKey(c.Input.Turn.TurnID)
	case RunTool:
		return toolStepKey(c.Input.TurnID, c.Input.ToolCall.ToolCallID)
	case RunPoll:
		return pollStepKey(c.Input.TurnID, c.Input.ToolCall.ToolCallID)
	case StartTaskTimer:
		return taskTimerKey(turnID, c.ToolCallID)
	case StartWaitTimer:
		return waitTimerKey(turnID, c.ToolCallID)
	case StartEscalationTimer:
		return escalationKey(c.InterruptID, c.Rule)
	}
	return ""
}

// Finished reports that a closed session has nothing left to do: its
// workflow completes.
func (s *State) Finished() bool {
	return s.Closed && s.Idle() && len(s.Queued) == 0 && len(s.Steered) == 0
}

// busy reports a turn that runs or messages that wait for one.
func (s *State) busy() bool {
	return s.Phase != phaseNone || len(s.Queued) > 0 || len(s.Steered) > 0
}

// closeSession applies close_session: true, also when it is already
// closed.
func (s *State) closeSession() Result {
	if !s.Started {
		return Result{}
	}
	cmds := []Command(nil)
	if !s.Closed {
		cmds = s.closeBackground()
	}
	s.Closed = true
	if s.Idle() && len(s.Queued) == 0 {
		s.Status = wire.StatusClosed
	}
	return applied(cmds)
}

// refused is the Result of a request the session refuses with an error
// (the client gets the error, not false).
func refused(reason string) Result { return Result{Refusal: reason} }

// deleteQueuedMessage removes a queued message; false for one that is not
// queued (any more).
func (s *State) deleteQueuedMessage(d DeleteQueuedMessage) Result {
	i := slices.IndexFunc(s.Queued, func(m wire.QueuedMessage) bool { return m.MessageID == d.MessageID })
	if d.MessageID == "" || d.MessageID == planExecutionMessageID || i < 0 {
		return Result{}
	}
	s.Queued = slices.Delete(s.Queued, i, i+1)
	return applied(nil)
}

// steerUserMessage applies steer_user_message.
func (s *State) steerUserMessage(in SteerUserMessage) Result {
	if !s.Started || (in.MessageID == "") == (in.Text == "" && in.TextRef == "") {
		return Result{}
	}
	if in.MessageID != "" {
		i := slices.IndexFunc(s.Queued, func(m wire.QueuedMessage) bool { return m.MessageID == in.MessageID })
		if i < 0 || in.MessageID == planExecutionMessageID || s.Phase == phaseNone {
			return Result{}
		}
		msg := s.Queued[i]
		s.Queued = slices.Delete(s.Queued, i, i+1)
		s.Steered = append(s.Steered, msg)
		return applied(s.steer())
	}
	text, refusal := s.checkNew(in.Text, in.TextRef, in.PlanMode)
	if refusal != nil {
		return *refusal
	}
	if s.Phase == phaseNone {
		// Nothing to steer: the text queues and starts the next turn at
		// once.
		s.enqueue(text, in.TextRef)
		s.Queued[len(s.Queued)-1].PlanMode = in.PlanMode
		return applied(s.next())
	}
	s.Steered = append(s.Steered, s.newMessage(text, in.TextRef, in.PlanMode))
	return applied(s.steer())
}

// checkNew checks a new user message (sent, steered with, or sent to
// interrupt): refused once the session is closed; not accepted when blank,
// in plan mode while plan mode is off, or past the message's or the
// queue's limit. It returns the text the workflow keeps.
func (s *State) checkNew(text, ref string, planMode bool) (string, *Result) {
	if s.Closed {
		r := refused(SessionClosedReason)
		return "", &r
	}
	if strings.TrimSpace(text) == "" || planMode && !s.Options.PlanModeEnabled {
		return "", &Result{}
	}
	kept, reason := s.acceptMessage(text, ref)
	if reason != "" || s.queuedBytes()+len(kept) > maxQueuedBytes {
		return "", &Result{}
	}
	return kept, nil
}

// newMessage gives a user message its ID.
func (s *State) newMessage(text, ref string, planMode bool) wire.QueuedMessage {
	s.enqueue(text, ref)
	m := s.Queued[len(s.Queued)-1]
	s.Queued = s.Queued[:len(s.Queued)-1]
	m.PlanMode = planMode
	return m
}

// steer marks the active turn steered (a cancelled turn stays cancelled)
// and stops what has not started.
func (s *State) steer() []Command {
	if s.Control != controlNone {
		return nil
	}
	s.Control = controlSteered
	if s.Phase == phaseRunningTools {
		return s.stopWaits(controlSteered)
	}
	// A model call, a compaction, a user message being built or a failure
	// being recorded runs to its end; the turn ends after it.
	return nil
}

// cancelTurn applies cancel_turn.
func (s *State) cancelTurn(in CancelTurn) Result { return s.cancelTurnFor(in, controlCancelled) }

// cancelling reports a turn control that cancels (a user's or a parent's),
// not a steer.
func cancelling(control string) bool {
	return control == controlCancelled || control == controlParentCancelled
}

// cancelTurnFor cancels the turn with reason: turn_cancelled, or
// parent_cancelled for a sub-agent whose parent cancelled.
func (s *State) cancelTurnFor(in CancelTurn, reason string) Result {
	if !s.Started || in.TurnID == "" {
		return Result{}
	}
	if in.TurnID == s.CancelledTurn {
		// A second cancel of the same turn changes nothing.
		return applied(nil)
	}
	if in.TurnID != s.ActiveTurnID || s.Phase == phaseNone {
		return Result{}
	}
	s.CancelledTurn = in.TurnID
	s.Control = reason
	switch s.Phase {
	case phaseRunningModel:
		return applied(append([]Command{CancelStep{Key: modelStepKey(s.ActiveTurnID)}}, s.applyControl()...))
	case phaseCompacting:
		s.CompactingThrough = 0
		return applied(append([]Command{CancelStep{Key: compactStepKey(s.ActiveTurnID)}}, s.applyControl()...))
	case phaseRunningTools:
		// After a steer, what it let run on (tasks, and their questions)
		// stops now too.
		return applied(s.stopWaits(reason))
	}
	// Building the user message, recording a failure, or applying a
	// steer: the turn ends when that Step does.
	return applied(nil)
}

// stopWaits stops the calls of the turn that have not started their tool:
// it records approvals, questions no task asked, and durable waits
// rejected with the reason, cancels the tool Steps that may not have
// reached their started marker, and, for a cancel, abandons the started
// tasks. The turn ends (ApplyTurnControl) once every call is final.
func (s *State) stopWaits(reason string) []Command {
	var cmds []Command
	for c := 0; c < len(s.ToolCalls); c++ {
		rec := s.ToolCalls[c]
		switch {
		case rec.Status == wire.ToolCallAwaitingApproval, rec.Status == wire.ToolCallAwaitingAnswer:
			task := rec.TaskID != ""
			if task && reason == controlSteered {
				continue // steering waits for a task's question
			}
			if i := slices.IndexFunc(s.Interrupts, func(in Interrupt) bool { return in.ToolCallID == rec.ToolCallID }); i >= 0 {
				cmds = append(cmds, s.dropInterrupt(i, reason)...)
			}
			if task {
				cmds = append(cmds, s.abandonTask(c)...)
				continue
			}
			cmds = append(cmds, s.rejectStopped(c, reason)...)
		case rec.Status == wire.ToolCallWaitingForSubAgent:
			if reason == controlSteered {
				continue // a steer lets the sub-agent answer
			}
			cmds = append(cmds, s.stopChild(c, reason)...)
		case rec.Status == wire.ToolCallWaitingForTimer:
			if w := slices.IndexFunc(s.Waits, func(w Wait) bool { return w.ToolCallID == rec.ToolCallID }); w >= 0 {
				s.Waits = slices.Delete(s.Waits, w, w+1)
			}
			s.ToolCalls[c].WaitUntil = ""
			cmds = append(cmds, CancelStep{Key: waitTimerKey(s.ActiveTurnID, rec.ToolCallID)})
			cmds = append(cmds, s.rejectStopped(c, reason)...)
		case rec.Status == wire.ToolCallWaitingForTask && rec.CancellationReason == "":
			if reason == controlSteered {
				continue
			}
			cmds = append(cmds,
				CancelStep{Key: taskTimerKey(s.ActiveTurnID, rec.ToolCallID)},
				CancelStep{Key: pollStepKey(s.ActiveTurnID, rec.ToolCallID)})
			cmds = append(cmds, s.abandonTask(c)...)
		case rec.Status == wire.ToolCallApproved:
			// The Step stops only before its started marker; a tool that
			// started runs to its end and records its result.
			cmds = append(cmds, CancelStep{Key: toolStepKey(s.ActiveTurnID, rec.ToolCallID)})
		}
	}
	return cmds
}

// dropInterrupt removes pending interrupt i, stopped by a turn control.
func (s *State) dropInterrupt(i int, reason string) []Command {
	in := s.Interrupts[i]
	s.removeInterrupt(i)
	var cmds []Command
	if in.DeadlineUnixMs > 0 {
		cmds = append(cmds, CancelTimer{InterruptID: in.InterruptID})
	}
	return append(cmds, Emit{Event: newEvent(wire.EventInterruptResolved, s.ActiveTurnID, waitingStepAttempt, wire.InterruptResolvedPayload{
		InterruptID: in.InterruptID, Approved: false, Kind: string(in.Kind), CancellationReason: reason,
	}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))})
}

// rejectStopped records call c rejected by a turn control.
func (s *State) rejectStopped(c int, reason string) []Command {
	rec := &s.ToolCalls[c]
	rec.CancellationReason = reason
	rec.RejectionMessage = SteeredToolResult
	if cancelling(reason) {
		rec.RejectionMessage = CancelledToolResult
	}
	return s.finishCall(c, wire.ToolCallRejected, waitingStepAttempt)
}

// abandonTask hands a started task to CancelToolTask: its polls stop, and
// the call records outcome_unknown once the Step ends.
func (s *State) abandonTask(c int) []Command {
	rec := &s.ToolCalls[c]
	rec.Status = wire.ToolCallWaitingForTask
	rec.CancellationReason = s.Control
	if !cancelling(s.Control) {
		rec.CancellationReason = controlCancelled
	}
	rec.TaskAnswerPending = nil
	return []Command{s.cancelTask(*rec)}
}

func (s *State) cancelTask(rec wire.ToolCall) CancelTask {
	return CancelTask{
		ActivityID: cancelTaskActivity(s.ActiveTurnID, rec.ToolCallID),
		Limits:     CancelTaskLimits,
		Input:      PollInput{Agent: s.Options.Agent, SessionID: s.SessionID, TurnID: s.ActiveTurnID, ToolCall: rec, HostSource: s.hostSource(rec)},
	}
}

// taskCancelDone records an abandoned task's call outcome_unknown.
func (s *State) taskCancelDone(d TaskCancelDone) Result {
	if d.TurnID != s.ActiveTurnID {
		return Result{}
	}
	c := s.findCall(d.ToolCallID)
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallWaitingForTask || s.ToolCalls[c].CancellationReason == "" {
		return Result{}
	}
	rec := &s.ToolCalls[c]
	rec.Error = "the turn was cancelled while the tool task " + rec.TaskID + " ran; it may have taken effect"
	if d.Detail != "" {
		rec.Error += "; CancelToolTask failed: " + d.Detail
	}
	return applied(s.finishCall(c, wire.ToolCallOutcomeUnknown, max(d.Attempt, 1)))
}

// toModel goes on to the turn's next model call, or ends a steered or
// cancelled turn without one (ApplyTurnControl).
func (s *State) toModel() []Command {
	if s.Control != controlNone {
		return s.applyControl()
	}
	if s.RecoveryError != "" {
		return s.failTurn(s.RecoveryError)
	}
	if reason := s.maxTurnsReached(); reason != "" {
		return s.failTurn(reason)
	}
	s.Phase = phaseRunningModel
	s.Status = wire.StatusRunningModel
	return []Command{s.runModel()}
}

// applyControl starts ApplyTurnControl: the runner's unfinished-turn
// messages, or the note of the calls that ran, end the turn.
func (s *State) applyControl() []Command {
	s.Phase = phaseApplyingControl
	in := TurnFailureInput{Turn: s.turnInput(), Note: BuildTurnFailureNote(s.ToolCalls), NoteOnlyWithoutUnfinished: true}
	if s.Options.Messages.Store {
		in.Turn.Store = s.storeWork()
	}
	return []Command{RecordTurnFailure{Input: in, Step: wire.StepApplyTurnControl}}
}

// applyingControl is the phase of ApplyTurnControl. The result of a model
// call the cancel dropped still counts its usage.
func (s *State) applyingControl(in Input) Result {
	switch in := in.(type) {
	case TurnFailureRecorded:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		return applied(s.controlApplied(in.Messages, in.Stored, in.Attempt))
	case TurnFailureRecordFailed:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		if s.Options.Messages.Store {
			s.LastTurnError = "the turn's unfinished-turn messages could not be stored"
			return applied(s.controlApplied(nil, &StoreResult{}, in.Attempt))
		}
		var msgs []contract.FrameworkMessage
		if note := BuildTurnFailureNote(s.ToolCalls); note != "" {
			msgs = append(msgs, contract.FrameworkMessage{Role: contract.RoleUser, Text: note})
		}
		return applied(s.controlApplied(msgs, nil, in.Attempt))
	case ModelStepDone:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		// The answer is dropped; what the call used is not.
		out := in.Outcome
		var u *contract.Usage
		switch {
		case out.TurnCompleted != nil:
			u = &out.TurnCompleted.Usage
		case out.ToolCallsRequested != nil:
			u = &out.ToolCallsRequested.Usage
		}
		if u == nil {
			return Result{}
		}
		cmds := s.recordUsage(*u, out.Attempt)
		s.chargeSpend(*u, out.Spend)
		return applied(cmds)
	case ContextCompacted:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		// The summary is dropped with the cancelled compaction; its call's
		// usage counts.
		cmds := s.recordUsage(in.Outcome.Usage, in.Outcome.Attempt)
		s.chargeSpend(in.Outcome.Usage, in.Outcome.Spend)
		return applied(cmds)
	}
	return Result{}
}

// controlApplied stores the unfinished-turn messages and ends the turn with
// turn_steered or turn_cancelled; the next turn starts with the steered
// messages, else the queued ones.
func (s *State) controlApplied(msgs []contract.FrameworkMessage, stored *StoreResult, attempt int) []Command {
	if reason := s.checkStored(stored); reason != "" {
		s.LastTurnError = reason
		stored = nil
	}
	count := s.store(msgs, stored)
	turn, control, reason := s.ActiveTurnID, s.Control, s.LastTurnError
	steered := len(s.Steered)
	cmds := s.endTurn()
	s.LastTurnError = reason
	if cancelling(control) {
		cmds = append(cmds, Emit{Event: newEvent(wire.EventTurnCancelled, turn, attempt, wire.TurnCancelledPayload{MessageCount: count})})
	} else {
		cmds = append(cmds, Emit{Event: newEvent(wire.EventTurnSteered, turn, attempt, wire.TurnSteeredPayload{SteeredMessageCount: steered, MessageCount: count})})
	}
	return append(cmds, s.next()...)
}

// sendMode applies the send modes beyond queue.
func (s *State) sendMode(in SendUserMessage) Result {
	switch in.Mode {
	case sendSteer:
		return s.steerUserMessage(SteerUserMessage{Text: in.Text, TextRef: in.TextRef, PlanMode: in.PlanMode})
	case sendRejectIfBusy:
		if s.busy() {
			return Result{}
		}
	case sendInterrupt:
		if s.Phase != phaseNone {
			text, refusal := s.checkNew(in.Text, in.TextRef, in.PlanMode)
			if refusal != nil {
				return *refusal
			}
			// The message goes first: the next turn starts with it.
			s.Steered = append(s.Steered, s.newMessage(text, in.TextRef, in.PlanMode))
			r := s.cancelTurn(CancelTurn{TurnID: s.ActiveTurnID})
			r.Accepted = true
			return r
		}
	}
	in.Mode = sendQueue
	return s.sendUserMessage(in)
}

// settlesAtOnce reports a call that RunModel's own commit settles even in
// a steered turn: write_todos, and a built-in call whose arguments are
// invalid.
func (s *State) settlesAtOnce(rec wire.ToolCall) bool {
	if s.subAgentTool(rec.ToolName) != nil {
		_, err := parseDelegate(rec.Arguments)
		return err != nil
	}
	if !s.builtIn(rec.ToolName) {
		return false
	}
	switch rec.ToolName {
	case BuiltInAskUser:
		_, err := parseAskUser(rec.Arguments)
		return err != nil
	case BuiltInDurableWait:
		maxMs := s.Options.MaxDurableWaitMs
		if maxMs <= 0 {
			maxMs = DefaultMaxDurableMs
		}
		_, _, err := parseDurableWait(rec.Arguments, maxMs)
		return err != nil
	}
	return true
}

// deferStopped records a call of a steered turn's model response rejected
// at once; the caller resumes the turn once every call is recorded.
func (s *State) deferStopped(rec wire.ToolCall, attempt int) []Command {
	if s.builtIn(rec.ToolName) || s.subAgentTool(rec.ToolName) != nil || s.backgroundTool(rec.ToolName) {
		rec.Effect, rec.RequiresApproval = wire.EffectRead, false
	}
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	rec.Status = wire.ToolCallRejected
	rec.CancellationReason = s.Control
	rec.RejectionMessage = SteeredToolResult
	if cancelling(s.Control) {
		rec.RejectionMessage = CancelledToolResult
	}
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
