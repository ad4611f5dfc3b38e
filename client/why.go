package client

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// InterruptAction is what a person tried to do with an interrupt.
type InterruptAction int

const (
	// Approve approves an approval (resolve_interrupt, approved).
	Approve InterruptAction = iota
	// Reject rejects an approval or declines a question (resolve_interrupt,
	// not approved).
	Reject
	// Answer answers a question (answer_question).
	Answer
)

// WhyNotResolved explains, for a person, why resolving or answering
// interruptID changed nothing (resolve_interrupt or answer_question
// returned false), from the session's snapshot read just after: the
// interrupt was already resolved (and how), its deadline passed, no such
// interrupt exists, or the request does not fit it (a blank answer, an
// answer not among the choices, an approval of a question). answer is the
// answer sent with Answer.
func WhyNotResolved(snap wire.Snapshot, interruptID string, action InterruptAction, answer string, now time.Time) string {
	if i := slices.IndexFunc(snap.PendingInterrupts, func(in wire.Interrupt) bool { return in.InterruptID == interruptID }); i >= 0 {
		in := snap.PendingInterrupts[i]
		if d, err := time.Parse(time.RFC3339Nano, in.Deadline); err == nil && !now.Before(d) {
			return fmt.Sprintf("its deadline passed at %s", in.Deadline)
		}
		question := in.Kind == wire.InterruptKindQuestion
		switch {
		case question && action == Approve:
			return "it is a question: answer it, or decline it"
		case !question && action == Answer:
			return "it asks for an approval, not an answer: approve or reject it"
		case action == Answer && strings.TrimSpace(answer) == "":
			return "the answer is blank"
		case action == Answer && len(in.Choices) > 0 && !in.AllowsFreeText && !slices.Contains(in.Choices, answer):
			return "the answer is not one of its choices: " + strings.Join(in.Choices, ", ")
		}
		return "it is still pending, but the session did not take this request: try again"
	}
	callID := interruptID
	if i := strings.Index(callID, "-input-"); i > 0 {
		callID = callID[:i]
	}
	for i := len(snap.ToolCalls) - 1; i >= 0; i-- {
		if c := snap.ToolCalls[i]; c.ToolCallID == callID {
			return resolvedHow(c)
		}
	}
	// A call of an ended turn: its result message. Only ask_user (the
	// spec's built-in) and a tool's own question ("-input-") raise a
	// question; any other call's interrupt was an approval.
	for i := len(snap.Messages) - 1; i >= 0; i-- {
		if m := snap.Messages[i]; m.Role == wire.RoleTool && m.ToolCallID == callID {
			c := wire.ToolCall{ToolCallID: callID, ToolName: m.ToolName, Status: m.ToolStatus,
				RequiresApproval: m.ToolName != "ask_user" && callID == interruptID}
			if m.ToolStatus == wire.ToolCallRejected {
				c.RejectionMessage = m.Text
			}
			return resolvedHow(c)
		}
	}
	return "the session has no interrupt " + interruptID + " (a pending one's ID is in its snapshot)"
}

// resolvedHow says how a call's interrupt was resolved, from its record,
// and through what and by whom when the record says.
func resolvedHow(c wire.ToolCall) string {
	how := resolvedWhat(c)
	switch {
	case c.ResolvedVia != "" && c.ResolvedBy != "":
		how += " (through " + c.ResolvedVia + ", by " + c.ResolvedBy + ")"
	case c.ResolvedVia != "":
		how += " (through " + c.ResolvedVia + ")"
	}
	return how
}

func resolvedWhat(c wire.ToolCall) string {
	switch {
	case c.CancellationReason != "":
		return "it ended with its turn, which was cancelled (" + c.CancellationReason + ")"
	case c.Status == wire.ToolCallAwaitingApproval || c.Status == wire.ToolCallAwaitingAnswer:
		// A tool's question (its own interrupt ID) while the call waits
		// for another one.
		return "it is no longer pending; the call waits for another answer"
	case c.RejectionMessage == wire.ApprovalDeadlinePassedText:
		return "its deadline passed: the call was not run"
	case c.RejectionMessage == wire.QuestionDeadlinePassedText:
		return "its deadline passed: the question went unanswered"
	case c.RejectionMessage == wire.QuestionDeclinedText:
		return "it was already declined"
	case c.Status == wire.ToolCallRejected && c.RejectionMessage != "":
		return "it was already rejected: " + c.RejectionMessage
	case c.Status == wire.ToolCallRejected:
		return "it was already rejected"
	case c.RequiresApproval:
		return fmt.Sprintf("it was already approved: the call %s", c.Status)
	}
	// A call that needs no approval has an interrupt only when it asks
	// a question.
	return "it was already answered"
}
