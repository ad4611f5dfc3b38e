package chat

import (
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
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

// The HTTP client's types and constants, under their old names here.
type (
	Client              = httpclient.Client
	APIError            = httpclient.APIError
	StartRequest        = httpclient.StartRequest
	Resolution          = httpclient.Resolution
	Agent               = httpclient.Agent
	Event               = httpclient.Event
	Payload             = httpclient.Payload
	Delivered           = httpclient.Delivered
	EventStream         = httpclient.EventStream
	MalformedEventError = httpclient.MalformedEventError
)

// NewClient is httpclient.New.
var NewClient = httpclient.New

var (
	ErrInvalidResumeToken = httpclient.ErrInvalidResumeToken
	ErrSessionClosed      = httpclient.ErrSessionClosed
)

// sessionClosed reports an API answer of 409 session_closed.
func sessionClosed(err error) bool { return httpclient.IsSessionClosed(err) }

// closedError is ErrSessionClosed for one session, said plainly.
type closedError struct{ id string }

func (e closedError) Error() string {
	return "session " + e.id + " is closed: it takes no new messages; start a new session to go on"
}

func (e closedError) Is(target error) bool { return target == ErrSessionClosed }

// Event types.
const (
	EventTurnStarted        = httpclient.EventTurnStarted
	EventTurnCompleted      = httpclient.EventTurnCompleted
	EventTurnFailed         = httpclient.EventTurnFailed
	EventTextDelta          = httpclient.EventTextDelta
	EventReasoningDelta     = httpclient.EventReasoningDelta
	EventToolCallDeferred   = httpclient.EventToolCallDeferred
	EventToolCallStarted    = httpclient.EventToolCallStarted
	EventToolCallFinished   = httpclient.EventToolCallFinished
	EventInterruptRaised    = httpclient.EventInterruptRaised
	EventInterruptResolved  = httpclient.EventInterruptResolved
	EventInterruptExpiring  = httpclient.EventInterruptExpiring
	EventTurnRecovering     = httpclient.EventTurnRecovering
	EventUsageRecorded      = httpclient.EventUsageRecorded
	EventCompactionStarted  = httpclient.EventCompactionStarted
	EventCompactionFinished = httpclient.EventCompactionFinished
	EventSpendLimitReached  = httpclient.EventSpendLimitReached
	EventTurnSteered        = httpclient.EventTurnSteered
	EventTurnCancelled      = httpclient.EventTurnCancelled
)

// Send modes of a message (Client.SendMessageMode).
const (
	SendModeQueue        = httpclient.SendModeQueue
	SendModeSteer        = httpclient.SendModeSteer
	SendModeInterrupt    = httpclient.SendModeInterrupt
	SendModeRejectIfBusy = httpclient.SendModeRejectIfBusy
)

// Cancellation reasons of a call that a steer or a cancel stopped before
// it ran (interrupt_resolved, ToolCall.CancellationReason).
const (
	CancellationSteered       = httpclient.CancellationSteered
	CancellationTurnCancelled = httpclient.CancellationTurnCancelled
)

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
	Digest         string   `json:"digest"`
}

type interruptExpiringPayload struct {
	InterruptID string `json:"interrupt_id"`
	ToolName    string `json:"tool_name"`
	Kind        string `json:"kind"`
	SecondsLeft int64  `json:"seconds_left"`
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
