package client

import (
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestWhyNotResolved(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	approval := wire.Interrupt{InterruptID: "call_2", ToolCallID: "call_2", ToolName: "refund_order", Kind: wire.InterruptKindApproval}
	question := wire.Interrupt{InterruptID: "call_3", ToolCallID: "call_3", ToolName: "ask_user", Kind: wire.InterruptKindQuestion, Question: "Which order?", Choices: []string{"7", "8"}}
	late := approval
	late.Deadline = "2026-12-05T09:59:00Z"
	snap := func(pending []wire.Interrupt, calls ...wire.ToolCall) wire.Snapshot {
		return wire.Snapshot{PendingInterrupts: pending, ToolCalls: calls}
	}
	tests := []struct {
		name   string
		snap   wire.Snapshot
		id     string
		action InterruptAction
		answer string
		want   string
	}{
		{"unknown", snap(nil), "nope", Approve, "", "the session has no interrupt nope (a pending one's ID is in its snapshot)"},
		{"pending past its deadline", snap([]wire.Interrupt{late}), "call_2", Approve, "", "its deadline passed at 2026-12-05T09:59:00Z"},
		{"approving a question", snap([]wire.Interrupt{question}), "call_3", Approve, "", "it is a question: answer it, or decline it"},
		{"answering an approval", snap([]wire.Interrupt{approval}), "call_2", Answer, "yes", "it asks for an approval, not an answer: approve or reject it"},
		{"a blank answer", snap([]wire.Interrupt{question}), "call_3", Answer, " ", "the answer is blank"},
		{"an answer off the choices", snap([]wire.Interrupt{question}), "call_3", Answer, "9", "the answer is not one of its choices: 7, 8"},
		{"already approved", snap(nil, wire.ToolCall{ToolCallID: "call_2", RequiresApproval: true, Status: wire.ToolCallSucceeded}), "call_2", Reject, "",
			"it was already approved: the call succeeded"},
		{"already rejected", snap(nil, wire.ToolCall{ToolCallID: "call_2", RequiresApproval: true, Status: wire.ToolCallRejected, RejectionMessage: "Not today."}), "call_2", Approve, "",
			"it was already rejected: Not today."},
		{"deadline passed", snap(nil, wire.ToolCall{ToolCallID: "call_2", RequiresApproval: true, Status: wire.ToolCallRejected, RejectionMessage: wire.ApprovalDeadlinePassedText}), "call_2", Approve, "",
			"its deadline passed: the call was not run"},
		{"question deadline passed", snap(nil, wire.ToolCall{ToolCallID: "call_3", Status: wire.ToolCallRejected, RejectionMessage: wire.QuestionDeadlinePassedText}), "call_3", Answer, "7",
			"its deadline passed: the question went unanswered"},
		{"declined", snap(nil, wire.ToolCall{ToolCallID: "call_3", Status: wire.ToolCallRejected, RejectionMessage: wire.QuestionDeclinedText}), "call_3", Answer, "7", "it was already declined"},
		{"answered", snap(nil, wire.ToolCall{ToolCallID: "call_3", Status: wire.ToolCallSucceeded}), "call_3", Answer, "7", "it was already answered"},
		{"a tool's question", snap(nil, wire.ToolCall{ToolCallID: "call_4", Status: wire.ToolCallSucceeded}), "call_4-input-1", Answer, "7", "it was already answered"},
		{"cancelled", snap(nil, wire.ToolCall{ToolCallID: "call_2", RequiresApproval: true, Status: wire.ToolCallRejected, CancellationReason: "turn_cancelled"}), "call_2", Approve, "",
			"it ended with its turn, which was cancelled (turn_cancelled)"},
		{"an older turn's approval, from its result message", wire.Snapshot{Messages: []wire.Message{{Role: wire.RoleTool, ToolCallID: "call_1", ToolName: "refund_order", ToolStatus: wire.ToolCallSucceeded}}}, "call_1", Approve, "",
			"it was already approved: the call succeeded"},
		{"an older turn's question", wire.Snapshot{Messages: []wire.Message{{Role: wire.RoleTool, ToolCallID: "call_1", ToolName: "ask_user", ToolStatus: wire.ToolCallSucceeded}}}, "call_1", Answer, "7",
			"it was already answered"},
		{"an older turn's declined question", wire.Snapshot{Messages: []wire.Message{{Role: wire.RoleTool, ToolCallID: "call_1", ToolName: "ask_user", ToolStatus: wire.ToolCallRejected, Text: wire.QuestionDeclinedText}}}, "call_1", Answer, "7",
			"it was already declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WhyNotResolved(tt.snap, tt.id, tt.action, tt.answer, now); got != tt.want {
				t.Errorf("WhyNotResolved = %q, want %q", got, tt.want)
			}
		})
	}
}
