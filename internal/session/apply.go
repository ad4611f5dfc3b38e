package session

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Input is one thing that happens to a session: a request from a client,
// the result of a Step, a timer that fired. State.Apply takes every input;
// the workflow glue turns what the engine delivers into inputs and the
// commands Apply returns into engine calls.
type Input interface{ isInput() }

// Requests.
type (
	// Start is StartAgentSession: the session begins, and a non-blank
	// initial message starts the first turn.
	Start struct {
		InitialMessage string
		// InitialMessageRef is the store reference of an initial message
		// sent by reference; InitialMessage then holds its beginning.
		InitialMessageRef string
		// SessionSettings is the JSON of the session's first settings
		// (empty for none).
		SessionSettings string
		// APIToken names the API token that started the session; its
		// spend limits apply.
		APIToken string
		// Fork, when set, starts the session as a fork (see fork.go).
		Fork *wire.ForkStart
		// SubAgent, when set, starts the session as a sub-agent of
		// another (see subagent.go).
		SubAgent *wire.SubAgentStart
	}
	// Continued starts a new run of the session after continue-as-new: the
	// carried state goes on where the last run stopped. A run continues as
	// new only when no Step runs, so the Steps the turn is waiting for are
	// started again (they never started), and deadline timers re-armed.
	Continued struct {
		NowMs int64
	}
	// SendUserMessage is send_user_message: it queues a message. Rejected
	// for blank text, text over MaxUserMessageBytes, and a reference in a
	// session without the store.
	SendUserMessage struct {
		Text string
		// TextRef is the store reference of a text sent by reference
		// (Text holds its beginning).
		TextRef string
		// PlanMode starts a planning turn; refused when plan mode is off.
		PlanMode bool
		// Mode is the send mode: "" or "queue", "steer", "interrupt",
		// "reject_if_busy" (client.SendMode*).
		Mode string
	}
	// ExecutePlan is execute_plan: the user approved a plan revision.
	ExecutePlan struct {
		Revision int
	}
	// UpdateSessionSettings is update_session_settings: its JSON object
	// replaces the settings the next turn starts with ({} clears them).
	// Rejected before the session started, and for anything but one
	// object of at most MaxSessionSettingsBytes plus the tolerance.
	UpdateSessionSettings struct {
		Settings string
	}
	// ResolveInterrupt is resolve_interrupt: it approves or rejects a
	// pending approval. Rejected when the interrupt is not pending, its
	// deadline passed, or the rejection message is over the limit.
	ResolveInterrupt struct {
		InterruptID      string
		Approved         bool
		RejectionMessage string
		// Via and By say how and by whom (wire.ResolveInterruptRequest's
		// ResolvedVia and ResolvedBy).
		Via, By string
		// NowMs is the workflow clock in Unix milliseconds.
		NowMs int64
	}
)

