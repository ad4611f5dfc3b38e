package contract

import "encoding/json"

// Effect is a tool's effect class. It decides which Step runs the tool, how
// often a failed call is retried, and whether the call needs approval by
// default.
type Effect string

// The effect classes. The wire carries the plain strings.
const (
	// EffectRead runs in CallTool with up to three attempts; a crash runs it again.
	EffectRead Effect = "read"
	// EffectIdempotentWrite runs in CallTool with up to three attempts, each with the
	// same idempotency key; after that its outcome is unknown.
	EffectIdempotentWrite Effect = "idempotent_write"
	// EffectNonIdempotentWrite runs in CallSingleAttemptTool with one attempt and
	// needs approval by default.
	EffectNonIdempotentWrite Effect = "non_idempotent_write"
	// EffectUnclassified is treated like a non-idempotent write.
	EffectUnclassified Effect = "unclassified"
)

// Valid reports whether e is one of the four effect classes.
func (e Effect) Valid() bool {
	switch e {
	case EffectRead, EffectIdempotentWrite, EffectNonIdempotentWrite, EffectUnclassified:
		return true
	}
	return false
}

// Retryable reports whether a call of this effect runs in CallTool (three
// attempts) rather than CallSingleAttemptTool (one attempt).
func (e Effect) Retryable() bool { return e == EffectRead || e == EffectIdempotentWrite }

// ApprovalRequiredByDefault reports the effect's default approval rule.
func (e Effect) ApprovalRequiredByDefault() bool { return !e.Retryable() }

// ToolPolicy is the effect class of one tool and, optionally, an explicit
// approval rule. A nil RequiresApproval uses the effect's default.
type ToolPolicy struct {
	Effect           Effect `json:"effect"`
	RequiresApproval *bool  `json:"requires_approval,omitempty"`
}

// ApprovalRequired reports whether a call under this policy waits for
// approval before it runs.
func (p ToolPolicy) ApprovalRequired() bool {
	if p.RequiresApproval != nil {
		return *p.RequiresApproval
	}
	return p.Effect.ApprovalRequiredByDefault()
}

// PolicySet is the session's tool policy configuration, sent with every
// turn so a runner can resolve policies without its own copy of the config.
type PolicySet struct {
	Policies      map[string]ToolPolicy `json:"tool_policies,omitempty"`
	DefaultEffect Effect                `json:"default_tool_effect"`
}

// Resolve returns the policy for a tool: the explicit policy, else the
// framework's effect (such as an MCP readOnlyHint), else the default effect.
// Pass "" as frameworkEffect when the framework exposes no metadata.
func (s PolicySet) Resolve(toolName string, frameworkEffect Effect) ToolPolicy {
	if p, ok := s.Policies[toolName]; ok {
		return p
	}
	if frameworkEffect.Valid() {
		return ToolPolicy{Effect: frameworkEffect}
	}
	if s.DefaultEffect.Valid() {
		return ToolPolicy{Effect: s.DefaultEffect}
	}
	return ToolPolicy{Effect: EffectUnclassified}
}

// Role is the author of a stored message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// FrameworkMessage is one item a runner asks the session to store. Item is
// the framework's own encoding (JSON text), which the session stores and
// hands back byte for byte; Text is what people see.
type FrameworkMessage struct {
	Role       Role   `json:"role"`
	Text       string `json:"text"`
	Item       string `json:"framework_item,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// ToolStatus is the final status of the call a tool message reports,
	// for display.
	ToolStatus ToolCallStatus `json:"tool_status,omitempty"`
}

// Message is a stored FrameworkMessage with its sequence number. Sequences
// start at 1 and never repeat within a session.
type Message struct {
	Sequence   int64  `json:"sequence"`
	Role       Role   `json:"role"`
	Text       string `json:"text"`
	Item       string `json:"framework_item,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	TurnID     string `json:"turn_id,omitempty"`
	// ToolStatus is FrameworkMessage.ToolStatus.
	ToolStatus ToolCallStatus `json:"tool_status,omitempty"`
}

// ToolCallStatus is the state of one tool call record.
type ToolCallStatus string

// The tool call statuses a runner sees: approved on the call it runs,
// final on the records of a turn. (The statuses of records that wait, such
// as awaiting_approval, are the session's; see package wire.)
const (
	ToolCallApproved       ToolCallStatus = "approved"
	ToolCallRejected       ToolCallStatus = "rejected"
	ToolCallSucceeded      ToolCallStatus = "succeeded"
	ToolCallFailed         ToolCallStatus = "failed"
	ToolCallOutcomeUnknown ToolCallStatus = "outcome_unknown"
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

// ToolCall is a runner's view of one deferred tool call of the active
// turn: what the runner contract's ToolCall message carries. The session
// keeps more on its own record (package wire), which no runner sees.
type ToolCall struct {
	ToolCallID          string         `json:"tool_call_id"`
	ToolName            string         `json:"tool_name"`
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
	// InputContinuation is what the tool's last ToolInputRequested asked
	// to get back when the call runs again after the user answered.
	InputContinuation string `json:"input_continuation,omitempty"`
	// TaskID is the handle of the tool task the call started, and
	// TaskPollIntervalSeconds the wait before its next poll.
	TaskID                  string `json:"task_id,omitempty"`
	TaskPollIntervalSeconds int    `json:"task_poll_interval_seconds,omitempty"`
}

// Usage counts tokens. In an outcome it covers that one model call; in a
// snapshot it is the session total.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`
	// TotalTokens is the provider's total. A runner that leaves it 0 gets
	// InputTokens + OutputTokens recorded.
	TotalTokens int64 `json:"total_tokens"`
	// ModelCalls counts the model calls (1 for a RunModelStep that made
	// one). It is recorded as reported: 0 counts none.
	ModelCalls int64 `json:"model_calls"`
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

// ModelCallMetadata describes one model call for tracing. The session never
// stores it. Leave a field empty when the framework does not expose it.
type ModelCallMetadata struct {
	RequestModel  string   `json:"request_model,omitempty"`
	ResponseModel string   `json:"response_model,omitempty"`
	ProviderName  string   `json:"provider_name,omitempty"`
	ResponseID    string   `json:"response_id,omitempty"`
	FinishReasons []string `json:"finish_reasons,omitempty"`
}

// ToolDefinition is a tool the session (not the runner) executes, such as a
// built-in tool or a tool of an MCP server. The runner offers it to its model
// and defers its calls like its own.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Effect      Effect          `json:"effect,omitempty"`
}
