// Package uistream turns one turn of a session's live events into the
// Vercel AI SDK's UI message stream (protocol v1: the
// x-vercel-ai-ui-message-stream: v1 header, one JSON chunk per SSE data
// line, data: [DONE] at the end), so a React app's useChat renders a
// durable session's turn as one assistant message.
//
// One turn is one assistant message (its ID is the turn ID); every model
// call is one step of it (start-step), holding the call's reasoning and
// text parts and the tool parts of the calls it asked for. Events map to
// the AI SDK v6 chunk set:
//
//	text_delta, reasoning_delta  text-*, reasoning-* (one part per model call)
//	tool_call_deferred           tool-input-available (arguments from the session)
//	interrupt_raised (approval)  tool-approval-request (approvalId = interrupt ID)
//	tool_call_finished           tool-output-available, tool-output-error, tool-output-denied
//	interrupt_* (question)       data-dex-question (one part per question, updated)
//	plan_updated                 data-dex-plan
//	usage_recorded               data-dex-usage
//	sub_agent_*, a sub-agent's   data-dex-subagent (one part per child
//	events                       session, updated as it works)
//	turn_completed / _failed     finish (stop) / error + finish (error)
//	turn_cancelled / _steered    abort / finish (other)
//
// A model call that is retried streams its text again under a higher
// attempt. The translator never shows doubled text: the retry's text is
// sent only past what the client already holds; when it differs from what
// was sent, a v7 client (Options.V7) gets reset-step and the retry's text,
// and a v6 client gets the stale part ended with providerMetadata
// {"dex": {"superseded": true}} (a UI hides such parts) and a new part.
//
// The translator is a pure state machine: the HTTP handler feeds it
// events and ends the stream when it reports the turn over or waiting for
// an approval.
package uistream

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/internal/events"
)

// Header is the response header of a UI message stream.
const Header = "x-vercel-ai-ui-message-stream"

// Version is the value of Header.
const Version = "v1"

// Done is the stream's last data line.
const Done = "[DONE]"

// Chunk is one UI message stream chunk. Only the fields of its type are
// set; Input and Output are always written for the chunk types that carry
// them.
type Chunk struct {
	Type             string           `json:"type"`
	ID               string           `json:"id,omitempty"`
	Delta            string           `json:"delta,omitempty"`
	MessageID        string           `json:"messageId,omitempty"`
	ToolCallID       string           `json:"toolCallId,omitempty"`
	ToolName         string           `json:"toolName,omitempty"`
	Input            json.RawMessage  `json:"input,omitempty"`
	Output           json.RawMessage  `json:"output,omitempty"`
	ErrorText        string           `json:"errorText,omitempty"`
	ApprovalID       string           `json:"approvalId,omitempty"`
	Data             any              `json:"data,omitempty"`
	FinishReason     string           `json:"finishReason,omitempty"`
	Reason           string           `json:"reason,omitempty"`
	ProviderMetadata ProviderMetadata `json:"providerMetadata,omitempty"`
}

// ProviderMetadata is a part's provider metadata: provider name -> values.
type ProviderMetadata map[string]map[string]any

// Superseded is the provider metadata of a v6 text or reasoning part that a
// retried model call replaced: its text is not the model's answer.
var Superseded = ProviderMetadata{"dex": {"superseded": true}}

// Data part types.
const (
	DataQuestion = "data-dex-question"
	DataPlan     = "data-dex-plan"
	DataUsage    = "data-dex-usage"
	DataSubAgent = "data-dex-subagent"
)

// Session gives the session's records that events only name.
type Session interface {
	// ToolCall is the record of a tool call of the turn (its arguments,
	// output or error); false when the session no longer holds it.
	ToolCall(id string) (wire.ToolCall, bool)
	// Plan is the session's plan, or nil.
	Plan() *wire.Plan
}

// Options configure a Translator.
type Options struct {
	// Turn is the turn to translate. Empty: the first turn that starts
	// whose ID is not SkipTurn (a message sent while another turn runs
	// waits for the next one).
	Turn     string
	SkipTurn string
	// V7 allows the chunks only AI SDK v7 clients know (reset-step).
	V7 bool
	// Continuing says the client holds the message already, paused at an
	// approval: the model call of its last step is over, so the next text
	// opens a new step, and tool parts it holds may get their outputs.
	Continuing bool
	// SessionID is the session whose turn is translated. Events of other
	// sessions in its stream are its sub-agents': they update
	// data-dex-subagent parts. Empty: every event is the session's.
	SessionID string
}