// Step results.
type (
	// UserMessageBuilt is the runner's user message for the turn's text,
	// or (with the store) what the Step stored.
	UserMessageBuilt struct {
		TurnID  string
		Message contract.FrameworkMessage
		Stored  *StoreResult
		Attempt int
	}
	// UserMessageFailed reports that the user message could not be built.
	UserMessageFailed struct {
		TurnID  string
		Reason  string
		Attempt int
	}
	// HoldTurns starts no new turn in this run: the worker deployment's
	// current version changed, and the session continues as new onto it
	// at its next turn boundary (the turn running finishes here).
	HoldTurns struct{}
	// ModelStepDone is the outcome of a RunModel Step.
	ModelStepDone struct {
		TurnID  string
		Outcome ModelOutcome
		NowMs   int64
	}
	// ModelStepFailed reports a RunModel Step whose attempts are spent (or
	// that failed permanently).
	ModelStepFailed struct {
		TurnID  string
		Reason  string
		Attempt int
		Stop    StepStop
	}
	// ToolStepDone is the outcome of a tool Step.
	ToolStepDone struct {
		TurnID     string
		ToolCallID string
		Outcome    ToolOutcome
		NowMs      int64
	}
	// TaskPollTimerFired reports that a tool task's poll timer fired.
	TaskPollTimerFired struct {
		TurnID     string
		ToolCallID string
	}
	// TaskPollDone is the result of a PollToolTask Step.
	TaskPollDone struct {
		TurnID     string
		ToolCallID string
		Outcome    ToolOutcome
		NowMs      int64
	}
	// TaskPollFailed reports a PollToolTask Step whose attempts are spent.
	TaskPollFailed struct {
		TurnID     string
		ToolCallID string
		Detail     string
		Attempt    int
	}
	// ToolStepFailed reports a tool Step whose attempts are spent.
	// NotStarted says that no attempt reached the tool.
	ToolStepFailed struct {
		TurnID     string
		ToolCallID string
		Detail     string
		NotStarted bool
		Attempt    int
		Stop       StepStop
	}
	// ContextCompacted is the result of a CompactContext Step.
	ContextCompacted struct {
		TurnID  string
		Outcome CompactOutcome
		NowMs   int64
	}
	// CompactionFailed reports a CompactContext Step whose attempts are
	// spent (or that failed permanently).
	CompactionFailed struct {
		TurnID  string
		Reason  string
		Attempt int
		Stop    StepStop
	}
	// TurnFailureRecorded holds the messages RecordTurnFailure built, or
	// (with the store) what it stored.
	TurnFailureRecorded struct {
		TurnID   string
		Messages []contract.FrameworkMessage
		Stored   *StoreResult
		Attempt  int
	}
	// TurnFailureRecordFailed reports that RecordTurnFailure could not reach
	// the runner: the note is stored as plain text.
	TurnFailureRecordFailed struct {
		TurnID  string
		Attempt int
	}
	// AnswerQuestion is answer_question. Rejected for an unknown or no
	// longer pending question, a blank answer, or one outside the choices
	// when free text is not allowed.
	AnswerQuestion struct {
		InterruptID string
		Answer      string
		NowMs       int64
		// Via and By are ResolveInterrupt's.
		Via, By string
	}
	// WaitTimerFired is the timer of a durable_wait call.
	WaitTimerFired struct {
		TurnID     string
		ToolCallID string
		NowMs      int64
	}
	// DeadlineTimerFired is a deadline timer of a pending interrupt.
	DeadlineTimerFired struct {
		InterruptID string
		NowMs       int64
	}
)

func (Start) isInput()                   {}
func (Continued) isInput()               {}
func (ExecutePlan) isInput()             {}
func (SendUserMessage) isInput()         {}
func (UpdateSessionSettings) isInput()   {}
func (ResolveInterrupt) isInput()        {}
func (UserMessageBuilt) isInput()        {}
func (UserMessageFailed) isInput()       {}
func (ModelStepDone) isInput()           {}
func (ModelStepFailed) isInput()         {}
func (HoldTurns) isInput()               {}
func (ToolStepDone) isInput()            {}
func (ContextCompacted) isInput()        {}
func (CompactionFailed) isInput()        {}
func (ToolStepFailed) isInput()          {}
func (TurnFailureRecorded) isInput()     {}
func (TurnFailureRecordFailed) isInput() {}
func (DeadlineTimerFired) isInput()      {}
func (AnswerQuestion) isInput()          {}
func (WaitTimerFired) isInput()          {}
func (TaskPollTimerFired) isInput()      {}
func (TaskPollDone) isInput()            {}
func (TaskPollFailed) isInput()          {}

// Result is what Apply returns: whether the input was accepted (for a
// request, the bool its client gets, false where the spec's RPC returns
// False; for a Step result or a timer, whether it belonged to the current
// turn) and the commands for the glue, in order.
type Result struct {
	Accepted bool
	Commands []Command
	// Refusal, when set, refuses a request with an error instead of false
	// (a message to a closed session).
	Refusal string
}

// Apply applies one input and returns the commands it leads to. It is the
// only way the session changes. Requests are handled in any phase; every
// other input goes to the function of the turn's phase, which owns that
// phase's rules and ignores an input that does not belong to it (a stale
// result of another turn, say).
func (s *State) Apply(in Input) Result {
	r := s.apply(in)
	if s.SubAgent != nil {
		r.Commands = append(r.Commands, s.reportToParent()...)
	}
	r.Commands = append(r.Commands, s.notifications()...)
	return r
}

