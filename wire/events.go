package wire

// The live events of a session: every event type, in EventTypes, and one
// payload struct per type. The session writes most of them from its
// workflow; a Step writes the ones a runner or an MCP server reports
// (text_delta, reasoning_delta, tool_call_started, tool_call_finished,
// turn_recovering, mcp.*). A runner may also write events of its own
// types, which pass through with the payload it gave.
const (
	// EventTurnStarted: a turn began (TurnStartedPayload).
	EventTurnStarted = "turn_started"
	// EventTurnCompleted: the turn ended with the model's answer
	// (TurnCompletedPayload).
	EventTurnCompleted = "turn_completed"
	// EventTurnFailed: the turn ended with an error (TurnFailedPayload).
	EventTurnFailed = "turn_failed"
	// EventTurnSteered: the running turn took steering messages
	// (TurnSteeredPayload).
	EventTurnSteered = "turn_steered"
	// EventTurnCancelled: cancel_turn ended the turn
	// (TurnCancelledPayload).
	EventTurnCancelled = "turn_cancelled"
	// EventTurnRecovering: a Step attempt after the first is about to
	// run (TurnRecoveringPayload).
	EventTurnRecovering = "turn_recovering"
	// EventTextDelta: a piece of the model's answer (TextPayload).
	EventTextDelta = "text_delta"
	// EventReasoningDelta: a piece of the model's reasoning
	// (TextPayload).
	EventReasoningDelta = "reasoning_delta"
	// EventToolCallDeferred: the model asked for a tool call, with the
	// policy the session gave it (ToolCallDeferredPayload).
	EventToolCallDeferred = "tool_call_deferred"
	// EventToolCallStarted: a tool Step recorded that it calls the tool
	// (ToolCallStartedPayload).
	EventToolCallStarted = "tool_call_started"
	// EventToolCallFinished: a tool call's record became final
	// (ToolCallFinishedPayload).
	EventToolCallFinished = "tool_call_finished"
	// EventInterruptRaised: the session waits for a person: an approval
	// or a question (InterruptRaisedPayload).
	EventInterruptRaised = "interrupt_raised"
	// EventInterruptResolved: the person answered, the deadline passed,
	// or the turn moved on (InterruptResolvedPayload).
	EventInterruptResolved = "interrupt_resolved"
	// EventInterruptExpiring: an interrupt's deadline is near
	// (InterruptExpiringPayload).
	EventInterruptExpiring = "interrupt_expiring"
	// EventInterruptExtended: extend_interrupt moved a deadline
	// (InterruptExtendedPayload).
	EventInterruptExtended = "interrupt_extended"
	// EventUsageRecorded: a Step's model usage was counted
	// (UsageRecordedPayload).
	EventUsageRecorded = "usage_recorded"
	// EventCompactionStarted: the session began to summarize older
	// messages (CompactionStartedPayload).
	EventCompactionStarted = "compaction_started"
	// EventCompactionFinished: a summary replaced older messages for the
	// model (CompactionFinishedPayload).
	EventCompactionFinished = "compaction_finished"
	// EventTimerStarted: a durable_wait began (TimerStartedPayload).
	EventTimerStarted = "timer_started"
	// EventToolTaskStarted: a tool call started remote work the session
	// polls (ToolTaskStartedPayload).
	EventToolTaskStarted = "tool_task_started"
	// EventPlanUpdated: write_todos wrote a plan revision
	// (PlanUpdatedPayload).
	EventPlanUpdated = "plan_updated"
	// EventPlanExecutionStarted: execute_plan started the turn that runs
	// a plan (PlanExecutionStartedPayload).
	EventPlanExecutionStarted = "plan_execution_started"
	// EventSpendLimitReached: a budget stopped a model call
	// (SpendLimitReachedPayload).
	EventSpendLimitReached = "spend_limit_reached"
	// EventMCPToolProgress: an MCP server reported a call's progress
	// (MCPToolProgressPayload).
	EventMCPToolProgress = "mcp.tool_progress"
	// EventMCPTaskStatus: an MCP task started, or a poll saw its status
	// change (MCPTaskStatusPayload).
	EventMCPTaskStatus = "mcp.task_status"
	// EventSubAgentStarted: a delegate_to_ call started a child session
	// (SubAgentStartedPayload).
	EventSubAgentStarted = "sub_agent_started"
	// EventSubAgentFinished: a child session's answer, failure or cancel
	// settled its delegate_to_ call (SubAgentFinishedPayload).
	EventSubAgentFinished = "sub_agent_finished"
	// EventNotificationFailed: a notification of an interrupt could not
	// be sent to its channel (NotificationFailedPayload).
	EventNotificationFailed = "notification_failed"
)

