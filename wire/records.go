package wire

// Effect is a tool's effect class, as records and events show it.
type Effect string

// The effect classes.
const (
	EffectRead               Effect = "read"
	EffectIdempotentWrite    Effect = "idempotent_write"
	EffectNonIdempotentWrite Effect = "non_idempotent_write"
	EffectUnclassified       Effect = "unclassified"
)

// Role is the author of a stored message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCallStatus is the state of one tool call record.
type ToolCallStatus string

// Tool call statuses. A record waits in one of the first four, runs once
// approved, and ends in one of the last four (Final).
const (
	ToolCallAwaitingApproval ToolCallStatus = "awaiting_approval"
	ToolCallAwaitingAnswer   ToolCallStatus = "awaiting_answer"
	ToolCallWaitingForTimer  ToolCallStatus = "waiting_for_timer"
	ToolCallWaitingForTask   ToolCallStatus = "waiting_for_task"
	// ToolCallWaitingForSubAgent: a delegate_to_ call waits for its child
	// session's answer (ChildSessionID).
	ToolCallWaitingForSubAgent ToolCallStatus = "waiting_for_sub_agent"
	ToolCallApproved           ToolCallStatus = "approved"
	ToolCallRejected           ToolCallStatus = "rejected"
	ToolCallSucceeded          ToolCallStatus = "succeeded"
	ToolCallFailed             ToolCallStatus = "failed"
	ToolCallOutcomeUnknown     ToolCallStatus = "outcome_unknown"
)

// Final reports whether the status is final: rejected, succeeded, failed or
// outcome_unknown.
func (s ToolCallStatus) Final() bool {
	switch s {
	case ToolCallRejected, ToolCallSucceeded, ToolCallFailed, ToolCallOutcomeUnknown:
		return true
	}
	return false
}

// ToolCall is the session's record of one deferred tool call of the active
// turn, as snapshots show it. A runner sees the part of it the runner
// contract names (its ToolCall message); the rest is the session's.
type ToolCall struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	// DisplayText is the call as one line for people, from the tool's
	// display_text in the worker's config ("Looked up order 9"). The HTTP
	// API fills it; the session never does.
	DisplayText         string         `json:"display_text,omitempty"`
	Arguments           string         `json:"arguments"`
	Effect              Effect         `json:"effect"`
	RequiresApproval    bool           `json:"requires_approval"`
	Status              ToolCallStatus `json:"status"`
	DeferralOrder       int            `json:"deferral_order"`
	Output              string         `json:"output,omitempty"`
	Error               string         `json:"error,omitempty"`
	RejectionMessage    string         `json:"rejection_message,omitempty"`
	ToolSourceReference string         `json:"tool_source_reference,omitempty"`
	CancellationReason  string         `json:"cancellation_reason,omitempty"`
	// WaitUntil is when a durable_wait call's wait ends (RFC 3339 UTC), on
	// a waiting_for_timer record.
	WaitUntil string `json:"wait_until,omitempty"`
	// InputContinuation is what the tool's last input request asked to get
	// back on the next run of the call; InputAnswers are the user's
	// answers to the questions the call asked, oldest first. Only the
	// session's Steps use them; browser snapshots leave them out.
	InputContinuation string   `json:"input_continuation,omitempty"`
	InputAnswers      []string `json:"input_answers,omitempty"`
	// InputRequests counts the questions the call asked.
	InputRequests int `json:"input_requests,omitempty"`
	// TaskID is the handle of the tool task the call started, and
	// TaskPollIntervalSeconds the wait before its next poll. A call with
	// a task ID waits in waiting_for_task.
	TaskID                  string `json:"task_id,omitempty"`
	TaskPollIntervalSeconds int    `json:"task_poll_interval_seconds,omitempty"`
	// TaskAnswerPending is how the user resolved the task's last question,
	// until the poll that hands it over succeeds. Only the session's Steps
	// use it.
	TaskAnswerPending *QuestionAnswer `json:"task_answer_pending,omitempty"`
	// ApprovalRule and ApprovalDecision name the agent's approval rule that
	// decided the call's approval (allow, require_approval or deny), and
	// ShadowApprovalRule and ShadowApprovalDecision the shadow rule's,
	// recorded without effect. Empty: no rule matched.
	ApprovalRule           string `json:"approval_rule,omitempty"`
	ApprovalDecision       string `json:"approval_decision,omitempty"`
	ShadowApprovalRule     string `json:"shadow_approval_rule,omitempty"`
	ShadowApprovalDecision string `json:"shadow_approval_decision,omitempty"`
	// ChildSessionID is the child session a delegate_to_ call started.
	ChildSessionID string `json:"child_session_id,omitempty"`
	// ResolvedVia and ResolvedBy are how and by whom the call's approval
	// or question was answered (see ResolveInterruptRequest).
	ResolvedVia string `json:"resolved_via,omitempty"`
	ResolvedBy  string `json:"resolved_by,omitempty"`
}

// QuestionAnswer is how a user resolved a question.
type QuestionAnswer struct {
	// Resolution is "answered", "declined" or "deadline_passed".
	Resolution string `json:"resolution"`
	Answer     string `json:"answer,omitempty"`
}

// Resolutions of a question (QuestionAnswer.Resolution).
const (
	QuestionAnswered       = "answered"
	QuestionDeclined       = "declined"
	QuestionDeadlinePassed = "deadline_passed"
)

// The rejection messages a session records on a call it did not run
// because a person did not answer (ToolCall.RejectionMessage), which the
// model sees.
const (
	// ApprovalDeadlinePassedText: the call's approval deadline passed.
	ApprovalDeadlinePassedText = "The tool call was not run: its approval deadline passed."
	// QuestionDeclinedText: the user declined the question (ask_user).
	QuestionDeclinedText = "The user declined to answer."
	// QuestionDeadlinePassedText: the question's deadline passed.
	QuestionDeadlinePassedText = "question deadline passed"
)

// Plan is a session's plan: the tasks of the last successful write_todos
// call. Revision counts the calls that changed it; Status is "active",
// "completed" (every task completed), "cleared" (no tasks) or "draft" (a
// planning turn's, in plan mode).
type Plan struct {
	Revision int        `json:"revision"`
	Status   string     `json:"status"`
	Tasks    []PlanTask `json:"tasks"`
}

// PlanTask is one task of a plan; Status is "pending", "in_progress" or
// "completed".
type PlanTask struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}