func (s *State) apply(in Input) Result {
	switch in := in.(type) {
	case Start:
		return s.start(in)
	case Continued:
		s.HoldTurns = false
		return applied(append(s.resume(in.NowMs), s.resumeEscalations(in.NowMs)...))
	case HoldTurns:
		s.HoldTurns = true
		return applied(nil)
	case SendUserMessage:
		if in.Mode != "" && in.Mode != sendQueue {
			return s.sendMode(in)
		}
		return s.sendUserMessage(in)
	case SteerUserMessage:
		return s.steerUserMessage(in)
	case DeleteQueuedMessage:
		return s.deleteQueuedMessage(in)
	case CancelTurn:
		return s.cancelTurn(in)
	case CloseSession:
		return s.closeSession()
	case ExecutePlan:
		return s.executePlan(in)
	case UpdateSessionSettings:
		return s.updateSessionSettings(in)
	case SubAgentReported:
		return s.subAgentReported(in)
	case ChildStartFailed:
		return s.childStartFailed(in)
	case ChildClosed:
		return s.childClosed(in)
	case SubAgentAnswerRead:
		return s.subAgentAnswerRead(in)
	case ParentControl:
		return s.parentControl(in)
	case NotificationFailed:
		return s.notificationFailed(in)
	case EscalationTimerFired:
		return s.escalationTimerFired(in)
	}
	if !s.Started {
		return Result{}
	}
	switch s.Phase {
	case phaseBuildingUser:
		return s.buildingUser(in)
	case phaseRunningModel:
		return s.runningModel(in)
	case phaseRunningTools:
		return s.runningTools(in)
	case phaseRecordFailure:
		return s.recordingFailure(in)
	case phaseCompacting:
		return s.compacting(in)
	case phaseApplyingControl:
		return s.applyingControl(in)
	}
	// Idle: nothing runs, so every result is stale.
	return Result{}
}

// applied is the Result of an input the phase took.
func applied(cmds []Command) Result { return Result{Accepted: true, Commands: cmds} }

// resume re-creates, in a new run, the commands the turn waits on: the
// Step of its phase, the tool Steps of approved calls, and the deadline
// timers of pending interrupts. The last run continued as new before it
// started any of them.
func (s *State) resume(nowMs int64) []Command {
	switch s.Phase {
	case phaseNone:
		return s.next()
	case phaseBuildingUser:
		return []Command{s.buildUserMessage()}
	case phaseRunningModel:
		return []Command{s.runModel()}
	case phaseCompacting:
		return []Command{s.compactContext()}
	case phaseRunningTools:
		var cmds []Command
		for _, rec := range s.ToolCalls {
			if rec.Status == wire.ToolCallApproved {
				cmds = append(cmds, s.runTool(rec))
			}
		}
		for _, in := range s.Interrupts {
			if in.DeadlineUnixMs > 0 {
				cmds = append(cmds, s.deadlineTimer(in, nowMs))
			}
		}
		for _, w := range s.Waits {
			cmds = append(cmds, StartWaitTimer{ToolCallID: w.ToolCallID, DelayMs: ceilSeconds(w.UntilMs - nowMs)})
		}
		for _, rec := range s.ToolCalls {
			switch {
			case rec.Status == wire.ToolCallWaitingForTask && rec.CancellationReason != "":
				cmds = append(cmds, s.cancelTask(rec))
			case rec.Status == wire.ToolCallWaitingForTask:
				cmds = append(cmds, s.nextPoll(rec))
			}
		}
		return cmds
	case phaseRecordFailure:
		return s.failTurn(s.LastTurnError)
	case phaseApplyingControl:
		return s.applyControl()
	}
	return nil
}

// start runs StartAgentSession.
func (s *State) start(in Start) Result {
	if s.Started {
		return Result{}
	}
	s.Started = true
	s.Status = wire.StatusWaitingForUserMessage
	s.APIToken = in.APIToken
	if in.SubAgent != nil {
		if reason := checkSubAgentStart(s.SessionID, in.SubAgent); reason != "" {
			return applied([]Command{FailSession{Reason: "the sub-agent cannot start: " + reason}})
		}
		sa := *in.SubAgent
		s.SubAgent = &sa
	}
	if in.Fork != nil {
		if reason := s.startFork(in.Fork); reason != "" {
			return applied([]Command{FailSession{Reason: "the fork cannot start: " + reason}})
		}
	}
	if in.SessionSettings != "" {
		settings, err := wire.CheckSessionSettings([]byte(in.SessionSettings), wire.SessionSettingsToleranceBytes) //workflowcheck:ignore (canonical JSON of a map: keys sorted, no time or randomness)
		if err != nil {
			// The start has no answer: the session fails at once.
			return applied([]Command{FailSession{Reason: wire.InvalidStartSessionSettingsReason + ": " + strings.TrimPrefix(err.Error(), wire.ErrInvalidSessionSettings.Error()+": ")}})
		}
		s.Settings = settings
	}
	switch {
	case strings.TrimSpace(in.InitialMessage) == "":
	case !s.Options.Messages.Store && in.InitialMessageRef == "":
		// Sessions without the store took any initial message.
		s.enqueue(in.InitialMessage, "")
	default:
		// The start has no answer: a message send_user_message would
		// refuse starts no turn, and the snapshot says why.
		text, reason := s.acceptMessage(in.InitialMessage, in.InitialMessageRef)
		if reason != "" {
			s.LastTurnError = "the initial message was not taken: " + reason
			break
		}
		s.enqueue(text, in.InitialMessageRef)
	}
	return applied(s.next())
}

