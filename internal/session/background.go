package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Background sub-agents. A delegate_to_ call of a sub-agent in background
// mode answers at once with the child's session ID, and the child works
// while the session goes on. When the child has nothing left to do, its
// answer (or its failure) is queued into the session as a message, which
// starts a turn when none runs: the child's report is the durable wake-up.
// While it works, the session's model may send it a message or steer it
// (send_to_sub_agent) or cancel it (cancel_sub_agent). Closing the session
// closes its background children. A session does not continue as new
// while a background child runs.

// Host tools of background sub-agents, offered when one of the agent's
// sub-agents runs in background mode.
const (
	ToolSendToSubAgent = "send_to_sub_agent"
	ToolCancelSubAgent = "cancel_sub_agent"
)

// maxBackground bounds the background children a session runs at once.
const maxBackground = 8

// SubAgentNotePrefix starts the message that brings a background child's
// answer into its parent.
const SubAgentNotePrefix = "[Dex] "

// backgroundTools reports whether the session offers the tools of
// background sub-agents.
func (s *State) backgroundTools() bool {
	return s.delegates() && slices.ContainsFunc(s.Options.SubAgents, func(o SubAgentOption) bool { return o.Mode == wire.SubAgentModeBackground })
}

// backgroundToolDefinitions are send_to_sub_agent and cancel_sub_agent.
func backgroundToolDefinitions() []contract.ToolDefinition {
	return []contract.ToolDefinition{
		{
			Name: ToolSendToSubAgent,
			Description: "Send a message to a sub-agent that works in the background (its session_id is in the result of the " +
				"delegate_to_ call that started it). With steer, its running turn stops at its next safe point and takes the message at once.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"session_id":{"type":"string","description":"The sub-agent's session ID."},` +
				`"message":{"type":"string","description":"The message."},` +
				`"steer":{"type":["boolean","null"],"description":"Steer its running turn with the message instead of queueing it."}` +
				`},"required":["session_id","message"],"additionalProperties":false}`),
			Effect: contract.EffectRead,
		},
		{
			Name:        ToolCancelSubAgent,
			Description: "Cancel a sub-agent that works in the background: its running turn stops, and it answers that it was cancelled.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"session_id":{"type":"string","description":"The sub-agent's session ID."}` +
				`},"required":["session_id"],"additionalProperties":false}`),
			Effect: contract.EffectRead,
		},
	}
}

// backgroundTool reports whether name is a tool of background sub-agents
// the session offers.
func (s *State) backgroundTool(name string) bool {
	return (name == ToolSendToSubAgent || name == ToolCancelSubAgent) && s.backgroundTools()
}

type sendArgs struct {
	SessionID string `json:"session_id"`
	Message   string `json:"message"`
	Steer     *bool  `json:"steer"`
}

// controlBackground settles a send_to_sub_agent or cancel_sub_agent call at
// once: the order goes to the child by signal.
func (s *State) controlBackground(rec wire.ToolCall, attempt int) []Command {
	rec.Effect, rec.RequiresApproval = wire.EffectRead, false
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	cmds := []Command{Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
		ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect),
	}).forStep(step)}}
	final := func(status wire.ToolCallStatus, more ...Command) []Command {
		rec.Status = status
		s.ToolCalls = append(s.ToolCalls, rec)
		cmds = append(cmds, more...)
		return append(cmds, Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(status),
		}).forStep(step)})
	}
	var a sendArgs
	err := decodeArgs(rec.Arguments, &a)
	switch {
	case err != nil:
	case strings.TrimSpace(a.SessionID) == "":
		err = fmt.Errorf("session_id is required")
	case rec.ToolName == ToolSendToSubAgent && strings.TrimSpace(a.Message) == "":
		err = fmt.Errorf("message is required and must not be blank")
	case rec.ToolName == ToolSendToSubAgent && len(a.Message) > maxTaskBytes:
		err = fmt.Errorf("message is over %d bytes", maxTaskBytes)
	case rec.ToolName == ToolCancelSubAgent && a.Message != "":
		err = fmt.Errorf("cancel_sub_agent takes no message")
	}
	if err != nil {
		rec.Error = "invalid " + rec.ToolName + " arguments: " + err.Error()
		return final(wire.ToolCallFailed)
	}
	bi := s.findBackground(a.SessionID)
	if bi < 0 {
		var running []string
		for _, c := range s.Background {
			running = append(running, c.SessionID)
		}
		rec.Error = fmt.Sprintf("no sub-agent of this session works in the background with session_id %q (working: %s)", a.SessionID, noneIfEmpty(running))
		return final(wire.ToolCallFailed)
	}
	ctl := wire.SubAgentControl{Action: wire.SubAgentCancelTurn}
	rec.Output = `{"status":"cancelling","session_id":` + valueJSON(a.SessionID) + `}`
	if rec.ToolName == ToolSendToSubAgent {
		ctl = wire.SubAgentControl{Action: wire.SubAgentSend, Text: strings.TrimSpace(a.Message), Steer: a.Steer != nil && *a.Steer}
		rec.Output = `{"status":"sent","session_id":` + valueJSON(a.SessionID) + `}`
	}
	return final(wire.ToolCallSucceeded, SignalChild{ChildSessionID: a.SessionID, Control: ctl})
}

