package session

import (
	"encoding/json"
	"fmt"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
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

// Event types written by the session and by runners.
const (
	EventTurnStarted        = "turn_started"
	EventTurnCompleted      = "turn_completed"
	EventTurnFailed         = "turn_failed"
	EventTextDelta          = "text_delta"
	EventReasoningDelta     = "reasoning_delta"
	EventToolCallStarted    = "tool_call_started"
	EventToolCallFinished   = "tool_call_finished"
	EventToolCallDeferred   = "tool_call_deferred"
	EventInterruptRaised    = "interrupt_raised"
	EventInterruptResolved  = "interrupt_resolved"
	EventUsageRecorded      = "usage_recorded"
	EventCompactionStarted  = "compaction_started"
	EventCompactionFinished = "compaction_finished"
	// EventTurnRecovering is written by a Step's attempt after the first
	// (its worker crashed or was stopped, the attempt timed out, or it
	// failed and is retried), before it does anything: a retry of the
	// turn's Step is under way.
	EventTurnRecovering = "turn_recovering"
	// EventMCPToolProgress is written by the tool Step of an MCP call for
	// each progress notification of its server.
	EventMCPToolProgress = "mcp.tool_progress"
	// EventMCPTaskStatus is written when an MCP task starts and whenever
	// a poll sees its status (or status message) change.
	EventMCPTaskStatus = "mcp.task_status"
)

// TurnRecoveringPayload is the payload of turn_recovering. Step is the
// Step's type (RunModel, CallTool, CompactContext); ToolCallID and ToolName
// are a tool Step's; PreviousAttemptReachedTool says an earlier attempt of a
// tool Step had called the tool (a read or an idempotent write runs again).
type TurnRecoveringPayload struct {
	Step                       string `json:"step"`
	Attempt                    int    `json:"attempt"`
	ToolCallID                 string `json:"tool_call_id,omitempty"`
	ToolName                   string `json:"tool_name,omitempty"`
	PreviousAttemptReachedTool bool   `json:"previous_attempt_reached_tool,omitempty"`
}

// MCPTaskStatusPayload is the payload of mcp.task_status.
type MCPTaskStatusPayload struct {
	ToolCallID    string `json:"tool_call_id"`
	ToolName      string `json:"tool_name"`
	TaskID        string `json:"task_id"`
	Status        string `json:"status"`
	StatusMessage string `json:"status_message,omitempty"`
}

// MCPToolProgressPayload is the payload of mcp.tool_progress, the spec's
// five keys; total and message are null when the server sent none.
type MCPToolProgressPayload struct {
	ToolCallID string   `json:"tool_call_id"`
	ToolName   string   `json:"tool_name"`
	Progress   float64  `json:"progress"`
	Total      *float64 `json:"total"`
	Message    *string  `json:"message"`
}

// The values of interrupt_resolved's cancellation_reason besides "" (the
// spec's steering and turn cancellation remove interrupts with them).
const (
	CancellationSteered       = "steered"
	CancellationTurnCancelled = "turn_cancelled"
)

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

// ToolCallStartedPayload is the payload of tool_call_started, which a tool
// Step writes once its started marker is recorded.
type ToolCallStartedPayload struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
}

// TextPayload is the payload of text_delta and reasoning_delta, which a
// runner writes.
type TextPayload struct {
	Text string `json:"text"`
}

type turnStartedPayload struct {
	Sequence int64 `json:"sequence"`
}

type turnCompletedPayload struct {
	MessageCount int `json:"message_count"`
}

type turnFailedPayload struct {
	Error string `json:"error"`
}

type toolCallDeferredPayload struct {
	ToolCallID       string `json:"tool_call_id"`
	ToolName         string `json:"tool_name"`
	Effect           string `json:"effect"`
	RequiresApproval bool   `json:"requires_approval"`
	// The approval rule that decided the call and its decision, and the
	// shadow rule's, when rules matched (beyond the spec).
	ApprovalRule           string `json:"approval_rule,omitempty"`
	ApprovalDecision       string `json:"approval_decision,omitempty"`
	ShadowApprovalRule     string `json:"shadow_approval_rule,omitempty"`
	ShadowApprovalDecision string `json:"shadow_approval_decision,omitempty"`
}

type toolCallFinishedPayload struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	Status     string `json:"status"`
}

// interruptRaisedPayload has every field of the spec's interrupt_raised,
// empty values included: an approval has no question, no choices and no
// free text; an interrupt without a deadline has deadline "".
type interruptRaisedPayload struct {
	InterruptID    string   `json:"interrupt_id"`
	ToolCallID     string   `json:"tool_call_id"`
	ToolName       string   `json:"tool_name"`
	Deadline       string   `json:"deadline"`
	Kind           string   `json:"kind"`
	Question       string   `json:"question"`
	Choices        []string `json:"choices"`
	AllowsFreeText bool     `json:"allows_free_text"`
	// Digest binds an approval to its call (package approvaldigest); the
	// workflow glue sets it on the live event, outside the history.
	Digest string `json:"digest,omitempty"`
}

// interruptResolvedPayload has every field of the spec's
// interrupt_resolved. Answered is false for approvals; CancellationReason is
// "steered", "turn_cancelled" or "" (a passed deadline is approved: false
// with the deadline text as rejection_message).
type interruptResolvedPayload struct {
	InterruptID        string `json:"interrupt_id"`
	Approved           bool   `json:"approved"`
	RejectionMessage   string `json:"rejection_message"`
	Kind               string `json:"kind"`
	Answered           bool   `json:"answered"`
	CancellationReason string `json:"cancellation_reason"`
}

type usageRecordedPayload struct {
	Recorded pluginapi.Usage `json:"recorded"`
	Session  pluginapi.Usage `json:"session"`
}

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

type compactionStartedPayload struct {
	ThroughSequence int64 `json:"through_sequence"`
}

type compactionFinishedPayload struct {
	Generation      int   `json:"generation"`
	ThroughSequence int64 `json:"through_sequence"`
}
