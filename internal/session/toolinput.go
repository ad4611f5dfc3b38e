package session

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Tool input requests: a tool Step that returns ToolInputRequested (before
// the tool took any effect) asks the user through AwaitQuestionAnswer, with
// the question interrupt "<tool_call_id>-input-<n>". The answer runs the
// same tool Step type again with the answers so far and the question's
// continuation; a decline or a passed deadline records the call rejected,
// as for ask_user. A started tool task asks the same way, but its question
// never ends the call: the answer, a decline or a passed deadline goes back
// to the task in the next poll (tooltask.go).

// MaxToolInputRequests is how many questions one tool call may ask; the
// next fails the call, so a tool that keeps asking cannot hold a turn (or
// grow the call's record) without bound.
const MaxToolInputRequests = 20

// ToolInputIDCollisionFormat is the error of a call whose question's
// interrupt ID another call of the turn already uses (the ID of a record
// or a pending interrupt); %s is the ID.
const ToolInputIDCollisionFormat = "the tool asked a question, but its interrupt ID %s is already used by another call of this turn"

// toolInputID is the interrupt ID of a call's n-th question (1-based).
func toolInputID(callID string, n int) string { return callID + "-input-" + strconv.Itoa(n) }

// isToolInput reports an interrupt a tool's question raised (not an
// ask_user call's, whose ID is the call's).
func (in Interrupt) isToolInput() bool {
	return in.Kind == InterruptQuestion && in.InterruptID != in.ToolCallID
}

// toolAsked applies a tool Step's ToolInputRequested for record c.
func (s *State) toolAsked(c int, q InputRequest, attempt int, nowMs int64) []Command {
	rec := &s.ToolCalls[c]
	fail := func(msg string) []Command {
		if rec.TaskID != "" {
			// A started task may still run: its effect decides.
			return s.toolStepFailed(c, msg, false, attempt)
		}
		rec.Error = msg
		return s.finishCall(c, wire.ToolCallFailed, attempt)
	}
	n := rec.InputRequests + 1
	if n > MaxToolInputRequests {
		return fail(fmt.Sprintf("the tool asked more than %d questions", MaxToolInputRequests))
	}
	question, choices, err := checkToolQuestion(q)
	if err != nil {
		return fail("the tool asked an invalid question: " + err.Error())
	}
	id := toolInputID(rec.ToolCallID, n)
	if s.findCall(id) >= 0 || s.findInterrupt(id) >= 0 {
		return fail(fmt.Sprintf(ToolInputIDCollisionFormat, id))
	}
	rec.Status = wire.ToolCallAwaitingAnswer
	rec.InputRequests = n
	rec.InputContinuation = q.Continuation
	in := Interrupt{InterruptID: id, ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Kind: InterruptQuestion,
		Question: question, Choices: choices, AllowsFreeText: len(choices) == 0 || q.AllowsFreeText}
	if s.Options.InterruptDeadlineMs > 0 {
		in.DeadlineUnixMs = nowMs + s.Options.InterruptDeadlineMs
		in.RaisedUnixMs = nowMs
	}
	s.Interrupts = append(s.Interrupts, in)
	cmds := []Command{Emit{Event: newEvent(wire.EventInterruptRaised, s.ActiveTurnID, max(attempt, 1), wire.InterruptRaisedPayload{
		InterruptID: in.InterruptID, ToolCallID: in.ToolCallID, ToolName: in.ToolName, Deadline: formatDeadline(in.DeadlineUnixMs),
		Kind: string(in.Kind), Question: in.Question, Choices: nonNil(in.Choices), AllowsFreeText: in.AllowsFreeText,
	}).forStep(toolStep(s.ActiveTurnID, rec.ToolCallID))}}
	if in.DeadlineUnixMs > 0 {
		cmds = append(cmds, s.deadlineTimer(in, nowMs))
	}
	return cmds
}

// checkToolQuestion checks a tool's question with ask_user's limits and
// returns its trimmed question and choices.
func checkToolQuestion(q InputRequest) (string, []string, error) {
	question := strings.TrimSpace(q.Question)
	switch {
	case question == "":
		return "", nil, fmt.Errorf("the question is blank")
	case len(question) > maxQuestionBytes || !utf8.ValidString(question):
		return "", nil, fmt.Errorf("the question is over %d bytes or not UTF-8", maxQuestionBytes)
	case len(q.Choices) > maxChoices:
		return "", nil, fmt.Errorf("%d choices; at most %d", len(q.Choices), maxChoices)
	case len(q.Continuation) > maxAnswerBytes:
		return "", nil, fmt.Errorf("the continuation is over %d bytes", maxAnswerBytes)
	}
	var choices []string
	for i, c := range q.Choices {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			return "", nil, fmt.Errorf("choice %d is blank", i+1)
		case len(c) > maxChoiceBytes || !utf8.ValidString(c):
			return "", nil, fmt.Errorf("choice %d is over %d bytes or not UTF-8", i+1, maxChoiceBytes)
		case slices.Contains(choices, c):
			return "", nil, fmt.Errorf("choice %d %q is listed twice", i+1, c)
		}
		choices = append(choices, c)
	}
	return question, choices, nil
}

// toolInputAnswered applies the answer to a tool's question: the call
// runs again, with the answer after the earlier ones.
func (s *State) toolInputAnswered(c int, answer string) Command {
	rec := &s.ToolCalls[c]
	rec.InputAnswers = append(rec.InputAnswers, answer)
	rec.Status = wire.ToolCallApproved
	return s.runTool(*rec)
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