// Translator translates one turn's events into chunks.
type Translator struct {
	opts    Options
	session Session
	turn    string
	started bool
	ended   bool

	stepOpen  bool
	modelDone bool
	model     *modelCall
	parts     int // part IDs handed out

	inputs    map[string]bool // calls whose tool part this stream created
	requested map[string]bool // approvals requested in this stream
	pending   map[string]bool // approvals requested and not resolved
	finished  map[string]bool // calls whose output this stream sent
	questions map[string]*question
	subAgents []*subAgent
}

// subAgent is the data of a data-dex-subagent part: a child session the
// turn delegated to, and what it does.
type subAgent struct {
	SessionID  string `json:"session_id"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	// Status is running, waiting (for a person), completed, failed or
	// cancelled.
	Status string `json:"status"`
	// Text is what the child's current model call wrote so far (its last
	// 4 KiB).
	Text  string         `json:"text"`
	Tools []subAgentTool `json:"tools"`
	// Pending are the interrupts the child (or one below it) waits on.
	Pending []string `json:"pending_interrupts"`
	Error   string   `json:"error,omitempty"`

	step    string
	attempt int
}

type subAgentTool struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	Status     string `json:"status"`
}

// maxSubAgentText bounds the text a data-dex-subagent part repeats.
const maxSubAgentText = 4096

type modelCall struct {
	exec      string
	attempt   int
	reasoning channel
	text      channel
}

// channel is one stream of a model call's text: what the current attempt
// produced (cur) and what the client holds (sent) in its open part.
type channel struct {
	kind string // "text" or "reasoning"
	id   string
	open bool
	sent string
	cur  string
}

type question struct {
	InterruptID    string   `json:"interrupt_id"`
	ToolCallID     string   `json:"tool_call_id"`
	ToolName       string   `json:"tool_name"`
	Question       string   `json:"question"`
	Choices        []string `json:"choices"`
	AllowsFreeText bool     `json:"allows_free_text"`
	Deadline       string   `json:"deadline,omitempty"`
	// Status is pending, answered, declined or cancelled.
	Status string `json:"status"`
}

// New returns a translator of one turn.
func New(opts Options, session Session) *Translator {
	t := &Translator{
		opts: opts, session: session, turn: opts.Turn,
		inputs: map[string]bool{}, requested: map[string]bool{}, pending: map[string]bool{},
		finished: map[string]bool{}, questions: map[string]*question{},
	}
	if opts.Continuing {
		t.stepOpen, t.modelDone = true, true
	}
	return t
}

// Turn is the turn translated ("" until it started).
func (t *Translator) Turn() string { return t.turn }

// Ended reports that the turn ended (its last chunk was returned).
func (t *Translator) Ended() bool { return t.ended }

// Started reports that the start chunk was returned.
func (t *Translator) Started() bool { return t.started }

// PendingApprovals are the approvals this stream requested that are not
// resolved yet, in no order.
func (t *Translator) PendingApprovals() []string {
	var out []string
	for id := range t.pending {
		out = append(out, id)
	}
	return out
}

// Start returns the start chunk once (the message ID is the turn's). It is
// sent before the first chunk of the turn; call it to open a stream that
// may end before its turn writes anything.
func (t *Translator) Start() []Chunk {
	if t.started || t.turn == "" {
		return nil
	}
	t.started = true
	return []Chunk{{Type: "start", MessageID: t.turn}}
}

// Add translates one event. Events of other turns, and events after the
// turn ended, give nothing.
func (t *Translator) Add(e events.Event) []Chunk {
	if t.ended {
		return nil
	}
	if t.turn == "" {
		if e.Type != wire.EventTurnStarted || e.TurnID == "" || e.TurnID == t.opts.SkipTurn {
			return nil
		}
		t.turn = e.TurnID
	}
	if t.opts.SessionID != "" && e.SessionID != "" && e.SessionID != t.opts.SessionID {
		if !t.started {
			return nil
		}
		return t.childEvent(e)
	}
	if e.TurnID != t.turn {
		return nil
	}
	out := t.Start()
	switch e.Type {
	case wire.EventTextDelta, wire.EventReasoningDelta:
		out = append(out, t.delta(e)...)
	case wire.EventUsageRecorded:
		out = append(out, t.usage(e)...)
	case wire.EventToolCallDeferred:
		var p wire.ToolCallDeferredPayload
		if json.Unmarshal(e.Payload, &p) == nil && p.ToolCallID != "" {
			out = append(out, t.openStep()...)
			out = append(out, t.input(p.ToolCallID, p.ToolName)...)
		}
	case wire.EventInterruptRaised:
		out = append(out, t.raised(e)...)
	case wire.EventInterruptResolved:
		out = append(out, t.resolved(e)...)
	case wire.EventToolCallFinished:
		var p wire.ToolCallFinishedPayload
		if json.Unmarshal(e.Payload, &p) == nil && p.ToolCallID != "" {
			out = append(out, t.output(p.ToolCallID, p.ToolName, wire.ToolCallStatus(p.Status))...)
		}
	case wire.EventPlanUpdated:
		var p map[string]any
		if json.Unmarshal(e.Payload, &p) == nil {
			if plan := t.session.Plan(); plan != nil {
				p["tasks"] = plan.Tasks
			}
			out = append(out, Chunk{Type: DataPlan, ID: "plan", Data: p})
		}
	case wire.EventSubAgentStarted:
		var p wire.SubAgentStartedPayload
		if json.Unmarshal(e.Payload, &p) == nil && p.ChildSessionID != "" {
			sa := &subAgent{SessionID: p.ChildSessionID, ToolCallID: p.ToolCallID, Name: p.Name, Status: "running", Tools: []subAgentTool{}, Pending: []string{}}
			t.subAgents = append(t.subAgents, sa)
			out = append(out, sa.chunk())
		}
	case wire.EventSubAgentFinished:
		var p wire.SubAgentFinishedPayload
		if json.Unmarshal(e.Payload, &p) == nil {
			if sa := t.subAgentOf(p.ChildSessionID); sa != nil {
				sa.Status, sa.Error, sa.Pending = p.Outcome, p.Error, []string{}
				out = append(out, sa.chunk())
			}
		}
	case wire.EventTurnCompleted:
		out = append(out, t.end()...)
		out = append(out, Chunk{Type: "finish", FinishReason: "stop"})
	case wire.EventTurnFailed:
		var p wire.TurnFailedPayload
		_ = json.Unmarshal(e.Payload, &p)
		if p.Error == "" {
			p.Error = "the turn failed"
		}
		out = append(out, t.end()...)
		out = append(out, Chunk{Type: "error", ErrorText: p.Error}, Chunk{Type: "finish", FinishReason: "error"})
	case wire.EventTurnCancelled:
		out = append(out, t.end()...)
		out = append(out, Chunk{Type: "abort", Reason: "turn_cancelled"})
	case wire.EventTurnSteered:
		out = append(out, t.end()...)
		out = append(out, Chunk{Type: "finish", FinishReason: "other"})
	}
	return out
}

// Pause ends a stream whose turn waits for the approvals it requested:
// the message goes on in the stream of the request that answers them.
func (t *Translator) Pause() []Chunk {
	if t.ended {
		return nil
	}
	t.ended = true
	out := t.Start()
	out = append(out, t.closeParts()...)
	return append(out, Chunk{Type: "finish", FinishReason: "tool-calls"})
}

// RequestApproval requests an approval the session holds pending that this
// stream has not requested (one raised before the stream began): it
// creates the call's tool part when the stream has not.
//
// digest, the approval's digest when the worker signs approvals, rides in
// the approvalId (see ApprovalID), which the AI SDK sends back unchanged in
// the approval response, so the session checks what the user saw.
func (t *Translator) RequestApproval(interruptID, toolCallID, toolName, digest string) []Chunk {
	if t.ended || t.requested[interruptID] {
		return nil
	}
	out := t.Start()
	if !t.opts.Continuing {
		out = append(out, t.openStep()...)
		out = append(out, t.input(toolCallID, toolName)...)
	}
	t.requested[interruptID], t.pending[interruptID] = true, true
	return append(out, Chunk{Type: "tool-approval-request", ApprovalID: ApprovalID(interruptID, digest), ToolCallID: toolCallID})
}

// ApprovalID is the approvalId of an approval request: the interrupt ID,
// and "#" and the digest when there is one.
func ApprovalID(interruptID, digest string) string {
	if digest == "" {
		return interruptID
	}
	return interruptID + "#" + digest
}

// digestLen is the length of an approvaldigest digest ("v1." and 43
// base64url characters).
const digestLen = 3 + 43

// ParseApprovalID splits an approvalId into the interrupt ID and the
// digest ("" when it carries none).
func ParseApprovalID(id string) (interruptID, digest string) {
	if i := len(id) - digestLen - 1; i > 0 && id[i] == '#' && strings.HasPrefix(id[i+1:], "v1.") {
		return id[:i], id[i+1:]
	}
	return id, ""
}

// Settled sends the outputs of calls the session settled before the
// stream began, which a continuing client may not hold.
func (t *Translator) Settled(calls []wire.ToolCall) []Chunk {
	var out []Chunk
	for _, c := range calls {
		if c.Status.Final() && !t.finished[c.ToolCallID] {
			out = append(out, t.outputOf(c)...)
		}
	}
	if len(out) > 0 {
		out = append(t.Start(), out...)
	}
	return out
}

func (t *Translator) newID(kind string) string {
	t.parts++
	return fmt.Sprintf("%s-%s-%d", t.turn, kind, t.parts)
}

// openStep opens a step when none is open.
func (t *Translator) openStep() []Chunk {
	if t.stepOpen {
		return nil
	}
	t.stepOpen, t.modelDone, t.model = true, false, nil
	return []Chunk{{Type: "start-step"}}
}

// nextStep closes the open step and opens another.
func (t *Translator) nextStep() []Chunk {
	var out []Chunk
	if t.stepOpen {
		out = append(out, t.closeParts()...)
		out = append(out, Chunk{Type: "finish-step"})
		t.stepOpen = false
	}
	return append(out, t.openStep()...)
}

func (t *Translator) delta(e events.Event) []Chunk {
	var p wire.TextPayload
	if json.Unmarshal(e.Payload, &p) != nil || p.Text == "" {
		return nil
	}
	var out []Chunk
	switch {
	case t.model != nil && t.model.exec == e.StepExecutionID:
		if t.modelDone || e.Attempt < t.model.attempt {
			return nil // a late event of an attempt that did not count
		}
	case !t.stepOpen || t.modelDone || t.model != nil:
		out = append(out, t.nextStep()...)
		fallthrough
	default:
		t.model = &modelCall{exec: e.StepExecutionID, attempt: e.Attempt,
			reasoning: channel{kind: "reasoning"}, text: channel{kind: "text"}}
	}
	m := t.model
	if e.Attempt > m.attempt {
		m.attempt = e.Attempt
		m.reasoning.cur, m.text.cur = "", ""
	}
	ch := &m.text
	if e.Type == wire.EventReasoningDelta {
		ch = &m.reasoning
	}
	ch.cur += p.Text
	return append(out, t.sync(ch)...)
}

// sync brings the client's part of ch up to the current attempt's text.
func (t *Translator) sync(ch *channel) []Chunk {
	switch {
	case strings.HasPrefix(ch.sent, ch.cur):
		return nil // the retry repeats what the client holds
	case strings.HasPrefix(ch.cur, ch.sent):
		var out []Chunk
		if !ch.open {
			ch.id, ch.open = t.newID(ch.kind), true
			out = append(out, Chunk{Type: ch.kind + "-start", ID: ch.id})
		}
		out = append(out, Chunk{Type: ch.kind + "-delta", ID: ch.id, Delta: ch.cur[len(ch.sent):]})
		ch.sent = ch.cur
		return out
	}
	return t.diverged(ch)
}

// diverged replaces the client's text of a model call whose retry wrote
// something else.
func (t *Translator) diverged(ch *channel) []Chunk {
	if t.opts.V7 {
		m := t.model
		out := []Chunk{{Type: "reset-step"}}
		for _, c := range []*channel{&m.reasoning, &m.text} {
			c.open, c.sent = false, ""
			if c.cur != "" {
				out = append(out, t.sync(c)...)
			}
		}
		return out
	}
	var out []Chunk
	if ch.open {
		out = append(out, Chunk{Type: ch.kind + "-end", ID: ch.id, ProviderMetadata: Superseded})
	}
	ch.open, ch.sent = false, ""
	if ch.cur == "" {
		return out
	}
	return append(out, t.sync(ch)...)
}

// closeParts ends the open text and reasoning parts, first making them
// hold the text of the attempt that counted.
func (t *Translator) closeParts() []Chunk {
	m := t.model
	if m == nil {
		return nil
	}
	var out []Chunk
	for _, ch := range []*channel{&m.reasoning, &m.text} {
		if ch.sent != ch.cur {
			out = append(out, t.diverged(ch)...)
		}
	}
	for _, ch := range []*channel{&m.reasoning, &m.text} {
		if ch.open {
			out = append(out, Chunk{Type: ch.kind + "-end", ID: ch.id})
			ch.open = false
		}
	}
	return out
}

// usage ends the model call of the open step (a usage_recorded follows
// every model call).
func (t *Translator) usage(e events.Event) []Chunk {
	var out []Chunk
	if !t.stepOpen || t.modelDone {
		out = append(out, t.nextStep()...)
	}
	out = append(out, t.closeParts()...)
	t.modelDone = true
	var p json.RawMessage = e.Payload
	if !json.Valid(p) {
		return out
	}
	return append(out, Chunk{Type: DataUsage, ID: "usage", Data: p})
}

func (t *Translator) input(id, name string) []Chunk {
	if t.inputs[id] {
		return nil
	}
	t.inputs[id] = true
	args := "{}"
	if rec, ok := t.session.ToolCall(id); ok && strings.TrimSpace(rec.Arguments) != "" {
		args = rec.Arguments
		if name == "" {
			name = rec.ToolName
		}
	}
	if !json.Valid([]byte(args)) {
		// The model wrote arguments that are not JSON: the part holds them
		// as a string.
		b, _ := json.Marshal(args)
		args = string(b)
	}
	return []Chunk{{Type: "tool-input-available", ToolCallID: id, ToolName: name, Input: json.RawMessage(args)}}
}

// SettledSession is a Session that can read a call's record again when
// the one it holds is older than the event that settled the call.
type SettledSession interface {
	SettledToolCall(id string) (wire.ToolCall, bool)
}

func (t *Translator) output(id, name string, status wire.ToolCallStatus) []Chunk {
	rec, ok := t.session.ToolCall(id)
	if s, can := t.session.(SettledSession); can && (!ok || !rec.Status.Final()) {
		// The event says the call settled; the record read for this batch
		// of events may predate it.
		rec, ok = s.SettledToolCall(id)
	}
	if !ok {
		rec = wire.ToolCall{ToolCallID: id, ToolName: name}
	}
	rec.Status = status
	return t.outputOf(rec)
}

// outputOf sends the output of a settled call.
func (t *Translator) outputOf(rec wire.ToolCall) []Chunk {
	id, name, status := rec.ToolCallID, rec.ToolName, rec.Status
	var out []Chunk
	if !t.opts.Continuing {
		// A tool part must exist before its output.
		out = append(out, t.openStep()...)
		out = append(out, t.input(id, name)...)
	}
	t.finished[id] = true
	delete(t.pending, id)
	switch status {
	case wire.ToolCallSucceeded:
		b, _ := json.Marshal(rec.Output)
		return append(out, Chunk{Type: "tool-output-available", ToolCallID: id, Output: b})
	case wire.ToolCallRejected:
		return append(out, Chunk{Type: "tool-output-denied", ToolCallID: id})
	default:
		text := rec.Error
		if text == "" {
			text = "the tool call ended " + string(status)
		}
		if status == wire.ToolCallOutcomeUnknown {
			text = "outcome unknown: " + text
		}
		return append(out, Chunk{Type: "tool-output-error", ToolCallID: id, ErrorText: text})
	}
}

func (t *Translator) raised(e events.Event) []Chunk {
	var p wire.InterruptRaisedPayload
	if json.Unmarshal(e.Payload, &p) != nil || p.InterruptID == "" {
		return nil
	}
	if p.Kind == wire.InterruptKindQuestion {
		q := &question{InterruptID: p.InterruptID, ToolCallID: p.ToolCallID, ToolName: p.ToolName, Question: p.Question,
			Choices: p.Choices, AllowsFreeText: p.AllowsFreeText, Deadline: p.Deadline, Status: "pending"}
		if q.Choices == nil {
			q.Choices = []string{}
		}
		t.questions[p.InterruptID] = q
		return []Chunk{{Type: DataQuestion, ID: p.InterruptID, Data: *q}}
	}
	return t.RequestApproval(p.InterruptID, p.ToolCallID, p.ToolName, p.Digest)
}

func (t *Translator) resolved(e events.Event) []Chunk {
	var p wire.InterruptResolvedPayload
	if json.Unmarshal(e.Payload, &p) != nil {
		return nil
	}
	delete(t.pending, p.InterruptID)
	q := t.questions[p.InterruptID]
	if q == nil {
		return nil
	}
	switch {
	case p.CancellationReason != "":
		q.Status = "cancelled"
	case p.Answered:
		q.Status = "answered"
	default:
		q.Status = "declined"
	}
	return []Chunk{{Type: DataQuestion, ID: p.InterruptID, Data: *q}}
}

// end closes what is open when the turn ends.
func (t *Translator) end() []Chunk {
	t.ended = true
	var out []Chunk
	if t.stepOpen {
		out = append(out, t.closeParts()...)
		out = append(out, Chunk{Type: "finish-step"})
		t.stepOpen = false
	}
	return out
}

// subAgentOf returns the sub-agent a session belongs to: the child itself,
// or a session below it.
func (t *Translator) subAgentOf(session string) *subAgent {
	for _, sa := range t.subAgents {
		if session == sa.SessionID || strings.HasPrefix(session, sa.SessionID+".sub-") {
			return sa
		}
	}
	return nil
}

// childEvent updates the part of the sub-agent whose event e is.
func (t *Translator) childEvent(e events.Event) []Chunk {
	sa := t.subAgentOf(e.SessionID)
	if sa == nil || sa.Status != "running" && sa.Status != "waiting" {
		return nil
	}
	own := e.SessionID == sa.SessionID
	switch e.Type {
	case wire.EventTextDelta:
		if !own {
			return nil
		}
		var p wire.TextPayload
		if json.Unmarshal(e.Payload, &p) != nil {
			return nil
		}
		switch {
		case e.StepExecutionID != sa.step || e.Attempt > sa.attempt:
			sa.step, sa.attempt, sa.Text = e.StepExecutionID, e.Attempt, ""
		case e.Attempt < sa.attempt:
			return nil
		}
		sa.Text += p.Text
		if len(sa.Text) > maxSubAgentText {
			sa.Text = sa.Text[len(sa.Text)-maxSubAgentText:]
		}
	case wire.EventToolCallDeferred, wire.EventToolCallStarted, wire.EventToolCallFinished:
		if !own {
			return nil
		}
		var p wire.ToolCallFinishedPayload
		if json.Unmarshal(e.Payload, &p) != nil || p.ToolCallID == "" {
			return nil
		}
		status := map[string]string{wire.EventToolCallDeferred: "deferred", wire.EventToolCallStarted: "running"}[e.Type]
		if e.Type == wire.EventToolCallFinished {
			status = p.Status
		}
		sa.tool(p.ToolCallID, p.ToolName, status)
	case wire.EventInterruptRaised:
		var p wire.InterruptRaisedPayload
		if json.Unmarshal(e.Payload, &p) != nil || p.InterruptID == "" {
			return nil
		}
		key := e.SessionID + "/" + p.InterruptID
		if !slices.Contains(sa.Pending, key) {
			sa.Pending = append(sa.Pending, key)
		}
		sa.Status = "waiting"
		if own {
			status := string(wire.ToolCallAwaitingApproval)
			if p.Kind == wire.InterruptKindQuestion {
				status = string(wire.ToolCallAwaitingAnswer)
			}
			sa.tool(p.ToolCallID, p.ToolName, status)
		}
	case wire.EventInterruptResolved:
		var p wire.InterruptResolvedPayload
		if json.Unmarshal(e.Payload, &p) != nil {
			return nil
		}
		key := e.SessionID + "/" + p.InterruptID
		kept := sa.Pending[:0]
		for _, k := range sa.Pending {
			if k != key {
				kept = append(kept, k)
			}
		}
		sa.Pending = kept
		if len(sa.Pending) == 0 {
			sa.Status = "running"
		}
	default:
		return nil
	}
	return []Chunk{sa.chunk()}
}

func (sa *subAgent) tool(id, name, status string) {
	for i := range sa.Tools {
		if sa.Tools[i].ToolCallID == id {
			if name != "" {
				sa.Tools[i].ToolName = name
			}
			sa.Tools[i].Status = status
			return
		}
	}
	sa.Tools = append(sa.Tools, subAgentTool{ToolCallID: id, ToolName: name, Status: status})
}

func (sa *subAgent) chunk() Chunk {
	c := *sa
	c.Tools = append([]subAgentTool{}, sa.Tools...)
	c.Pending = append([]string{}, sa.Pending...)
	return Chunk{Type: DataSubAgent, ID: "subagent-" + sa.SessionID, Data: c}
}
