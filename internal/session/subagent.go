package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Sub-agents. An agent that declares sub_agents is offered one host tool
// per sub-agent, delegate_to_<name>, with a task argument. A call starts a
// child session (StartChild: a child workflow of this one) whose first
// message is the task, and waits in waiting_for_sub_agent. The child
// reports to its parent (SubAgentReported): the interrupts it waits on,
// which the parent's snapshot lists with the child's session ID, and, once
// it has nothing left to do, how its last turn ended; in wait mode that
// answer is the call's result and the child closes. The parent's
// cancel_turn cancels the child's turn (parent_cancelled), its close
// closes it, and the child's model calls count against the parent's spend
// limits (ParentBudget). What travels between the two is bounded: an
// answer's beginning, one interrupt at a time, and counters; never a
// transcript.

// SubAgentOption is one sub-agent an agent declares, fixed when the session
// starts.
type SubAgentOption struct {
	// Name is the tool's suffix (delegate_to_<Name>): the child's agent.
	Name string `json:"name"`
	// FlowType is the child agent's workflow type.
	FlowType    string `json:"flow_type"`
	Description string `json:"description,omitempty"`
	// Mode is wire.SubAgentModeWait or wire.SubAgentModeBackground.
	Mode string `json:"mode"`
	// MaxTurns bounds the child's model calls (0: no bound).
	MaxTurns int `json:"max_turns,omitempty"`
}

// Child is a child session the active turn waits on.
type Child struct {
	SessionID  string `json:"session_id"`
	ToolCallID string `json:"tool_call_id"`
	TurnID     string `json:"turn_id"`
	Name       string `json:"name"`
	Mode       string `json:"mode"`
	// Spend is the child's total spend as it last reported it.
	Spend wire.Spend `json:"spend"`
	// Interrupts are the interrupts the child (or a session below it)
	// waits on, as it reported them.
	Interrupts []wire.Interrupt `json:"interrupts,omitempty"`
	// AnswerSequence is set while the child's long answer is read.
	AnswerSequence int64 `json:"answer_sequence,omitempty"`
}

// Limits of a delegation.
const (
	maxTaskBytes = 64 * 1024
	// maxChildInterrupts bounds what a parent mirrors of one child.
	maxChildInterrupts = 64
)

// Commands of sub-agents.
type (
	// StartChild starts a child session as a child workflow: WorkflowID is
	// the child's session ID. Its start failing is ChildStartFailed; its
	// workflow closing is ChildClosed.
	StartChild struct {
		ToolCallID string
		WorkflowID string
		FlowType   string
		Input      wire.StartInput
	}
	// SignalChild sends a child session a control (SignalSubAgentControl).
	SignalChild struct {
		ChildSessionID string
		Control        wire.SubAgentControl
	}
	// ReportToParent sends the parent session a report
	// (SignalSubAgentReport).
	ReportToParent struct {
		ParentSessionID string
		Report          wire.SubAgentReport
	}
	// ReadSubAgentAnswer runs the ReadSubAgentAnswer local activity: a
	// child's answer longer than its preview is read whole from the
	// message store. Its result is SubAgentAnswerRead.
	ReadSubAgentAnswer struct {
		Input SubAgentAnswerInput
	}
)

func (StartChild) isCommand()         {}
func (SignalChild) isCommand()        {}
func (ReportToParent) isCommand()     {}
func (ReadSubAgentAnswer) isCommand() {}

// SubAgentAnswerInput is the input of ReadSubAgentAnswer: the message at
// Sequence of the child's transcript is the answer, and the result (the
// JSON the model sees, Head's fields then the answer) is kept in the
// parent's session.
type SubAgentAnswerInput struct {
	SessionID      string `json:"session_id"`
	TurnID         string `json:"turn_id"`
	ToolCallID     string `json:"tool_call_id"`
	ChildSessionID string `json:"child_session_id"`
	Sequence       int64  `json:"sequence"`
	// Note, when set, makes the result a message instead: Note, then the
	// answer (a background child's, queued into the session).
	Note string `json:"note,omitempty"`
}