// EventTypes lists every event type of the worker, in the order above.
var EventTypes = []string{
	EventTurnStarted, EventTurnCompleted, EventTurnFailed, EventTurnSteered, EventTurnCancelled, EventTurnRecovering,
	EventTextDelta, EventReasoningDelta,
	EventToolCallDeferred, EventToolCallStarted, EventToolCallFinished,
	EventInterruptRaised, EventInterruptResolved, EventInterruptExpiring, EventInterruptExtended,
	EventUsageRecorded, EventCompactionStarted, EventCompactionFinished,
	EventTimerStarted, EventToolTaskStarted, EventPlanUpdated, EventPlanExecutionStarted,
	EventSpendLimitReached, EventMCPToolProgress, EventMCPTaskStatus,
	EventSubAgentStarted, EventSubAgentFinished, EventNotificationFailed,
}

// TurnStartedPayload is the payload of turn_started. Sequence is the
// sequence of the turn's first user message.
type TurnStartedPayload struct {
	Sequence int64 `json:"sequence"`
}

// TurnCompletedPayload is the payload of turn_completed: how many messages
// the session holds.
type TurnCompletedPayload struct {
	MessageCount int `json:"message_count"`
}

// TurnFailedPayload is the payload of turn_failed: the turn's error, also
// in the snapshot's last_turn_error.
type TurnFailedPayload struct {
	Error string `json:"error"`
}

// TurnSteeredPayload is the payload of turn_steered: how many messages
// steered the turn, and how many the session holds.
type TurnSteeredPayload struct {
	SteeredMessageCount int `json:"steered_message_count"`
	MessageCount        int `json:"message_count"`
}

// TurnCancelledPayload is the payload of turn_cancelled.
type TurnCancelledPayload struct {
	MessageCount int `json:"message_count"`
}

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

// TextPayload is the payload of text_delta and reasoning_delta, which a
// runner writes.
type TextPayload struct {
	Text string `json:"text"`
}

// ToolCallDeferredPayload is the payload of tool_call_deferred: the call
// and the policy the session gave it, and, when approval rules matched,
// the rule that decided and its decision, and the shadow rule's.
type ToolCallDeferredPayload struct {
	ToolCallID             string `json:"tool_call_id"`
	ToolName               string `json:"tool_name"`
	Effect                 string `json:"effect"`
	RequiresApproval       bool   `json:"requires_approval"`
	ApprovalRule           string `json:"approval_rule,omitempty"`
	ApprovalDecision       string `json:"approval_decision,omitempty"`
	ShadowApprovalRule     string `json:"shadow_approval_rule,omitempty"`
	ShadowApprovalDecision string `json:"shadow_approval_decision,omitempty"`
}

// ToolCallStartedPayload is the payload of tool_call_started, which a tool
// Step writes once its started marker is recorded.
type ToolCallStartedPayload struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
}

// ToolCallFinishedPayload is the payload of tool_call_finished: the
// call's final status.
type ToolCallFinishedPayload struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	Status     string `json:"status"`
}

// InterruptRaisedPayload is the payload of interrupt_raised, with every
// field present, empty values included: an approval has no question, no
// choices and no free text; an interrupt without a deadline has deadline
// "". Digest binds an approval to its call; the worker sets it on the live
// event only.
type InterruptRaisedPayload struct {
	InterruptID    string   `json:"interrupt_id"`
	ToolCallID     string   `json:"tool_call_id"`
	ToolName       string   `json:"tool_name"`
	Deadline       string   `json:"deadline"`
	Kind           string   `json:"kind"`
	Question       string   `json:"question"`
	Choices        []string `json:"choices"`
	AllowsFreeText bool     `json:"allows_free_text"`
	Digest         string   `json:"digest,omitempty"`
}

