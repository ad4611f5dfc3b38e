package chat

import (
	"bytes"
	"encoding/json"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// The snapshot and its parts are the API's wire types; the browser form
// only leaves fields out.
type (
	Snapshot      = client.Snapshot
	State         = client.SessionState
	Message       = client.Message
	Interrupt     = client.Interrupt
	ToolCall      = pluginapi.ToolCall
	Usage         = pluginapi.Usage
	QueuedMessage = client.QueuedMessage
)

// idle reports a session with no active turn and no queued or steered
// message: a new message starts a turn at once.
func idle(s Snapshot) bool {
	return (s.State == nil || s.State.ActiveTurnID == "") && s.QueuedCount == 0 && len(s.QueuedMessages) == 0 &&
		len(s.SteeredMessages) == 0
}

// activeTurnID is the active turn, or "".
func activeTurnID(s Snapshot) string {
	if s.State == nil {
		return ""
	}
	return s.State.ActiveTurnID
}

// InterruptKindQuestion is the kind of an ask_user question.
const InterruptKindQuestion = client.InterruptKindQuestion

// Session statuses, message roles and final tool call statuses.
const (
	StatusWaitingForUserMessage = client.StatusWaitingForUserMessage
	StatusRunningModel          = client.StatusRunningModel
	StatusRunningTools          = client.StatusRunningTools

	RoleUser      = pluginapi.RoleUser
	RoleAssistant = pluginapi.RoleAssistant
	RoleTool      = pluginapi.RoleTool

	ToolCallSucceeded      = pluginapi.ToolCallSucceeded
	ToolCallFailed         = pluginapi.ToolCallFailed
	ToolCallRejected       = pluginapi.ToolCallRejected
	ToolCallOutcomeUnknown = pluginapi.ToolCallOutcomeUnknown
)

// subUsage returns u minus o.
func subUsage(u, o Usage) Usage {
	return u.Add(Usage{
		InputTokens: -o.InputTokens, OutputTokens: -o.OutputTokens, CachedInputTokens: -o.CachedInputTokens,
		ReasoningTokens: -o.ReasoningTokens, TotalTokens: -o.TotalTokens, ModelCalls: -o.ModelCalls,
	})
}

// Event is one live event of a session, as the event stream carries it.
type Event struct {
	SessionID string `json:"session_id"`
	Type      string `json:"type"`
	TurnID    string `json:"turn_id,omitempty"`
	// StepExecutionID is shared by every attempt of one Step execution.
	StepExecutionID string `json:"step_execution_id,omitempty"`
	// Attempt is the one-based Step attempt; 0 for the session's own events.
	Attempt int `json:"attempt"`
	// Payload is the event's JSON object. On the wire it is JSON text (a
	// string holding JSON); an object is accepted too.
	Payload Payload `json:"payload"`
}

// Payload is an event payload: a JSON object.
type Payload json.RawMessage

// UnmarshalJSON accepts a JSON string that holds JSON, or JSON itself.
func (p *Payload) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	*p = append((*p)[:0], b...)
	return nil
}

// MarshalJSON writes the payload as JSON text, as the server does.
func (p Payload) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte(`""`), nil
	}
	return json.Marshal(string(p))
}

// Decode unmarshals the payload into v.
func (p Payload) Decode(v any) error { return json.Unmarshal(p, v) }

// Event types.
const (
	EventTurnStarted       = "turn_started"
	EventTurnCompleted     = "turn_completed"
	EventTurnFailed        = "turn_failed"
	EventTextDelta         = "text_delta"
	EventReasoningDelta    = "reasoning_delta"
	EventToolCallDeferred  = "tool_call_deferred"
	EventToolCallStarted   = "tool_call_started"
	EventToolCallFinished  = "tool_call_finished"
	EventInterruptRaised   = "interrupt_raised"
	EventInterruptResolved = "interrupt_resolved"
	EventUsageRecorded     = "usage_recorded"
	EventCompactionStarted = "compaction_started"
	// EventCompactionFinished says a summary now replaces the older
	// messages in the model's input.
	EventCompactionFinished = "compaction_finished"
	EventSpendLimitReached  = "spend_limit_reached"
	// EventTurnSteered ends a steered turn; the next turn starts with the
	// steered messages.
	EventTurnSteered = "turn_steered"
	// EventTurnCancelled ends a turn that cancel_turn stopped.
	EventTurnCancelled = "turn_cancelled"
)

// Send modes of a message (Client.SendMessageMode).
const (
	SendModeQueue        = client.SendModeQueue
	SendModeSteer        = client.SendModeSteer
	SendModeInterrupt    = client.SendModeInterrupt
	SendModeRejectIfBusy = client.SendModeRejectIfBusy
)

// Cancellation reasons of a call that a steer or a cancel stopped before
// it ran (interrupt_resolved, ToolCall.CancellationReason).
const (
	CancellationSteered       = "steered"
	CancellationTurnCancelled = "turn_cancelled"
)

type turnSteeredPayload struct {
	SteeredMessageCount int `json:"steered_message_count"`
	MessageCount        int `json:"message_count"`
}

type compactionPayload struct {
	Generation      int   `json:"generation"`
	ThroughSequence int64 `json:"through_sequence"`
}

type textPayload struct {
	Text string `json:"text"`
}

type turnFailedPayload struct {
	Error string `json:"error"`
}

type toolCallPayload struct {
	ToolCallID       string `json:"tool_call_id"`
	ToolName         string `json:"tool_name"`
	Effect           string `json:"effect"`
	RequiresApproval bool   `json:"requires_approval"`
	Status           string `json:"status"`
}

type interruptRaisedPayload struct {
	InterruptID string `json:"interrupt_id"`
	ToolCallID  string `json:"tool_call_id"`
	ToolName    string `json:"tool_name"`
	Deadline    string `json:"deadline"`
	Kind        string `json:"kind"`
	// Question, Choices and AllowsFreeText are a question's.
	Question       string   `json:"question"`
	Choices        []string `json:"choices"`
	AllowsFreeText bool     `json:"allows_free_text"`
}

type interruptResolvedPayload struct {
	InterruptID        string `json:"interrupt_id"`
	Approved           bool   `json:"approved"`
	RejectionMessage   string `json:"rejection_message"`
	Kind               string `json:"kind"`
	Answered           bool   `json:"answered"`
	CancellationReason string `json:"cancellation_reason"`
}

type usageRecordedPayload struct {
	Recorded Usage `json:"recorded"`
	Session  Usage `json:"session"`
}
