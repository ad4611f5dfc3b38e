package session

import (
	"strings"

	"github.com/dex-agents/dex-agent-worker/internal/wireconv"
	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Texts the session writes into records and messages, which the model sees.
const (
	// ApprovalDeadlinePassed is the rejection message of a call whose approval
	// deadline passed (the spec's APPROVAL_DEADLINE_PASSED).
	ApprovalDeadlinePassed = wire.ApprovalDeadlinePassedText
	// ToolCallNotRunErrorPrefix starts the error of a call whose tool never
	// ran, so it is safe to call again (TOOL_CALL_NOT_RUN_ERROR_PREFIX).
	// ": " and the detail follow it.
	ToolCallNotRunErrorPrefix = "The tool did not run, so it is safe to call again"
	// TurnFailureNoteHeader starts the turn-failure note.
	TurnFailureNoteHeader = "[Dex] The previous turn failed after these tool calls ran:"
	// TurnFailureNoteFooter ends the turn-failure note.
	TurnFailureNoteFooter = "Do not repeat these tool calls unless the user asks again."
)

// BuildTurnFailureNote renders the note a failed turn leaves when tool calls
// already ran, one line per record in deferral order. It returns "" when no
// record is final.
func BuildTurnFailureNote(calls []wire.ToolCall) string {
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
		b.WriteString(contract.DescribeToolCallOutcome(wireconv.RunnerToolCall(c)))
		b.WriteByte('\n')
	}
	if n == 0 {
		return ""
	}
	b.WriteString(TurnFailureNoteFooter)
	return b.String()
}

// messageTooLongFormat says why a message sent inline was refused (its
// length, the limit).
const messageTooLongFormat = "it is %d bytes, over the %d bytes sent inline; send a longer one by reference (the HTTP API does)"
