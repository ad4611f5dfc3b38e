package pluginapi

import "strings"

// Texts the model sees for tool calls that did not produce an output. They
// are part of the contract: runners render them through
// DescribeToolCallOutcome, and the session writes them into records.
const (
	// DefaultRejectionToolResult is the result of a call rejected without a message.
	DefaultRejectionToolResult = "The user rejected this tool call."
	// ApprovalDeadlinePassed is the rejection message of a call whose approval
	// deadline passed.
	ApprovalDeadlinePassed = "The tool call was not run: its approval deadline passed."
	// OutcomeUnknownToolResult is the result of a call that may or may not have
	// taken effect.
	OutcomeUnknownToolResult = "The outcome of this tool call is unknown: it may or may not have taken effect. Check its effect before you call it again."
	// ToolCallNotRunErrorPrefix starts the error of a call whose tool never
	// ran, so it is safe to call again. ": " and the detail follow it.
	ToolCallNotRunErrorPrefix = "The tool did not run, so it is safe to call again"
	// ModelCallLimitToolResultFormat is the result of a call made after the
	// turn reached its model call limit; %d is the limit.
	ModelCallLimitToolResultFormat = "The tool call was not run: this turn reached its limit of %d model calls."
	// TurnFailureNoteHeader starts the turn-failure note.
	TurnFailureNoteHeader = "[Dex] The previous turn failed after these tool calls ran:"
	// TurnFailureNoteFooter ends the turn-failure note.
	TurnFailureNoteFooter = "Do not repeat these tool calls unless the user asks again."
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

// BuildTurnFailureNote renders the note a failed turn leaves when tool calls
// already ran, one line per record in deferral order. It returns "" when no
// record is final.
func BuildTurnFailureNote(calls []ToolCall) string {
	var b strings.Builder
	n := 0
	for _, c := range calls {
		if !c.Status.Final() {
			continue
		}
		if n == 0 {
			b.WriteString(TurnFailureNoteHeader)
			b.WriteByte('\n')
		}
		n++
		b.WriteString("- ")
		b.WriteString(c.ToolName)
		b.WriteByte(' ')
		b.WriteString(c.Arguments)
		b.WriteString(" -> ")
		b.WriteString(string(c.Status))
		b.WriteString(": ")
		b.WriteString(DescribeToolCallOutcome(c))
		b.WriteByte('\n')
	}
	if n == 0 {
		return ""
	}
	b.WriteString(TurnFailureNoteFooter)
	return b.String()
}
