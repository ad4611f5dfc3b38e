package wire

// Application error types (a Temporal ApplicationError's type). A client
// sees the first three as the failure of an update it sent; the rest are
// failures of Steps, which the session handles itself and which show in
// the workflow's history.
const (
	// SessionClosedErrorType refuses an update a closed session takes no
	// more (SessionClosedReason).
	SessionClosedErrorType = "SessionClosed"
	// ApprovalDigestErrorType refuses a resolve_interrupt whose digest does
	// not match the approval's call, or that lacks one where required.
	ApprovalDigestErrorType = "ApprovalDigestMismatch"
	// InterruptNotExtendedErrorType refuses an extend_interrupt.
	InterruptNotExtendedErrorType = "InterruptNotExtended"

	// ToolNotStartedErrorType fails a tool Step that failed before any
	// attempt reached the tool.
	ToolNotStartedErrorType = "ToolNotStarted"
	// MessageStoreErrorType fails a Step that retrying cannot fix: a
	// message over the store's cap.
	MessageStoreErrorType = "MessageStoreRefused"
	// ToolNameConflictErrorType fails a RunModel Step, before any model
	// request, whose tools repeat a name: a runner or MCP tool named as an
	// enabled built-in, or an MCP tool named as a runner tool.
	ToolNameConflictErrorType = "ToolNameConflict"
	// PermanentRunnerErrorType fails a Step the runner marked permanent;
	// the engine does not retry it.
	PermanentRunnerErrorType = "PermanentRunnerError"
	// RetryAfterRunnerErrorType fails a Step whose runner said when to
	// retry (a provider's Retry-After).
	RetryAfterRunnerErrorType = "RetryAfterRunnerError"
	// MCPInterruptedErrorType fails an MCP call that was sent and then
	// lost (a broken stream, a timeout after the send, -32603, -32700, an
	// HTTP error status): the engine sends a read or idempotent_write again
	// with the same idempotency key; any other effect records
	// outcome_unknown.
	MCPInterruptedErrorType = "McpToolCallInterrupted"
)

// NotificationRefusedErrorType is the error type of a notification its
// channel refused, or that names no channel of the worker: the
// SendNotification Step does not try it again.
const NotificationRefusedErrorType = "NotificationRefused"
