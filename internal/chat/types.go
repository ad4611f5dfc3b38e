package chat

import (
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// The snapshot and its parts are the API's wire types; the browser form
// only leaves fields out.
type (
	Snapshot      = wire.Snapshot
	State         = wire.SessionState
	Message       = wire.Message
	Interrupt     = wire.Interrupt
	ToolCall      = wire.ToolCall
	Usage         = wire.Usage
	QueuedMessage = wire.QueuedMessage
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

// Send modes of a message (Client.SendMessageMode).
const (
	SendModeQueue        = httpclient.SendModeQueue
	SendModeSteer        = httpclient.SendModeSteer
	SendModeInterrupt    = httpclient.SendModeInterrupt
	SendModeRejectIfBusy = httpclient.SendModeRejectIfBusy
)

// InterruptKindQuestion is the kind of an ask_user question.
const InterruptKindQuestion = wire.InterruptKindQuestion

// Session statuses, message roles and final tool call statuses.
const (
	StatusWaitingForUserMessage = wire.StatusWaitingForUserMessage
	StatusRunningModel          = wire.StatusRunningModel
	StatusRunningTools          = wire.StatusRunningTools

	RoleUser      = wire.RoleUser
	RoleAssistant = wire.RoleAssistant
	RoleTool      = wire.RoleTool

	ToolCallSucceeded      = wire.ToolCallSucceeded
	ToolCallFailed         = wire.ToolCallFailed
	ToolCallRejected       = wire.ToolCallRejected
	ToolCallOutcomeUnknown = wire.ToolCallOutcomeUnknown
)

// subUsage returns u minus o.
func subUsage(u, o Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens - o.InputTokens, OutputTokens: u.OutputTokens - o.OutputTokens,
		CachedInputTokens: u.CachedInputTokens - o.CachedInputTokens, ReasoningTokens: u.ReasoningTokens - o.ReasoningTokens,
		TotalTokens: u.TotalTokens - o.TotalTokens, ModelCalls: u.ModelCalls - o.ModelCalls,
	}
}
