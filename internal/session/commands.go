package session

import (
	"encoding/json"
	"fmt"
)

// Command is work Apply asks the workflow glue to do, in order. Commands
// carry everything the glue needs: it never reads the State.
type Command interface{ isCommand() }

// BuildUserMessage runs the BuildUserMessage local activity; its result is
// the input UserMessageBuilt or UserMessageFailed.
type BuildUserMessage struct {
	Input BuildUserMessageInput
}

// RunModel starts the RunModel Step with the spec's limits; its result is
// ModelStepDone or ModelStepFailed.
type RunModel struct {
	Input  TurnInput
	Limits Limits
}

// RunTool starts a tool Step: Step names the activity (CallTool, or
// CallSingleAttemptTool with one attempt), ActivityID is stable for the
// call so its events and history entries group. Its result is ToolStepDone
// or ToolStepFailed.
type RunTool struct {
	Step       string
	ActivityID string
	Limits     Limits
	Input      ToolInput
}

// StartTimer arms the deadline timer of a pending interrupt, DelayMs from
// now (whole seconds); it fires DeadlineTimerFired.
type StartTimer struct {
	InterruptID string
	DelayMs     int64
}

// StartWaitTimer arms the durable timer of a durable_wait call, DelayMs
// from now (whole seconds); it fires WaitTimerFired.
type StartWaitTimer struct {
	ToolCallID string
	DelayMs    int64
}

// StartTaskTimer arms the timer before the next poll of a tool task,
// DelayMs from now; it fires TaskPollTimerFired.
type StartTaskTimer struct {
	ToolCallID string
	DelayMs    int64
}

// RunPoll runs one PollToolTask Step; its result is TaskPollDone, or
// TaskPollFailed once its attempts are spent.
type RunPoll struct {
	ActivityID string
	Limits     Limits
	Input      PollInput
}

// CancelTimer cancels the deadline timer of an interrupt that was
// resolved.
type CancelTimer struct {
	InterruptID string
}

// RecordTurnFailure runs the RecordTurnFailure local activity: the
// runner's unfinished-turn messages, then the note as a user message when
// it is not empty. Its result is TurnFailureRecorded, or
// TurnFailureRecordFailed when the runner could not be reached.
type RecordTurnFailure struct {
	Input TurnFailureInput
	// Step names the local activity: RecordTurnFailure (""), or
	// ApplyTurnControl, which ends a steered or cancelled turn the same way.
	Step string
}

// Emit writes a live event. The glue never writes it again on replay.
type Emit struct{ Event Event }

func (BuildUserMessage) isCommand()  {}
func (FailSession) isCommand()       {}
func (CompactContext) isCommand()    {}
func (RunModel) isCommand()          {}
func (RunTool) isCommand()           {}
func (StartTimer) isCommand()        {}
func (StartWaitTimer) isCommand()    {}
func (StartTaskTimer) isCommand()    {}
func (RunPoll) isCommand()           {}
func (CancelTimer) isCommand()       {}
func (RecordTurnFailure) isCommand() {}
func (Emit) isCommand()              {}

// Event is one live event. Payload is a JSON object.
type Event struct {
	Type   string `json:"type"`
	TurnID string `json:"turn_id,omitempty"`
	// Attempt is the attempt of the Step the event reports: a RunModel or
	// tool Step's attempt, or 1 for a waiting Step (an approval).
	Attempt int `json:"attempt"`
	// Step is the activity ID of the tool Step an event is about, so a UI
	// groups it with that Step's own events; empty for turn-level events.
	// The glue turns it into the event's step_execution_id.
	Step    string          `json:"step,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

func (e Event) forStep(step string) Event {
	e.Step = step
	return e
}

// toolStep is the activity ID of a tool call's Step.
func toolStep(turnID, toolCallID string) string { return turnID + "/" + toolCallID }

// newEvent marshals a payload struct. The payloads hold no maps, so the
// output is deterministic; workflowcheck cannot see that through the json
// package's reflection.
//
//workflowcheck:ignore
func newEvent(typ, turnID string, attempt int, payload any) Event {
	b, err := json.Marshal(payload) //workflowcheck:ignore
	if err != nil {
		// Payloads are fixed structs of strings, numbers and bools.
		panic(fmt.Sprintf("session: marshal %s payload: %v", typ, err))
	}
	if attempt < 1 {
		attempt = 1
	}
	return Event{Type: typ, TurnID: turnID, Attempt: attempt, Payload: b}
}

// waitingStepAttempt is the attempt of a waiting Step (AwaitToolApproval):
// it has one.
const waitingStepAttempt = 1

// FailSession fails the session's workflow at once, without a retry: a
// start it cannot take (invalid settings). Reason starts with the spec's
// reason constant.
type FailSession struct {
	Reason string
}

// CompactContext starts the CompactContext Step with RunModel's limits; its
// result is ContextCompacted or CompactionFailed.
type CompactContext struct {
	Input  CompactInput
	Limits Limits
}
