package chat

import (
	"bytes"
	"encoding/json"
)

// Snapshot is a session's state in the API's browser form.
type Snapshot struct {
	SessionID         string          `json:"session_id"`
	Agent             string          `json:"agent"`
	State             *State          `json:"state"`
	Messages          []Message       `json:"messages"`
	PendingInterrupts []Interrupt     `json:"pending_interrupts"`
	ToolCalls         []ToolCall      `json:"tool_calls"`
	Usage             Usage           `json:"usage"`
	QueuedMessages    []QueuedMessage `json:"queued_messages"`
	QueuedCount       int             `json:"queued_message_count"`
}

// Session statuses.
const (
	StatusWaitingForUserMessage = "waiting_for_user_message"
	StatusRunningModel          = "running_model"
	StatusRunningTools          = "running_tools"
)

// State is the session's position; a snapshot of a session that has not
// started yet has none.
type State struct {
	Status        string `json:"status"`
	ActiveTurnID  string `json:"active_turn_id,omitempty"`
	LastTurnError string `json:"last_turn_error,omitempty"`
	TurnCount     int    `json:"turn_count"`
}

// Idle reports a session with no active turn and no queued message: a new
// message starts a turn at once.
func (s Snapshot) Idle() bool {
	return (s.State == nil || s.State.ActiveTurnID == "") && s.QueuedCount == 0 && len(s.QueuedMessages) == 0
}

// ActiveTurnID is the active turn, or "".
func (s Snapshot) ActiveTurnID() string {
	if s.State == nil {
		return ""
	}
	return s.State.ActiveTurnID
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one stored message. An assistant message with empty text only
// carries tool calls; a tool message holds a tool's result.
type Message struct {
	Sequence   int64  `json:"sequence"`
	Role       string `json:"role"`
	Text       string `json:"text"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	TurnID     string `json:"turn_id,omitempty"`
}

// Interrupt is a pending approval.
type Interrupt struct {
	InterruptID string `json:"interrupt_id"`
	ToolCallID  string `json:"tool_call_id"`
	ToolName    string `json:"tool_name"`
	Arguments   string `json:"arguments,omitempty"`
	Kind        string `json:"kind"`
	Deadline    string `json:"deadline,omitempty"`
}

// Tool call statuses a ToolCall can end in.
const (
	ToolCallSucceeded      = "succeeded"
	ToolCallFailed         = "failed"
	ToolCallRejected       = "rejected"
	ToolCallOutcomeUnknown = "outcome_unknown"
)

// ToolCall is one tool call of the active turn.
type ToolCall struct {
	ToolCallID       string `json:"tool_call_id"`
	ToolName         string `json:"tool_name"`
	Arguments        string `json:"arguments"`
	Effect           string `json:"effect"`
	RequiresApproval bool   `json:"requires_approval"`
	Status           string `json:"status"`
	DeferralOrder    int    `json:"deferral_order"`
	Output           string `json:"output,omitempty"`
	Error            string `json:"error,omitempty"`
	RejectionMessage string `json:"rejection_message,omitempty"`
}

// Usage counts tokens and model calls.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`
	TotalTokens       int64 `json:"total_tokens"`
	ModelCalls        int64 `json:"model_calls"`
}

func (u Usage) add(o Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + o.CachedInputTokens, ReasoningTokens: u.ReasoningTokens + o.ReasoningTokens,
		TotalTokens: u.TotalTokens + o.TotalTokens, ModelCalls: u.ModelCalls + o.ModelCalls,
	}
}

func (u Usage) sub(o Usage) Usage {
	return u.add(Usage{
		InputTokens: -o.InputTokens, OutputTokens: -o.OutputTokens, CachedInputTokens: -o.CachedInputTokens,
		ReasoningTokens: -o.ReasoningTokens, TotalTokens: -o.TotalTokens, ModelCalls: -o.ModelCalls,
	})
}

// QueuedMessage is a user message waiting for its turn.
type QueuedMessage struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
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
)

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
}

type interruptResolvedPayload struct {
	InterruptID        string `json:"interrupt_id"`
	Approved           bool   `json:"approved"`
	RejectionMessage   string `json:"rejection_message"`
	Kind               string `json:"kind"`
	CancellationReason string `json:"cancellation_reason"`
}

type usageRecordedPayload struct {
	Recorded Usage `json:"recorded"`
	Session  Usage `json:"session"`
}
