package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/sdk/converter"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Texts reads what a session's history holds only the beginning of: a
// stored message by its sequence, and a blob (a long message, argument or
// output) by its reference. The message store implements it; nil leaves
// such texts cut, marked Truncated.
type Texts interface {
	Message(ctx context.Context, sessionID string, sequence int64) (string, error)
	Blob(ctx context.Context, sessionID, ref string) (string, error)
}

// Session is what Decode reads of one session.
type Session struct {
	ID       string
	Agent    string
	FlowType string
	// Status is the latest run's workflow status.
	Status string
	// Runs are the histories of its runs, oldest first.
	Runs []*historypb.History
}

// Activity types Decode reads.
const (
	stepRunModel   = "RunModel"
	stepCallTool   = "CallTool"
	stepCallSingle = "CallSingleAttemptTool"
	stepPollTask   = "PollToolTask"
)

// decoder keeps what Decode has seen.
type decoder struct {
	ctx     context.Context
	id      string
	texts   Texts
	c       *Case
	calls   map[string]int     // tool call ID -> index in c.Records
	turns   map[string]*Record // turn records, placed after their turn's records at the end
	order   []string           // turn IDs, as first seen
	touched map[string]int     // turn ID -> len(c.Records) when last touched
	sched   map[int64]scheduled
	pending map[string]string               // an ask_user call's interrupt ID -> its call ID
	asked   map[string]session.InputRequest // a tool's last question, by call ID
	opts    *session.Options                // the session's recorded settings, once read
}

type scheduled struct {
	typ   string
	at    time.Time
	turn  string
	input *commonpb.Payloads
}

var dc = converter.GetDefaultDataConverter()

// Decode turns a session's histories into a case. It reads the records the
// session's Steps and updates left: RunModel outcomes (the calls asked for,
// the approval rules' decisions, the stored messages, usage and cost),
// tool Step inputs and results, and the updates people sent.
func Decode(ctx context.Context, s Session, texts Texts, now time.Time) (*Case, error) {
	if len(s.Runs) == 0 || len(s.Runs[0].GetEvents()) == 0 {
		return nil, fmt.Errorf("session %s: no history", s.ID)
	}
	d := &decoder{ctx: ctx, id: s.ID, texts: texts, c: &Case{}, calls: map[string]int{}, turns: map[string]*Record{}, touched: map[string]int{},
		pending: map[string]string{}, asked: map[string]session.InputRequest{}}
	first := s.Runs[0].GetEvents()[0]
	d.c.Header = Header{SessionID: s.ID, Agent: s.Agent, FlowType: s.FlowType, Status: s.Status, Runs: len(s.Runs),
		StartedAt: first.GetEventTime().AsTime().UTC().Format(time.RFC3339), CapturedAt: now.UTC().Format(time.RFC3339)}
	for i, run := range s.Runs {
		d.sched = map[int64]scheduled{}
		for _, e := range run.GetEvents() {
			if err := d.event(e, i == 0); err != nil {
				return nil, fmt.Errorf("session %s, run %d, event %d: %w", s.ID, i+1, e.GetEventId(), err)
			}
		}
	}
	d.placeTurns()
	return d.c, nil
}

// placeTurns puts each turn's record where the decoder last touched the
// turn: after its calls and their answers, its summary comes when it ends.
func (d *decoder) placeTurns() {
	after := map[int][]Record{}
	for _, id := range d.order {
		after[d.touched[id]] = append(after[d.touched[id]], *d.turns[id])
	}
	out := make([]Record, 0, len(d.c.Records)+len(d.order))
	for i, r := range d.c.Records {
		out = append(out, after[i]...)
		out = append(out, r)
	}
	d.c.Records = append(out, after[len(d.c.Records)]...)
}