// Inputs of sub-agents.
type (
	// SubAgentReported is a child's report (SignalSubAgentReport).
	SubAgentReported struct {
		Report wire.SubAgentReport
		NowMs  int64
	}
	// ChildStartFailed says the child workflow of a call could not start.
	ChildStartFailed struct {
		ToolCallID string
		Reason     string
	}
	// ChildClosed says the child workflow of a call closed; Reason is set
	// when it did not complete (failed, terminated, timed out).
	ChildClosed struct {
		ToolCallID     string
		ChildSessionID string
		Reason         string
	}
	// SubAgentAnswerRead is the result of ReadSubAgentAnswer: Output is
	// the call's result (its preview when OutputRef is set), or Error why
	// the answer could not be read.
	SubAgentAnswerRead struct {
		TurnID     string
		ToolCallID string
		Output     string
		OutputRef  string
		Error      string
		// Background is set for a background child's answer: Output is
		// the message that tells the session (OutputRef its stored
		// whole).
		Background bool
	}
	// ParentControl is a parent's order (SignalSubAgentControl).
	ParentControl struct {
		Control wire.SubAgentControl
	}
)

func (SubAgentReported) isInput()   {}
func (ChildStartFailed) isInput()   {}
func (ChildClosed) isInput()        {}
func (SubAgentAnswerRead) isInput() {}
func (ParentControl) isInput()      {}

// subAgentTool returns the sub-agent a tool name delegates to, or nil.
func (s *State) subAgentTool(name string) *SubAgentOption {
	rest, ok := strings.CutPrefix(name, wire.SubAgentToolPrefix)
	if !ok || !s.delegates() {
		return nil
	}
	for i := range s.Options.SubAgents {
		if s.Options.SubAgents[i].Name == rest {
			return &s.Options.SubAgents[i]
		}
	}
	return nil
}

// delegates reports whether the session offers its sub-agents: a child
// deep in a chain offers none.
func (s *State) delegates() bool {
	return len(s.Options.SubAgents) > 0 && (s.SubAgent == nil || len(s.SubAgent.Lineage) < wire.MaxSubAgentDepth)
}