// InterruptResolvedPayload is the payload of interrupt_resolved, with
// every field present. Answered is false for approvals;
// CancellationReason is "steered", "turn_cancelled" or "" (a passed
// deadline is approved: false, with the deadline's text as
// rejection_message).
type InterruptResolvedPayload struct {
	InterruptID        string `json:"interrupt_id"`
	Approved           bool   `json:"approved"`
	RejectionMessage   string `json:"rejection_message"`
	Kind               string `json:"kind"`
	Answered           bool   `json:"answered"`
	CancellationReason string `json:"cancellation_reason"`
	// ResolvedVia and ResolvedBy are how and by whom a person answered
	// (ResolveInterruptRequest's); empty for a deadline or a turn control.
	ResolvedVia string `json:"resolved_via"`
	ResolvedBy  string `json:"resolved_by"`
}

// InterruptExpiringPayload is the payload of interrupt_expiring.
// SecondsLeft is the whole seconds until the deadline.
type InterruptExpiringPayload struct {
	InterruptID string `json:"interrupt_id"`
	ToolCallID  string `json:"tool_call_id"`
	ToolName    string `json:"tool_name"`
	Kind        string `json:"kind"`
	Deadline    string `json:"deadline"`
	SecondsLeft int64  `json:"seconds_left"`
}

// InterruptExtendedPayload is the payload of interrupt_extended.
// LatestDeadline is the latest any extension may move the deadline to.
type InterruptExtendedPayload struct {
	InterruptID      string `json:"interrupt_id"`
	ToolCallID       string `json:"tool_call_id"`
	ToolName         string `json:"tool_name"`
	Kind             string `json:"kind"`
	Deadline         string `json:"deadline"`
	PreviousDeadline string `json:"previous_deadline"`
	LatestDeadline   string `json:"latest_deadline"`
}