func (d *decoder) event(e *historypb.HistoryEvent, firstRun bool) error {
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		if !firstRun {
			return nil // a continuation: its input is the carried state
		}
		var in wire.StartInput
		if p := e.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(); len(p) > 0 {
			if err := dc.FromPayload(p[0], &in); err != nil {
				return fmt.Errorf("the start input: %w", err)
			}
		}
		if len(in.SessionSettings) > 0 {
			d.c.Header.Settings = in.SessionSettings
		}
		if strings.TrimSpace(in.InitialMessage) != "" || in.InitialMessageRef != "" {
			d.userMessage(in.InitialMessage, in.InitialMessageRef, false, false)
		}
	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		// The session's settings, recorded at its start (a side effect):
		// they say how the session classed the calls it did not run.
		a := e.GetMarkerRecordedEventAttributes()
		if d.opts != nil || a.GetMarkerName() != "SideEffect" {
			return nil
		}
		if p := a.GetDetails()["data"].GetPayloads(); len(p) > 0 {
			var o session.Options
			if dc.FromPayload(p[0], &o) == nil && o.Agent != "" {
				d.opts = &o
			}
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		return d.update(e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		a := e.GetActivityTaskScheduledEventAttributes()
		s := scheduled{typ: a.GetActivityType().GetName(), at: e.GetEventTime().AsTime(), input: a.GetInput()}
		d.sched[e.GetEventId()] = s
		if s.typ == stepRunModel {
			// The turn exists from its first model call on: a cancel or a
			// steer may come before the call ends.
			in, err := d.input(s)
			if err != nil {
				return err
			}
			d.turn(in.TurnID)
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		a := e.GetActivityTaskCompletedEventAttributes()
		s, ok := d.sched[a.GetScheduledEventId()]
		if !ok {
			return nil
		}
		return d.completed(s, a.GetResult(), e.GetEventTime().AsTime())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		s, ok := d.sched[e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()]
		if !ok {
			return nil
		}
		in, err := d.input(s)
		if err != nil {
			return err
		}
		took := e.GetEventTime().AsTime().Sub(s.at).Milliseconds()
		if t := d.turn(in.TurnID); s.typ == stepRunModel {
			t.ModelMs += took
		} else if s.typ != "" {
			t.ToolMs += took
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		id := e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
		msg := e.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage()
		if t := e.GetActivityTaskTimedOutEventAttributes(); t != nil {
			id, msg = t.GetScheduledEventId(), "timed out: "+t.GetFailure().GetMessage()
		}
		s, ok := d.sched[id]
		if !ok {
			return nil
		}
		return d.failed(s, msg, e.GetEventTime().AsTime())
	}
	return nil
}

// update reads an update people (or their apps) sent. A refused update
// is not in history: the validator refused it before it was accepted.
func (d *decoder) update(in *updatepb.Input) error {
	arg := func(v any) error {
		p := in.GetArgs().GetPayloads()
		if len(p) == 0 {
			return fmt.Errorf("update %s has no argument", in.GetName())
		}
		return dc.FromPayload(p[0], v)
	}
	switch in.GetName() {
	case wire.UpdateSendUserMessage:
		var r wire.SendUserMessageRequest
		if err := arg(&r); err != nil {
			return err
		}
		if r.Mode == wire.SendModeSteer || r.Mode == wire.SendModeInterrupt {
			d.endRunningTurn(map[bool]string{true: "steered", false: "cancelled"}[r.Mode == wire.SendModeSteer])
		}
		d.userMessage(r.Text, r.TextRef, r.PlanMode, r.Mode == wire.SendModeSteer)
	case wire.UpdateSteerUserMessage:
		var r wire.SteerUserMessageRequest
		if err := arg(&r); err != nil {
			return err
		}
		d.endRunningTurn("steered")
		if r.MessageID == "" { // a queued message steered was recorded when it was sent
			d.userMessage(r.Text, r.TextRef, r.PlanMode, true)
		}
	case wire.UpdateResolveInterrupt:
		var r wire.ResolveInterruptRequest
		if err := arg(&r); err != nil {
			return err
		}
		if r.SessionID != "" && r.SessionID != d.id {
			return nil // a sub-agent's: its own session records it
		}
		if call, ok := d.questionCall(r.InterruptID); ok {
			d.c.Records = append(d.c.Records, d.question(call, wire.QuestionDeclined, ""))
			return nil
		}
		i, ok := d.calls[r.InterruptID]
		if !ok {
			return nil
		}
		d.c.Records[i].RequiresApproval = true
		call := d.c.Records[i]
		approved := r.Approved
		d.c.Records = append(d.c.Records, Record{Type: TypeApproval, Turn: call.Turn, ToolCallID: call.ToolCallID, ToolName: call.ToolName,
			Arguments: call.Arguments, Approved: &approved, Message: r.RejectionMessage, Via: r.ResolvedVia, Resolution: wire.QuestionAnswered})
	case wire.UpdateExecutePlan:
		var r wire.ExecutePlanRequest
		if err := arg(&r); err != nil {
			return err
		}
		d.c.Records = append(d.c.Records, Record{Type: TypeExecutePlan, Revision: r.Revision})
	case wire.UpdateCancelTurn:
		d.endRunningTurn("cancelled")
	case wire.UpdateAnswerQuestion:
		var r wire.AnswerQuestionRequest
		if err := arg(&r); err != nil {
			return err
		}
		if r.SessionID != "" && r.SessionID != d.id {
			return nil
		}
		call, ok := d.questionCall(r.InterruptID)
		if !ok {
			call = r.InterruptID
		}
		d.c.Records = append(d.c.Records, d.question(call, wire.QuestionAnswered, r.Answer))
	}
	return nil
}

// endRunningTurn marks the latest turn that has not ended, which a
// cancel or a steer stops. (A turn with nothing running is not stopped:
// it then ends as the session reports it.)
func (d *decoder) endRunningTurn(how string) {
	for i := len(d.order) - 1; i >= 0; i-- {
		if t := d.turns[d.order[i]]; t.Status == "" {
			t.Status = how
			return
		}
	}
}

// questionCall is the call that raised a question interrupt: an ask_user
// call (the interrupt has the call's ID), or a tool that asked
// (<call>-input-<n>).
func (d *decoder) questionCall(interruptID string) (string, bool) {
	if _, ok := d.pending[interruptID]; ok {
		delete(d.pending, interruptID)
		return interruptID, true
	}
	if call, _, ok := strings.Cut(interruptID, "-input-"); ok {
		if _, known := d.calls[call]; known {
			return call, true
		}
	}
	return "", false
}

// question is the record of a question's resolution: what the call (an
// ask_user call, or a tool that asked) asked.
func (d *decoder) question(callID, resolution, answer string) Record {
	r := Record{Type: TypeQuestion, ToolCallID: callID, Resolution: resolution, Answer: answer}
	if i, ok := d.calls[callID]; ok {
		call := d.c.Records[i]
		r.Turn, r.ToolName = call.Turn, call.ToolName
		if q, ok := d.asked[callID]; ok {
			r.Question, r.Choices = q.Question, q.Choices
		} else if call.ToolName == session.BuiltInAskUser {
			var q struct {
				Question string   `json:"question"`
				Choices  []string `json:"choices"`
			}
			if json.Unmarshal([]byte(call.Arguments), &q) == nil {
				r.Question, r.Choices = q.Question, q.Choices
			}
		}
	}
	return r
}

func (d *decoder) userMessage(text, ref string, plan, steer bool) {
	r := Record{Type: TypeUserMessage, Text: text, PlanMode: plan, Steer: steer}
	if ref != "" {
		r.Text, r.Truncated = d.blob(ref, text)
	}
	d.c.Records = append(d.c.Records, r)
}

// blob is the text behind a reference, or the preview, cut, when it
// cannot be read.
func (d *decoder) blob(ref, preview string) (string, bool) {
	if d.texts == nil {
		return preview, true
	}
	t, err := d.texts.Blob(d.ctx, d.id, ref)
	if err != nil {
		return preview, true
	}
	return t, false
}

// turn returns the record of a turn, made when first seen.
func (d *decoder) turn(id string) *Record {
	t, ok := d.turns[id]
	if !ok {
		t = &Record{Type: TypeTurn, Turn: id, Usage: &Usage{}}
		d.turns[id] = t
		d.order = append(d.order, id)
	}
	d.touched[id] = len(d.c.Records)
	return t
}

// stepInput is what Decode reads of a Step's input: its turn, and a tool
// Step's call.
type stepInput struct {
	TurnID   string         `json:"turn_id"`
	ToolCall *wire.ToolCall `json:"tool_call"`
}

func (d *decoder) input(s scheduled) (stepInput, error) {
	var in stepInput
	if p := s.input.GetPayloads(); len(p) > 0 {
		if err := dc.FromPayload(p[0], &in); err != nil {
			return in, fmt.Errorf("the input of %s: %w", s.typ, err)
		}
	}
	return in, nil
}

func (d *decoder) completed(s scheduled, result *commonpb.Payloads, at time.Time) error {
	switch s.typ {
	case stepRunModel:
		in, err := d.input(s)
		if err != nil {
			return err
		}
		var out session.ModelOutcome
		if p := result.GetPayloads(); len(p) > 0 {
			if err := dc.FromPayload(p[0], &out); err != nil {
				return fmt.Errorf("the result of RunModel: %w", err)
			}
		}
		d.modelOutcome(in.TurnID, out, at.Sub(s.at))
	case stepCallTool, stepCallSingle, stepPollTask:
		in, err := d.input(s)
		if err != nil {
			return err
		}
		var out session.ToolOutcome
		if p := result.GetPayloads(); len(p) > 0 {
			if err := dc.FromPayload(p[0], &out); err != nil {
				return fmt.Errorf("the result of %s: %w", s.typ, err)
			}
		}
		d.toolOutcome(in, out, at.Sub(s.at))
	}
	return nil
}

func (d *decoder) failed(s scheduled, msg string, at time.Time) error {
	in, err := d.input(s)
	if err != nil {
		return err
	}
	switch s.typ {
	case stepRunModel:
		t := d.turn(in.TurnID)
		t.ModelMs += at.Sub(s.at).Milliseconds()
		t.Status, t.Error = "failed", msg
	case stepCallTool, stepCallSingle, stepPollTask:
		t := d.turn(in.TurnID)
		t.ToolMs += at.Sub(s.at).Milliseconds()
		if in.ToolCall != nil {
			if i, ok := d.calls[in.ToolCall.ToolCallID]; ok && d.c.Records[i].Status == "" {
				d.c.Records[i].Status, d.c.Records[i].Output = string(wire.ToolCallFailed), msg
				if s.typ == stepCallSingle {
					d.c.Records[i].Status = string(wire.ToolCallOutcomeUnknown)
				}
			}
		}
	}
	return nil
}

// modelOutcome reads one model call: the messages it stored (tool results
// the model saw, the assistant's answer), the calls it asked for, and what
// it spent.
func (d *decoder) modelOutcome(turnID string, out session.ModelOutcome, took time.Duration) {
	t := d.turn(turnID)
	t.ModelMs += took.Milliseconds()
	if sp := out.Spend; sp != nil {
		t.CostMicros += sp.CostMicros
	}
	var usage contract.Usage
	var msgs []contract.FrameworkMessage
	switch {
	case out.TurnCompleted != nil:
		usage, msgs = out.TurnCompleted.Usage, out.TurnCompleted.NewMessages
	case out.ToolCallsRequested != nil:
		usage, msgs = out.ToolCallsRequested.Usage, out.ToolCallsRequested.NewMessages
	}
	t.Usage.add(Usage{ModelCalls: usage.ModelCalls, InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens, TotalTokens: usage.TotalTokens})
	type stored struct {
		msg       contract.FrameworkMessage
		seq       int64
		truncated bool
	}
	var all []stored
	for _, m := range msgs {
		all = append(all, stored{msg: m})
	}
	if out.Stored != nil {
		for _, e := range out.Stored.Messages {
			all = append(all, stored{msg: contract.FrameworkMessage{Role: e.Role, Text: e.Text, ToolCallID: e.ToolCallID, ToolName: e.ToolName, ToolStatus: e.ToolStatus},
				seq: e.Sequence, truncated: e.Truncated})
		}
	}
	text := func(s stored) (string, bool) {
		if !s.truncated {
			return s.msg.Text, false
		}
		if d.texts != nil {
			if full, err := d.texts.Message(d.ctx, d.id, s.seq); err == nil {
				return full, false
			}
		}
		return s.msg.Text, true
	}
	for _, s := range all {
		switch s.msg.Role {
		case contract.RoleTool:
			// The result the model saw: final for the call.
			if i, ok := d.calls[s.msg.ToolCallID]; ok {
				r := &d.c.Records[i]
				r.Output, r.Truncated = text(s)
				if s.msg.ToolStatus != "" {
					r.Status = string(s.msg.ToolStatus)
				}
				if r.Status == string(wire.ToolCallRejected) && r.Output == wire.ApprovalDeadlinePassedText {
					r.RequiresApproval = true
					no := false
					d.c.Records = append(d.c.Records, Record{Type: TypeApproval, Turn: r.Turn, ToolCallID: r.ToolCallID, ToolName: r.ToolName,
						Arguments: r.Arguments, Approved: &no, Resolution: wire.QuestionDeadlinePassed})
				}
			}
		case contract.RoleAssistant:
			if s.msg.Text != "" && out.TurnCompleted != nil {
				t = d.turn(turnID)
				t.Answer, t.Truncated = text(s)
			}
		}
	}
	if out.TurnCompleted != nil {
		t = d.turn(turnID)
		t.Status = "completed"
	}
	if req := out.ToolCallsRequested; req != nil {
		refs := map[string]string{}
		for _, r := range out.Refs {
			refs[r.ToolCallID] = r.ArgumentsRef
		}
		for _, call := range req.ToolCalls {
			r := Record{Type: TypeToolCall, Turn: turnID, ToolCallID: call.ToolCallID, ToolName: call.ToolName, Arguments: call.Arguments}
			if d.opts != nil && !settledBySession(d.opts, call.ToolName) {
				p := d.opts.CallPolicy(call, d.opts.HostCallOf(out, call.ToolCallID))
				r.Effect, r.RequiresApproval = string(p.Effect), p.ApprovalRequired()
			}
			if ref := refs[call.ToolCallID]; ref != "" {
				r.Arguments, r.Truncated = d.blob(ref, call.Arguments)
			}
			for _, rd := range out.RuleDecisions {
				if rd.ToolCallID == call.ToolCallID && (rd.Decision != "" || rd.ShadowDecision != "") {
					r.Rule = &Rule{Rule: rd.Rule, Decision: rd.Decision, Reason: rd.Reason, ShadowRule: rd.ShadowRule, ShadowDecision: rd.ShadowDecision}
					switch rd.Decision {
					case session.RuleAllow, session.RuleDeny:
						r.RequiresApproval = false
					case session.RuleRequireApproval:
						r.RequiresApproval = true
					}
				}
			}
			if call.ToolName == session.BuiltInAskUser {
				d.pending[call.ToolCallID] = call.ToolCallID
			}
			d.c.Records = append(d.c.Records, r)
			d.calls[call.ToolCallID] = len(d.c.Records) - 1
		}
		d.turn(turnID)
	}
}

// toolOutcome reads a tool Step: how the session classed the call, a
// question it asked, and its result (which the next model call's stored
// tool message confirms).
func (d *decoder) toolOutcome(in stepInput, out session.ToolOutcome, took time.Duration) {
	t := d.turn(in.TurnID)
	t.ToolMs += took.Milliseconds()
	if in.ToolCall == nil {
		return
	}
	i, ok := d.calls[in.ToolCall.ToolCallID]
	if !ok {
		return
	}
	r := &d.c.Records[i]
	r.Effect, r.RequiresApproval = string(in.ToolCall.Effect), in.ToolCall.RequiresApproval
	if q := out.InputRequested; q != nil {
		d.asked[r.ToolCallID] = *q
	}
	switch {
	case out.Output != nil:
		r.Status, r.Output = string(wire.ToolCallSucceeded), *out.Output
		if out.OutputRef != "" {
			r.Output, r.Truncated = d.blob(out.OutputRef, *out.Output)
		}
	case out.Error != nil:
		r.Status, r.Output = string(wire.ToolCallFailed), *out.Error
	}
}

// settledBySession reports a tool the session runs itself, which no
// policy classes and no approval gates: the built-ins it offers, and its
// sub-agents' tools.
func settledBySession(o *session.Options, name string) bool {
	switch name {
	case session.BuiltInAskUser, session.BuiltInDurableWait, session.BuiltInWriteTodos:
		return slices.Contains(o.BuiltInTools, name)
	case session.ToolSendToSubAgent, session.ToolCancelSubAgent:
		return len(o.SubAgents) > 0
	}
	if rest, ok := strings.CutPrefix(name, wire.SubAgentToolPrefix); ok {
		return slices.ContainsFunc(o.SubAgents, func(sa session.SubAgentOption) bool { return sa.Name == rest })
	}
	return false
}