func noneIfEmpty(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

func (s *State) findBackground(sessionID string) int {
	return slices.IndexFunc(s.Background, func(c Child) bool { return c.SessionID == sessionID })
}

// backgroundReported applies a background child's report: its interrupts
// are mirrored as a waiting child's are; its end queues its answer into
// the session.
func (s *State) backgroundReported(bi int, rep wire.SubAgentReport) Result {
	child := &s.Background[bi]
	switch rep.Kind {
	case wire.SubAgentInterruptRaised, wire.SubAgentInterruptResolved:
		// The same bookkeeping as a waiting child's.
		s.Children = append(s.Children, *child)
		ci := len(s.Children) - 1
		r := s.subAgentReportedTo(ci, rep)
		s.Background[bi] = s.Children[ci]
		s.Children = s.Children[:ci]
		return r
	case wire.SubAgentTurnEnded:
		s.SubAgentSpend = addSpend(s.SubAgentSpend, subSpend(rep.Spend, child.Spend))
		child.Spend = rep.Spend
		if child.AnswerSequence != 0 {
			return applied(nil)
		}
		note := s.backgroundNote(*child, rep)
		if rep.Outcome == wire.SubAgentCompleted && rep.AnswerSequence > 0 && s.Options.Messages.Store && !s.Closed {
			child.AnswerSequence = rep.AnswerSequence
			return applied([]Command{ReadSubAgentAnswer{Input: SubAgentAnswerInput{
				SessionID: s.SessionID, ToolCallID: child.ToolCallID, ChildSessionID: child.SessionID, Sequence: rep.AnswerSequence, Note: note,
			}}})
		}
		if rep.Outcome == wire.SubAgentCompleted {
			note += rep.Answer
		}
		return s.backgroundDone(bi, rep.Outcome, rep.Error, note, "")
	}
	return Result{}
}

// backgroundNote is the beginning of the message that brings a background
// child's end into the session.
func (s *State) backgroundNote(c Child, rep wire.SubAgentReport) string {
	head := SubAgentNotePrefix + "The sub-agent " + c.Name + " (session " + c.SessionID + ", started by call " + c.ToolCallID + ") "
	switch rep.Outcome {
	case wire.SubAgentCompleted:
		return head + "finished. Its answer:\n"
	case wire.SubAgentCancelled:
		return head + "was cancelled before it finished."
	}
	return head + "failed: " + rep.Error
}

// backgroundDone forgets background child bi and queues the message about
// its end (text, or its preview with ref), which starts a turn when none
// runs. A closed session takes no more messages.
func (s *State) backgroundDone(bi int, outcome, errText, text, ref string) Result {
	c := s.Background[bi]
	s.Background = slices.Delete(s.Background, bi, bi+1)
	cmds := []Command{Emit{Event: newEvent(wire.EventSubAgentFinished, s.ActiveTurnID, waitingStepAttempt, wire.SubAgentFinishedPayload{
		ToolCallID: c.ToolCallID, ChildSessionID: c.SessionID, Outcome: outcome, Error: errText,
	})}}
	if s.Closed {
		return applied(cmds)
	}
	if ref == "" {
		text = cutUTF8(text, s.maxInlineMessage())
	}
	s.enqueue(text, ref)
	return applied(append(cmds, s.next()...))
}

// backgroundAnswerRead queues a background child's long answer, read
// whole (by reference when it is long).
func (s *State) backgroundAnswerRead(r SubAgentAnswerRead) Result {
	bi := slices.IndexFunc(s.Background, func(c Child) bool { return c.ToolCallID == r.ToolCallID && c.AnswerSequence != 0 })
	if bi < 0 {
		return Result{}
	}
	if r.Error != "" {
		c := s.Background[bi]
		return s.backgroundDone(bi, wire.SubAgentFailed, r.Error,
			SubAgentNotePrefix+"The sub-agent "+c.Name+" (session "+c.SessionID+") finished, but its answer could not be read: "+r.Error, "")
	}
	if r.OutputRef != "" && !s.Options.Messages.Store {
		return Result{}
	}
	return s.backgroundDone(bi, wire.SubAgentCompleted, "", r.Output, r.OutputRef)
}

// backgroundEnded queues the failure of a background child that ended
// without an answer, or never started.
func (s *State) backgroundEnded(bi int, reason string) Result {
	c := s.Background[bi]
	return s.backgroundDone(bi, wire.SubAgentFailed, reason,
		SubAgentNotePrefix+"The sub-agent "+c.Name+" (session "+c.SessionID+", started by call "+c.ToolCallID+") ended without an answer: "+reason, "")
}

// closeBackground tells every background child to close, when the
// session closes.
func (s *State) closeBackground() []Command {
	var cmds []Command
	for _, c := range s.Background {
		cmds = append(cmds, SignalChild{ChildSessionID: c.SessionID, Control: wire.SubAgentControl{Action: wire.SubAgentClose}})
	}
	return cmds
}