// MaxUserMessageBytes bounds one user message, well below Temporal's 2 MB
// payload limit.
const MaxUserMessageBytes = 256 * 1024

func (s *State) sendUserMessage(in SendUserMessage) Result {
	text, refusal := s.checkNew(in.Text, in.TextRef, in.PlanMode)
	if refusal != nil {
		return *refusal
	}
	s.enqueue(text, in.TextRef)
	s.Queued[len(s.Queued)-1].PlanMode = in.PlanMode
	return applied(s.next())
}

// updateSessionSettings replaces the settings the next turn starts with.
func (s *State) updateSessionSettings(in UpdateSessionSettings) Result {
	if !s.Started || strings.TrimSpace(in.Settings) == "null" || strings.TrimSpace(in.Settings) == "" {
		return Result{}
	}
	settings, err := wire.CheckSessionSettings([]byte(in.Settings), wire.SessionSettingsToleranceBytes) //workflowcheck:ignore (canonical JSON of a map: keys sorted)
	if err != nil {
		return Result{}
	}
	s.Settings = settings
	return applied(nil)
}

// acceptMessage checks a user message sent inline (text) or by reference
// (ref, with text its beginning) and returns the text the workflow keeps,
// or why it refuses the message.
func (s *State) acceptMessage(text, ref string) (string, string) {
	if limit := s.maxInlineMessage(); len(text) > limit {
		return "", fmt.Sprintf(messageTooLongFormat, len(text), limit)
	}
	if ref != "" {
		switch {
		case !s.Options.Messages.Store:
			return "", "this session keeps no message store to send a message by reference through"
		case !validRef(ref):
			return "", fmt.Sprintf("%q is not a message store reference (sha256:<64 hex digits>)", ref)
		}
		text = preview(text)
	}
	return text, ""
}

// maxQueuedBytes bounds the text of the messages waiting for a turn, which
// the workflow keeps in its state; a message past it is not accepted.
const maxQueuedBytes = 512 << 10

func (s *State) queuedBytes() int {
	n := 0
	for _, m := range s.Queued {
		n += len(m.Text)
	}
	for _, m := range s.Steered {
		n += len(m.Text)
	}
	for _, m := range s.TurnMore {
		n += len(m.Text)
	}
	return n
}

// maxInlineMessage is the longest text send_user_message takes inline: a
// session without the store keeps the old limit.
func (s *State) maxInlineMessage() int {
	if s.Options.Messages.Store {
		return MaxInlineMessageBytes
	}
	return MaxUserMessageBytes
}

// buildingUser is the phase that waits for the turn's user message.
func (s *State) buildingUser(in Input) Result {
	switch in := in.(type) {
	case UserMessageBuilt:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		role := in.Message.Role
		if in.Stored != nil {
			if len(in.Stored.Messages) != 1 {
				return applied(s.userMessageFailed("the step stored " + strconv.Itoa(len(in.Stored.Messages)) + " user messages; want 1"))
			}
			role = in.Stored.Messages[0].Role
		}
		if role != contract.RoleUser {
			return applied(s.userMessageFailed("build_user_message returned role " + strconv.Quote(string(role)) + "; want \"user\""))
		}
		if reason := s.checkStored(in.Stored); reason != "" {
			return applied(s.userMessageFailed(reason))
		}
		s.TurnText, s.TurnTextRef = "", ""
		seq := s.NextSequence
		s.store([]contract.FrameworkMessage{in.Message}, in.Stored)
		var cmds []Command
		if !s.TurnStartedSent {
			// turn_started once, at the turn's first user message.
			cmds = append(cmds, Emit{Event: newEvent(wire.EventTurnStarted, s.ActiveTurnID, in.Attempt, wire.TurnStartedPayload{Sequence: seq})})
		}
		if len(s.TurnMore) > 0 {
			// A turn of several steered messages builds them in order.
			msg := s.TurnMore[0]
			s.TurnMore = s.TurnMore[1:]
			s.TurnText, s.TurnTextRef = msg.Text, msg.TextRef
			s.TurnStartedSent = true
			return applied(append(cmds, s.buildUserMessage()))
		}
		s.TurnStartedSent = false
		return applied(append(cmds, s.toModel()...))
	case UserMessageFailed:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		return applied(s.userMessageFailed(in.Reason))
	}
	return Result{}
}