// hostTools are the tools the session runs itself: the enabled built-ins
// and its sub-agents.
func (s *State) hostTools() []contract.ToolDefinition {
	defs := BuiltInToolDefinitions(s.Options.BuiltInTools)
	if !s.delegates() {
		return defs
	}
	if s.backgroundTools() {
		defs = append(defs, backgroundToolDefinitions()...)
	}
	for _, sa := range s.Options.SubAgents {
		desc := sa.Description
		if desc == "" {
			desc = "The " + sa.Name + " agent."
		}
		desc = "Delegate a task to a sub-agent: " + desc + " It works in its own session with its own tools; "
		if sa.Mode == wire.SubAgentModeBackground {
			desc += "this call answers at once with its session ID, and its answer comes later as a message."
		} else {
			desc += "this call returns its final answer."
		}
		defs = append(defs, contract.ToolDefinition{
			Name:        wire.SubAgentToolPrefix + sa.Name,
			Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"task":{"type":"string","description":"The task, with everything the sub-agent needs to know: it sees nothing else of this conversation."}` +
				`},"required":["task"],"additionalProperties":false}`),
			Effect: contract.EffectRead,
		})
	}
	return defs
}

// delegateArgs are a delegate_to_ call's arguments.
type delegateArgs struct {
	Task string `json:"task"`
}

func parseDelegate(args string) (string, error) {
	var a delegateArgs
	if err := decodeArgs(args, &a); err != nil {
		return "", err
	}
	task := strings.TrimSpace(a.Task)
	switch {
	case task == "":
		return "", fmt.Errorf("task is required and must not be blank")
	case len(task) > maxTaskBytes:
		return "", fmt.Errorf("task is over %d bytes", maxTaskBytes)
	}
	return task, nil
}

// childSessionID is the child's session ID: the parent's, then the
// delegation's number in the session. It is the same on every replay.
func (s *State) childSessionID() string {
	s.SubAgentSeq++
	return s.SessionID + ".sub-" + strconv.Itoa(s.SubAgentSeq)
}

// delegate records a delegate_to_ call of a ToolCallsRequested: it starts
// the child session, or fails the call for invalid arguments.
func (s *State) delegate(rec wire.ToolCall, sa *SubAgentOption, attempt int) []Command {
	rec.Effect, rec.RequiresApproval = wire.EffectRead, false
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	cmds := []Command{Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
		ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect),
	}).forStep(step)}}
	task, err := parseDelegate(rec.Arguments)
	if err != nil {
		rec.Status = wire.ToolCallFailed
		rec.Error = "invalid " + rec.ToolName + " arguments: " + err.Error()
		s.ToolCalls = append(s.ToolCalls, rec)
		return append(cmds, Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(rec.Status),
		}).forStep(step)})
	}
	background := sa.Mode == wire.SubAgentModeBackground
	if background && len(s.Background) >= maxBackground {
		rec.Status = wire.ToolCallFailed
		rec.Error = fmt.Sprintf("%d sub-agents already run in the background, the most a session may have: wait for one to answer, or cancel one with %s", maxBackground, ToolCancelSubAgent)
		s.ToolCalls = append(s.ToolCalls, rec)
		return append(cmds, Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(rec.Status),
		}).forStep(step)})
	}
	child := s.childSessionID()
	rec.ChildSessionID = child
	entry := Child{SessionID: child, ToolCallID: rec.ToolCallID, TurnID: s.ActiveTurnID, Name: sa.Name, Mode: sa.Mode}
	if background {
		// The call answers at once; the child's answer comes as a message.
		rec.Status = wire.ToolCallSucceeded
		rec.Output = `{"status":"started","session_id":` + valueJSON(child) + `}`
		entry.TurnID = ""
		s.Background = append(s.Background, entry)
	} else {
		rec.Status = wire.ToolCallWaitingForSubAgent
		s.Children = append(s.Children, entry)
	}
	s.ToolCalls = append(s.ToolCalls, rec)
	var lineage []string
	if s.SubAgent != nil {
		lineage = append(lineage, s.SubAgent.Lineage...)
	}
	lineage = append(lineage, s.SessionID)
	start := &wire.SubAgentStart{
		ParentSessionID: s.SessionID, ToolCallID: rec.ToolCallID, Name: sa.Name, Mode: sa.Mode, MaxTurns: sa.MaxTurns,
		Lineage: lineage, Budget: s.childBudget(),
	}
	in := wire.StartInput{InitialMessage: task, APIToken: s.APIToken, SubAgent: start}
	if s.Options.SearchAttributes {
		in.ActiveStepSearchMode = wire.ActiveStepSearchTypes
	}
	cmds = append(cmds,
		Emit{Event: newEvent(wire.EventSubAgentStarted, s.ActiveTurnID, attempt, wire.SubAgentStartedPayload{
			ToolCallID: rec.ToolCallID, ChildSessionID: child, Name: sa.Name, Agent: sa.Name, Mode: sa.Mode, Task: preview(task),
		}).forStep(step)},
		StartChild{ToolCallID: rec.ToolCallID, WorkflowID: child, FlowType: sa.FlowType, Input: in})
	if background {
		cmds = append(cmds, Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(rec.Status),
		}).forStep(step)})
	}
	return cmds
}

// childBudget is the budget a new child's model calls count against: this
// session's agent's, with what it used (its children included), and the
// budget above it when it is a child itself.
func (s *State) childBudget() *wire.ParentBudget {
	used := s.sessionSpend()
	if s.SubAgent != nil && s.SubAgent.Budget != nil {
		// The root's budget bounds the whole tree: what this child used
		// counts on top of what its parent had used.
		b := *s.SubAgent.Budget
		b.Used = addSpend(b.Used, used)
		return &b
	}
	return &wire.ParentBudget{Agent: s.Options.Agent, APIToken: s.APIToken, Used: used}
}

func addSpend(a, b wire.Spend) wire.Spend {
	return wire.Spend{ModelCalls: a.ModelCalls + b.ModelCalls, InputTokens: a.InputTokens + b.InputTokens,
		OutputTokens: a.OutputTokens + b.OutputTokens, CostMicros: a.CostMicros + b.CostMicros}
}

func subSpend(a, b wire.Spend) wire.Spend {
	return wire.Spend{ModelCalls: a.ModelCalls - b.ModelCalls, InputTokens: a.InputTokens - b.InputTokens,
		OutputTokens: a.OutputTokens - b.OutputTokens, CostMicros: a.CostMicros - b.CostMicros}
}

func (s *State) findChild(sessionID string) int {
	return slices.IndexFunc(s.Children, func(c Child) bool { return c.SessionID == sessionID })
}

// childInterrupts are the interrupts this session's children wait on, as
// its snapshot lists them: with the child's session and the path from
// this session down to it.
func (s *State) childInterrupts() []wire.Interrupt {
	var out []wire.Interrupt
	for _, c := range append(slices.Clip(s.Children), s.Background...) {
		for _, in := range c.Interrupts {
			in.Path = append([]string{s.SessionID}, in.Path...)
			out = append(out, in)
		}
	}
	return out
}

// subAgentReported applies a child's report.
func (s *State) subAgentReported(r SubAgentReported) Result {
	rep := r.Report
	if bi := s.findBackground(rep.ChildSessionID); bi >= 0 {
		return s.backgroundReported(bi, rep)
	}
	ci := s.findChild(rep.ChildSessionID)
	if ci < 0 {
		// A child whose call is final (a cancelled turn's): its news
		// changes nothing here, its spend still counts.
		if rep.Kind == wire.SubAgentTurnEnded {
			s.SubAgentSpend = addSpend(s.SubAgentSpend, s.uncountedSpend(rep))
		}
		return Result{}
	}
	return s.subAgentReportedTo(ci, rep)
}

// subAgentReportedTo applies a report of child ci.
func (s *State) subAgentReportedTo(ci int, rep wire.SubAgentReport) Result {
	child := &s.Children[ci]
	switch rep.Kind {
	case wire.SubAgentInterruptRaised:
		if rep.Interrupt == nil || rep.Interrupt.InterruptID == "" || rep.Interrupt.SessionID == "" || len(child.Interrupts) >= maxChildInterrupts {
			return Result{}
		}
		in := *rep.Interrupt
		if slices.ContainsFunc(child.Interrupts, func(have wire.Interrupt) bool {
			return have.SessionID == in.SessionID && have.InterruptID == in.InterruptID
		}) {
			return applied(nil)
		}
		child.Interrupts = append(child.Interrupts, in)
		return applied(nil)
	case wire.SubAgentInterruptResolved:
		holder := rep.Interrupt
		child.Interrupts = slices.DeleteFunc(child.Interrupts, func(have wire.Interrupt) bool {
			return have.InterruptID == rep.InterruptID && (holder == nil || have.SessionID == holder.SessionID)
		})
		return applied(nil)
	case wire.SubAgentTurnEnded:
		s.SubAgentSpend = addSpend(s.SubAgentSpend, subSpend(rep.Spend, child.Spend))
		child.Spend = rep.Spend
		return applied(s.childAnswered(ci, rep))
	}
	return Result{}
}

// uncountedSpend is what a report of a child no longer tracked adds: its
// whole total, which the parent never counted (a child's calls are
// counted when its turn ends).
func (s *State) uncountedSpend(rep wire.SubAgentReport) wire.Spend {
	i := slices.IndexFunc(s.Settled, func(c SettledChild) bool { return c.SessionID == rep.ChildSessionID })
	if i < 0 {
		return wire.Spend{}
	}
	add := subSpend(rep.Spend, s.Settled[i].Spend)
	s.Settled[i].Spend = rep.Spend
	return add
}

// SettledChild is a child whose call was settled before it reported its
// end (a cancel): its later spend reports still count.
type SettledChild struct {
	SessionID string     `json:"session_id"`
	Spend     wire.Spend `json:"spend"`
}

// maxSettled bounds the settled children a session remembers.
const maxSettled = 16

// childAnswered settles the call of child ci with the end of its turn.
func (s *State) childAnswered(ci int, rep wire.SubAgentReport) []Command {
	child := s.Children[ci]
	c := s.findCall(child.ToolCallID)
	if c < 0 || child.TurnID != s.ActiveTurnID || s.ToolCalls[c].Status != wire.ToolCallWaitingForSubAgent || child.AnswerSequence != 0 {
		return nil
	}
	if rep.Outcome == wire.SubAgentCompleted && rep.AnswerSequence > 0 && s.Options.Messages.Store {
		// The answer is longer than its beginning: read it whole.
		s.Children[ci].AnswerSequence = rep.AnswerSequence
		return []Command{ReadSubAgentAnswer{Input: SubAgentAnswerInput{
			SessionID: s.SessionID, TurnID: s.ActiveTurnID, ToolCallID: child.ToolCallID,
			ChildSessionID: child.SessionID, Sequence: rep.AnswerSequence,
		}}}
	}
	rec := &s.ToolCalls[c]
	switch rep.Outcome {
	case wire.SubAgentCompleted:
		rec.Output = SubAgentResult(child.SessionID, rep.Answer)
		return s.settleChild(ci, c, wire.ToolCallSucceeded, rep.Outcome, "")
	case wire.SubAgentCancelled:
		rec.Error = "the sub-agent's turn was cancelled in its session " + child.SessionID
	default:
		rec.Error = "the sub-agent failed: " + rep.Error
	}
	return s.settleChild(ci, c, wire.ToolCallFailed, rep.Outcome, rec.Error)
}

// SubAgentResult is a completed delegation's result as the model sees it.
func SubAgentResult(childSessionID, answer string) string {
	return `{"status":"completed","session_id":` + valueJSON(childSessionID) + `,"answer":` + valueJSON(answer) + `}`
}

// settleChild makes child ci's call final with status and forgets the
// child.
func (s *State) settleChild(ci, c int, status wire.ToolCallStatus, outcome, errText string) []Command {
	child := s.Children[ci]
	s.Children = slices.Delete(s.Children, ci, ci+1)
	cmds := []Command{Emit{Event: newEvent(wire.EventSubAgentFinished, s.ActiveTurnID, waitingStepAttempt, wire.SubAgentFinishedPayload{
		ToolCallID: child.ToolCallID, ChildSessionID: child.SessionID, Outcome: outcome, Error: errText,
	}).forStep(toolStep(s.ActiveTurnID, child.ToolCallID))}}
	return append(cmds, s.finishCall(c, status, waitingStepAttempt)...)
}

// subAgentAnswerRead settles a call with the child's answer read whole.
func (s *State) subAgentAnswerRead(r SubAgentAnswerRead) Result {
	if r.Background {
		return s.backgroundAnswerRead(r)
	}
	if r.TurnID != s.ActiveTurnID {
		return Result{}
	}
	ci := slices.IndexFunc(s.Children, func(c Child) bool { return c.ToolCallID == r.ToolCallID && c.AnswerSequence != 0 })
	c := s.findCall(r.ToolCallID)
	if ci < 0 || c < 0 || s.ToolCalls[c].Status != wire.ToolCallWaitingForSubAgent {
		return Result{}
	}
	rec := &s.ToolCalls[c]
	if r.Error != "" {
		rec.Error = "the sub-agent's answer could not be read: " + r.Error
		return applied(s.settleChild(ci, c, wire.ToolCallFailed, wire.SubAgentFailed, rec.Error))
	}
	rec.Output = r.Output
	if r.OutputRef != "" {
		s.setOutputRef(rec.ToolCallID, r.OutputRef)
	}
	return applied(s.settleChild(ci, c, wire.ToolCallSucceeded, wire.SubAgentCompleted, ""))
}

// childStartFailed fails the call whose child could not start.
func (s *State) childStartFailed(f ChildStartFailed) Result {
	if bi := slices.IndexFunc(s.Background, func(c Child) bool { return c.ToolCallID == f.ToolCallID }); bi >= 0 {
		return s.backgroundEnded(bi, "it could not start: "+f.Reason)
	}
	ci := slices.IndexFunc(s.Children, func(c Child) bool { return c.ToolCallID == f.ToolCallID })
	if ci < 0 {
		return Result{}
	}
	c := s.findCall(f.ToolCallID)
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallWaitingForSubAgent {
		s.Children = slices.Delete(s.Children, ci, ci+1)
		return applied(nil)
	}
	s.ToolCalls[c].Error = "the sub-agent could not start: " + f.Reason
	return applied(s.settleChild(ci, c, wire.ToolCallFailed, wire.SubAgentFailed, s.ToolCalls[c].Error))
}

// childClosed fails the call of a child whose workflow closed without
// reporting an answer (terminated, failed, timed out). Reports that came
// before its close were applied first.
func (s *State) childClosed(cl ChildClosed) Result {
	if bi := s.findBackground(cl.ChildSessionID); bi >= 0 {
		if s.Background[bi].AnswerSequence != 0 {
			return applied(nil) // its answer is being read
		}
		reason := cl.Reason
		if reason == "" {
			reason = "it closed without an answer"
		}
		return s.backgroundEnded(bi, reason)
	}
	ci := s.findChild(cl.ChildSessionID)
	if ci < 0 {
		return Result{}
	}
	c := s.findCall(cl.ToolCallID)
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallWaitingForSubAgent || s.Children[ci].AnswerSequence != 0 {
		if s.Children[ci].AnswerSequence == 0 {
			s.Children = slices.Delete(s.Children, ci, ci+1)
		}
		return applied(nil)
	}
	reason := cl.Reason
	if reason == "" {
		reason = "it closed without an answer"
	}
	s.ToolCalls[c].Error = "the sub-agent's session " + cl.ChildSessionID + " ended: " + reason
	return applied(s.settleChild(ci, c, wire.ToolCallFailed, wire.SubAgentFailed, s.ToolCalls[c].Error))
}

// stopChild settles call c, whose child runs, as stopped by a cancel
// (reason), and tells the child to cancel its turn.
func (s *State) stopChild(c int, reason string) []Command {
	rec := s.ToolCalls[c]
	ci := slices.IndexFunc(s.Children, func(ch Child) bool { return ch.ToolCallID == rec.ToolCallID })
	cmds := []Command{SignalChild{ChildSessionID: rec.ChildSessionID, Control: wire.SubAgentControl{Action: wire.SubAgentCancelTurn}}}
	if ci >= 0 {
		s.rememberSettled(s.Children[ci])
		s.Children = slices.Delete(s.Children, ci, ci+1)
	}
	cmds = append(cmds, Emit{Event: newEvent(wire.EventSubAgentFinished, s.ActiveTurnID, waitingStepAttempt, wire.SubAgentFinishedPayload{
		ToolCallID: rec.ToolCallID, ChildSessionID: rec.ChildSessionID, Outcome: wire.SubAgentCancelled,
	}).forStep(toolStep(s.ActiveTurnID, rec.ToolCallID))})
	s.ToolCalls[c].CancellationReason = reason
	s.ToolCalls[c].RejectionMessage = CancelledToolResult
	return append(cmds, s.finishCall(c, wire.ToolCallRejected, waitingStepAttempt)...)
}

// rememberSettled keeps a child settled before its end so its later spend
// reports count.
func (s *State) rememberSettled(c Child) {
	s.Settled = append(s.Settled, SettledChild{SessionID: c.SessionID, Spend: c.Spend})
	if len(s.Settled) > maxSettled {
		s.Settled = s.Settled[len(s.Settled)-maxSettled:]
	}
}

// parentControl applies the parent's order: cancel the running turn with
// the reason parent_cancelled, or that and close.
func (s *State) parentControl(p ParentControl) Result {
	if s.SubAgent == nil || !s.Started {
		return Result{}
	}
	var cmds []Command
	if p.Control.Action == wire.SubAgentSend {
		return s.parentSend(p)
	}
	if s.ActiveTurnID != "" && s.Phase != phaseNone {
		cmds = s.cancelTurnFor(CancelTurn{TurnID: s.ActiveTurnID}, controlParentCancelled).Commands
	}
	if p.Control.Action == wire.SubAgentClose {
		s.Queued, s.Steered = nil, nil
		cmds = append(cmds, s.closeSession().Commands...)
	}
	return applied(cmds)
}

// parentSend takes a message the parent sent: queued, or steering the
// running turn.
func (s *State) parentSend(p ParentControl) Result {
	if p.Control.Steer {
		return s.steerUserMessage(SteerUserMessage{Text: p.Control.Text})
	}
	return s.sendUserMessage(SendUserMessage{Text: p.Control.Text})
}

// reportToParent is what a child tells its parent after an input: the
// interrupts it (or a session below it) began or stopped waiting on, and,
// once it has nothing left to do, how its last turn ended. In wait mode
// the child then closes.
func (s *State) reportToParent() []Command {
	if s.SubAgent == nil || !s.Started {
		return nil
	}
	var cmds []Command
	report := func(r wire.SubAgentReport) {
		r.ChildSessionID, r.ToolCallID = s.SessionID, s.SubAgent.ToolCallID
		r.Spend = s.sessionSpend()
		cmds = append(cmds, ReportToParent{ParentSessionID: s.SubAgent.ParentSessionID, Report: r})
	}
	pending := s.pendingForParent()
	for _, key := range s.Reported {
		if !slices.ContainsFunc(pending, func(in wire.Interrupt) bool { return reportKey(in) == key }) {
			holder, id, _ := strings.Cut(key, "\x00")
			report(wire.SubAgentReport{Kind: wire.SubAgentInterruptResolved, InterruptID: id, Interrupt: &wire.Interrupt{InterruptID: id, SessionID: holder}})
		}
	}
	var keys []string
	for _, in := range pending {
		key := reportKey(in)
		keys = append(keys, key)
		if !slices.Contains(s.Reported, key) {
			in := in
			report(wire.SubAgentReport{Kind: wire.SubAgentInterruptRaised, Interrupt: &in})
		}
	}
	s.Reported = keys
	if s.Idle() && s.TurnCount == 0 && s.LastTurnError != "" && !s.Closed {
		// The task never started a turn (the message was refused): that is
		// the answer.
		report(wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, Outcome: wire.SubAgentFailed, Error: s.LastTurnError})
		return append(cmds, s.closeSession().Commands...)
	}
	if s.Idle() && len(s.Queued) == 0 && len(s.Steered) == 0 && s.TurnCount > s.ReportedTurns {
		s.ReportedTurns = s.TurnCount
		report(s.turnEndReport())
		// Its task is done: the parent has its answer. (A background
		// child's parent may send it more while it works, not after.)
		cmds = append(cmds, s.closeSession().Commands...)
	}
	return cmds
}

// pendingForParent lists what the session waits on, as its parent mirrors
// it: its own interrupts (SessionID itself, Path [itself]) and its
// children's (Path from itself down).
func (s *State) pendingForParent() []wire.Interrupt {
	var out []wire.Interrupt
	for _, in := range s.Interrupts {
		w := s.wireInterrupt(in)
		w.SessionID, w.Path, w.Agent = s.SessionID, []string{s.SessionID}, s.Options.Agent
		out = append(out, w)
	}
	return append(out, s.childInterrupts()...)
}

func reportKey(in wire.Interrupt) string { return in.SessionID + "\x00" + in.InterruptID }

// turnEndReport reports how the last turn ended: its answer (the last
// assistant text), its error, or its cancel.
func (s *State) turnEndReport() wire.SubAgentReport {
	turn := "turn-" + strconv.Itoa(s.TurnCount)
	r := wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, TurnID: turn}
	switch {
	case s.CancelledTurn == turn:
		r.Outcome = wire.SubAgentCancelled
	case s.LastTurnError != "":
		r.Outcome, r.Error = wire.SubAgentFailed, s.LastTurnError
	default:
		r.Outcome = wire.SubAgentCompleted
		r.Answer, r.AnswerSequence = s.lastAnswer(turn)
	}
	return r
}

// lastAnswer returns the text of the turn's last assistant message, and
// its sequence when the session holds only its beginning.
func (s *State) lastAnswer(turn string) (string, int64) {
	if s.Options.Messages.Store {
		for i := len(s.Window) - 1; i >= 0; i-- {
			e := s.Window[i]
			if e.TurnID != turn {
				break
			}
			if e.Role == contract.RoleAssistant && e.Text != "" {
				if e.Truncated {
					return e.Text, e.Sequence
				}
				return e.Text, 0
			}
		}
		return "", 0
	}
	for i := len(s.Messages) - 1; i >= 0; i-- {
		m := s.Messages[i]
		if m.TurnID != turn {
			break
		}
		if m.Role == contract.RoleAssistant && m.Text != "" {
			return preview(m.Text), 0
		}
	}
	return "", 0
}

// maxTurnsReached fails a child's turn before a model call past its
// max_turns.
func (s *State) maxTurnsReached() string {
	if s.SubAgent == nil || s.SubAgent.MaxTurns <= 0 || s.ModelSteps < s.SubAgent.MaxTurns {
		return ""
	}
	return fmt.Sprintf("the sub-agent reached its max_turns (%d model calls)", s.SubAgent.MaxTurns)
}

// checkSubAgentStart refuses a sub-agent start the session cannot take.
func checkSubAgentStart(id string, sa *wire.SubAgentStart) string {
	switch {
	case sa.ParentSessionID == "" || sa.ToolCallID == "":
		return "parent_session_id and tool_call_id are required"
	case sa.ParentSessionID == id:
		return "a session cannot be its own sub-agent"
	case len(sa.Lineage) == 0 || sa.Lineage[len(sa.Lineage)-1] != sa.ParentSessionID:
		return "lineage must end with the parent session"
	case len(sa.Lineage) > wire.MaxSubAgentDepth:
		return fmt.Sprintf("the chain of sub-agents is deeper than %d", wire.MaxSubAgentDepth)
	case sa.Mode != wire.SubAgentModeWait && sa.Mode != wire.SubAgentModeBackground:
		return fmt.Sprintf("mode %q is not wait or background", sa.Mode)
	case sa.MaxTurns < 0:
		return "max_turns must not be negative"
	}
	return ""
}

// StepReadSubAgentAnswer names the local activity of ReadSubAgentAnswer.
const StepReadSubAgentAnswer = "ReadSubAgentAnswer"

// SubAgentAnswer is the result of ReadSubAgentAnswer: the call's result,
// its preview when OutputRef is set.
type SubAgentAnswer struct {
	Output    string `json:"output"`
	OutputRef string `json:"output_ref,omitempty"`
}