// Usage is model usage: tokens and model calls.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`
	TotalTokens       int64 `json:"total_tokens"`
	ModelCalls        int64 `json:"model_calls"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		TotalTokens:       u.TotalTokens + v.TotalTokens,
		ModelCalls:        u.ModelCalls + v.ModelCalls,
	}
}

// UsageRecordedPayload is the payload of usage_recorded: what a Step
// recorded, and the session's total after it.
type UsageRecordedPayload struct {
	Recorded Usage `json:"recorded"`
	Session  Usage `json:"session"`
}

// CompactionStartedPayload is the payload of compaction_started: the
// summary is to cover the messages through ThroughSequence.
type CompactionStartedPayload struct {
	ThroughSequence int64 `json:"through_sequence"`
}

// CompactionFinishedPayload is the payload of compaction_finished.
type CompactionFinishedPayload struct {
	Generation      int   `json:"generation"`
	ThroughSequence int64 `json:"through_sequence"`
}

// TimerStartedPayload is the payload of timer_started: a durable_wait
// call waits until WaitUntil (RFC 3339).
type TimerStartedPayload struct {
	ToolCallID string `json:"tool_call_id"`
	WaitUntil  string `json:"wait_until"`
	Reason     string `json:"reason"`
}

// ToolTaskStartedPayload is the payload of tool_task_started.
type ToolTaskStartedPayload struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	TaskID     string `json:"task_id"`
}

// PlanUpdatedPayload is the payload of plan_updated.
type PlanUpdatedPayload struct {
	Revision  int    `json:"revision"`
	Status    string `json:"status"`
	TaskCount int    `json:"task_count"`
}

// PlanExecutionStartedPayload is the payload of plan_execution_started.
type PlanExecutionStartedPayload struct {
	Revision int `json:"revision"`
}

// SpendRefusal says which budget stopped a model call. It is the payload
// of the spend_limit_reached event.
type SpendRefusal struct {
	// Scope is session, turn or day, with "token_" before it for a budget
	// of the API token that started the session, or hook for the
	// application's own limit.
	Scope string `json:"scope"`
	// Counter is model_calls, input_tokens, output_tokens or cost_usd
	// (empty for the hook); Used and Limit are its value and bound (cost
	// in millionths of a US dollar).
	Counter string `json:"counter"`
	Used    int64  `json:"used"`
	Limit   int64  `json:"limit"`
	// Reason is the sentence the turn's error starts with
	// SpendLimitErrorPrefix.
	Reason string `json:"reason"`
}

// SpendLimitReachedPayload is the payload of spend_limit_reached.
type SpendLimitReachedPayload = SpendRefusal

// MCPToolProgressPayload is the payload of mcp.tool_progress; total and
// message are null when the server sent none.
type MCPToolProgressPayload struct {
	ToolCallID string   `json:"tool_call_id"`
	ToolName   string   `json:"tool_name"`
	Progress   float64  `json:"progress"`
	Total      *float64 `json:"total"`
	Message    *string  `json:"message"`
}

// MCPTaskStatusPayload is the payload of mcp.task_status.
type MCPTaskStatusPayload struct {
	ToolCallID    string `json:"tool_call_id"`
	ToolName      string `json:"tool_name"`
	TaskID        string `json:"task_id"`
	Status        string `json:"status"`
	StatusMessage string `json:"status_message,omitempty"`
}

// NewPayload returns a pointer to a new payload of the event type's
// struct, to decode a payload into, or nil for a type the worker does not
// write (a runner's own events).
func NewPayload(eventType string) any {
	switch eventType {
	case EventTurnStarted:
		return new(TurnStartedPayload)
	case EventTurnCompleted:
		return new(TurnCompletedPayload)
	case EventTurnFailed:
		return new(TurnFailedPayload)
	case EventTurnSteered:
		return new(TurnSteeredPayload)
	case EventTurnCancelled:
		return new(TurnCancelledPayload)
	case EventSubAgentStarted:
		return new(SubAgentStartedPayload)
	case EventSubAgentFinished:
		return new(SubAgentFinishedPayload)
	case EventNotificationFailed:
		return new(NotificationFailedPayload)
	case EventTurnRecovering:
		return new(TurnRecoveringPayload)
	case EventTextDelta, EventReasoningDelta:
		return new(TextPayload)
	case EventToolCallDeferred:
		return new(ToolCallDeferredPayload)
	case EventToolCallStarted:
		return new(ToolCallStartedPayload)
	case EventToolCallFinished:
		return new(ToolCallFinishedPayload)
	case EventInterruptRaised:
		return new(InterruptRaisedPayload)
	case EventInterruptResolved:
		return new(InterruptResolvedPayload)
	case EventInterruptExpiring:
		return new(InterruptExpiringPayload)
	case EventInterruptExtended:
		return new(InterruptExtendedPayload)
	case EventUsageRecorded:
		return new(UsageRecordedPayload)
	case EventCompactionStarted:
		return new(CompactionStartedPayload)
	case EventCompactionFinished:
		return new(CompactionFinishedPayload)
	case EventTimerStarted:
		return new(TimerStartedPayload)
	case EventToolTaskStarted:
		return new(ToolTaskStartedPayload)
	case EventPlanUpdated:
		return new(PlanUpdatedPayload)
	case EventPlanExecutionStarted:
		return new(PlanExecutionStartedPayload)
	case EventSpendLimitReached:
		return new(SpendLimitReachedPayload)
	case EventMCPToolProgress:
		return new(MCPToolProgressPayload)
	case EventMCPTaskStatus:
		return new(MCPTaskStatusPayload)
	}
	return nil
}

// Why a call or an interrupt ended without running, besides a person's
// answer or a passed deadline: interrupt_resolved's cancellation_reason and
// a tool call record's.
const (
	// CancellationSteered: steering ended the turn before the call ran.
	CancellationSteered = "steered"
	// CancellationTurnCancelled: cancel_turn ended the turn before the
	// call ran.
	CancellationTurnCancelled = "turn_cancelled"
)

// NotificationFailedPayload is the payload of notification_failed: the
// interrupt, the channel, whether it was the escalation, and why.
type NotificationFailedPayload struct {
	InterruptID string `json:"interrupt_id"`
	Channel     string `json:"channel"`
	Escalation  bool   `json:"escalation"`
	Reason      string `json:"reason"`
}