// userMessageFailed fails a turn whose user message could not be built.
// The user's text is kept as a plain user message, so nothing the user
// sent is lost: here without the store; with it, RecordTurnFailure stores
// it first.
func (s *State) userMessageFailed(reason string) []Command {
	// The turn's other steered messages start the next turn.
	s.Steered = append(s.TurnMore, s.Steered...)
	s.TurnMore, s.TurnStartedSent = nil, false
	if !s.Options.Messages.Store {
		s.append(contract.FrameworkMessage{Role: contract.RoleUser, Text: s.TurnText})
		s.TurnText = ""
	}
	return s.failTurn("build_user_message failed: " + reason)
}

// runningModel is the phase of a RunModel Step.
func (s *State) runningModel(in Input) Result {
	switch in := in.(type) {
	case ModelStepDone:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		s.countRetries(in.Outcome.Attempt)
		return applied(s.modelStepDone(in.Outcome, in.NowMs))
	case ModelStepFailed:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		return applied(s.failTurn(s.stepFailedReason("RunModel", s.Options.RunModel, in.Attempt, in.Stop, in.Reason)))
	}
	return Result{}
}

// runningTools is the phase of a turn's tool calls: approvals, tool Steps
// and deadlines, until every record is final and the turn resumes.
func (s *State) runningTools(in Input) Result {
	switch in := in.(type) {
	case ResolveInterrupt:
		return s.resolveInterrupt(in)
	case DeadlineTimerFired:
		return s.deadlineTimerFired(in)
	case ExtendInterrupt:
		return s.extendInterrupt(in)
	case AnswerQuestion:
		return s.answerQuestion(in)
	case WaitTimerFired:
		return s.waitTimerFired(in)
	case TaskPollTimerFired:
		return s.taskPollTimerFired(in)
	case TaskPollDone:
		return s.taskPollDone(in)
	case TaskPollFailed:
		return s.taskPollFailed(in)
	case ToolStepDone:
		c := s.runningCall(in.TurnID, in.ToolCallID)
		if c < 0 {
			return Result{}
		}
		s.countRetries(in.Outcome.Attempt)
		return applied(s.toolStepDone(c, in.Outcome, in.NowMs))
	case ToolStepFailed:
		c := s.runningCall(in.TurnID, in.ToolCallID)
		if c < 0 {
			return Result{}
		}
		rec := s.ToolCalls[c]
		own := s.Options.Tool
		if s.Options.Version >= ToolBudgetVersion {
			own = s.toolLimits(rec)
		}
		if why := s.recoveryStopped("the tool step of "+rec.ToolName+" ("+rec.ToolCallID+")", own, in.Attempt, in.Stop); why != "" && s.RecoveryError == "" {
			// The call's record is final as usual; the turn fails once
			// every call of it is (toModel).
			s.RecoveryError = why + ": " + in.Detail
		}
		if in.NotStarted && s.Control != controlNone {
			// The turn control reached the Step before its tool started.
			return applied(s.rejectStopped(c, s.Control))
		}
		return applied(s.toolStepFailed(c, in.Detail, in.NotStarted, in.Attempt))
	case TaskCancelDone:
		return s.taskCancelDone(in)
	}
	return Result{}
}

// recordingFailure is the phase of RecordTurnFailure.
func (s *State) recordingFailure(in Input) Result {
	switch in := in.(type) {
	case TurnFailureRecorded:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		return applied(s.turnFailureRecorded(in.Messages, in.Stored, in.Attempt))
	case TurnFailureRecordFailed:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		// The runner could not build the messages: keep the note as plain
		// text, so the next turn still learns what ran.
		var msgs []contract.FrameworkMessage
		if note := BuildTurnFailureNote(s.ToolCalls); note != "" {
			msgs = append(msgs, contract.FrameworkMessage{Role: contract.RoleUser, Text: note})
		}
		if s.Options.Messages.Store {
			// The store did not take them: the note and the user's text
			// are lost, and the reason says so.
			s.LastTurnError += "; the turn-failure note could not be stored"
			return applied(s.turnFailureRecorded(nil, &StoreResult{}, in.Attempt))
		}
		return applied(s.turnFailureRecorded(msgs, nil, in.Attempt))
	}
	return Result{}
}
