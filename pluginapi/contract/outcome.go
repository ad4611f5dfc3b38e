package contract

// Texts the model sees for tool calls that did not produce an output. They
// are part of the contract: runners render them through
// DescribeToolCallOutcome. The texts only the session writes (a passed
// deadline, a call that never ran, the turn-failure note) are the
// session's own.
const (
	// DefaultRejectionToolResult is the result of a call rejected without a message.
	DefaultRejectionToolResult = "The user rejected this tool call."
	// OutcomeUnknownToolResult is the result of a call that may or may not have
	// taken effect.
	OutcomeUnknownToolResult = "The outcome of this tool call is unknown: it may or may not have taken effect. Check its effect before you call it again."
	// ModelCallLimitToolResultFormat is the result of a call made after the
	// turn reached its model call limit; %d is the limit.
	ModelCallLimitToolResultFormat = "The tool call was not run: this turn reached its limit of %d model calls."
)

// DescribeToolCallOutcome renders the model-visible text of a final record.
func DescribeToolCallOutcome(c ToolCall) string {
	switch c.Status {
	case ToolCallSucceeded:
		return c.Output
	case ToolCallFailed:
		if c.Error == "" {
			return "The tool call failed."
		}
		return "The tool call failed: " + c.Error
	case ToolCallRejected:
		if c.RejectionMessage != "" {
			return c.RejectionMessage
		}
		return DefaultRejectionToolResult
	case ToolCallOutcomeUnknown:
		return OutcomeUnknownToolResult
	}
	return OutcomeUnknownToolResult
}
