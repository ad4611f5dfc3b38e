package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/uistream"
)

// The AI SDK UI message stream routes: POST /v1/ui/sessions/{id}/chat
// takes the request useChat sends (DefaultChatTransport) and answers with
// the turn as a UI message stream; GET /v1/ui/sessions/{id}/stream resumes
// the running turn (204 when none runs). See package uistream for the
// mapping.

// UIChatRequest is the body of POST /v1/ui/sessions/{id}/chat: what the AI
// SDK's chat transport sends, and the send options an app may add with its
// body option.
type UIChatRequest struct {
	ID        string      `json:"id"`
	Messages  []UIMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
	// Mode is the send mode of a user message (client.SendMode*).
	Mode string `json:"mode"`
	// PlanMode starts a planning turn.
	PlanMode bool `json:"plan_mode"`
}

// UIMessage is an AI SDK UI message, with the fields the session reads.
type UIMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []UIPart `json:"parts"`
}

// UIPart is one part of a UIMessage.
type UIPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ToolCallID string      `json:"toolCallId,omitempty"`
	State      string      `json:"state,omitempty"`
	Approval   *UIApproval `json:"approval,omitempty"`
}

// UIApproval is the approval of a tool part: the AI SDK's approval response
// sets Approved (and Reason) with state approval-responded.
type UIApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// UIChunksHeader asks for the chunks only AI SDK v7 clients know
// (reset-step for a retried model call): "X-Dex-UI-Chunks: v7".
const UIChunksHeader = "X-Dex-UI-Chunks"

// UIStreamHeaders are sent with every UI message stream.
var UIStreamHeaders = map[string]string{
	"Content-Type":      "text/event-stream",
	"Cache-Control":     "no-cache",
	"Connection":        "keep-alive",
	"X-Accel-Buffering": "no",
	uistream.Header:     uistream.Version,
}

// uiApproval is one approval response a request carries.
type uiApproval struct {
	interruptID string
	digest      string
	approved    bool
	reason      string
}

// parseUIChat reads what a chat request asks: a user message's text, or
// the approval responses of the last assistant message.
func parseUIChat(req UIChatRequest) (text string, approvals []uiApproval, err error) {
	if req.Trigger == "regenerate-message" {
		return "", nil, errorf(http.StatusBadRequest, "bad_request", "a durable session does not regenerate a turn: send a new message")
	}
	if len(req.Messages) == 0 {
		return "", nil, errorf(http.StatusBadRequest, "bad_request", `"messages" is empty: send the chat's messages (at least the last one)`)
	}
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "user":
		var texts []string
		for i, p := range last.Parts {
			switch p.Type {
			case "text":
				texts = append(texts, p.Text)
			case "step-start":
			default:
				if !strings.HasPrefix(p.Type, "data-") {
					return "", nil, errorf(http.StatusBadRequest, "bad_request", "messages[%d].parts[%d]: a %q part is not supported: a session takes text", len(req.Messages)-1, i, p.Type)
				}
			}
		}
		text = strings.Join(texts, "\n")
		if strings.TrimSpace(text) == "" {
			return "", nil, errorf(http.StatusBadRequest, "bad_request", "the last message has no text")
		}
		return text, nil, nil
	case "assistant":
		for i, p := range last.Parts {
			if p.State != "approval-responded" {
				continue
			}
			if p.Approval == nil || p.Approval.ID == "" || p.Approval.Approved == nil {
				return "", nil, errorf(http.StatusBadRequest, "bad_request", "messages[%d].parts[%d]: an approval-responded part needs approval.id and approval.approved", len(req.Messages)-1, i)
			}
			interruptID, digest := uistream.ParseApprovalID(p.Approval.ID)
			approvals = append(approvals, uiApproval{interruptID: interruptID, digest: digest, approved: *p.Approval.Approved, reason: p.Approval.Reason})
		}
		if len(approvals) == 0 {
			return "", nil, errorf(http.StatusBadRequest, "bad_request", "the last message is the assistant's and answers no approval (no part in state approval-responded): send a user message")
		}
		return "", approvals, nil
	}
	return "", nil, errorf(http.StatusBadRequest, "bad_request", "the last message's role is %q: send a user message or an approval response", last.Role)
}

// uiChat serves POST /v1/ui/sessions/{id}/chat.
func (s *Server) uiChat(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	var req UIChatRequest
	if err := decodeLenientBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	text, approvals, err := parseUIChat(req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if text != "" {
		if err := s.checkMessageSize("the message", len(text)); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := wire.CheckSendMode(req.Mode); err != nil {
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "mode: %v", err))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	// The head is taken before the update, so the stream misses none of
	// its events.
	token, err := s.opts.Broker.Head(ctx, id)
	if err != nil {
		s.failEvents(w, r, id, err)
		return
	}
	snap, err := s.sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	active := ""
	if snap.State != nil {
		active = snap.State.ActiveTurnID
	}
	var opts uistream.Options
	var notApplied []string
	if text != "" {
		last := req.Messages[len(req.Messages)-1]
		messageID := ""
		if client.CheckMessageID(last.ID) == nil {
			messageID = last.ID // a retried request is applied once
		}
		ok, err := s.sessions.SendUserMessageWithOptions(ctx, id, text, client.SendOptions{MessageID: messageID, PlanMode: req.PlanMode, Mode: req.Mode})
		if err != nil {
			s.failControl(w, r, id, "retry with the same message ID to be safe", err)
			return
		}
		if !ok {
			no := false
			s.fail(w, r, &apiError{status: http.StatusConflict, code: "conflict", mayStillApply: &no,
				msg: fmt.Sprintf("the session did not take message %s (it has it already, or is busy in reject_if_busy mode): resume its turn with GET /v1/ui/sessions/%s/stream", last.ID, id)})
			return
		}
		opts.SkipTurn = active
	} else {
		for _, a := range approvals {
			_, by := resolvedBy(r, tok)
			ok, err := s.sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: a.interruptID, Approved: a.approved, RejectionMessage: a.reason, Digest: a.digest,
				ResolvedVia: "ai_sdk", ResolvedBy: by})
			if err != nil {
				s.failUpdate(w, r, id, "a retry is safe (an interrupt resolves once)", err)
				return
			}
			if !ok {
				notApplied = append(notApplied, a.interruptID)
			}
		}
		opts.Turn, opts.Continuing = active, true
	}
	opts.V7 = strings.EqualFold(r.Header.Get(UIChunksHeader), "v7")
	opts.SessionID = id
	view := newSessionView(s, id, snap)
	tr := uistream.New(opts, view)
	var first []uistream.Chunk
	if len(approvals) > 0 {
		if active == "" {
			// No turn waits: the approvals answered nothing.
			s.serveUI(w, r, id, tok, nil, nil, "", []uistream.Chunk{{Type: "start", MessageID: req.Messages[len(req.Messages)-1].ID},
				{Type: "error", ErrorText: fmt.Sprintf("no turn is waiting for approval %s: the session ran on", strings.Join(notApplied, ", "))},
				{Type: "finish", FinishReason: "error"}})
			return
		}
		first = append(first, tr.Start()...)
		if len(notApplied) > 0 {
			first = append(first, uistream.Chunk{Type: "error", ErrorText: fmt.Sprintf("approval %s was not applied: it is no longer pending", strings.Join(notApplied, ", "))})
		}
		first = append(first, tr.Settled(snap.ToolCalls)...)
	}
	s.serveUI(w, r, id, tok, tr, view, token, first)
}

// uiStream serves GET /v1/ui/sessions/{id}/stream: the running turn from
// its start, or 204 when no turn runs.
func (s *Server) uiStream(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	snap, err := s.sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if snap.State == nil || snap.State.ActiveTurnID == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	turn := snap.State.ActiveTurnID
	view := newSessionView(s, id, snap)
	tr := uistream.New(uistream.Options{Turn: turn, SessionID: id, V7: strings.EqualFold(r.Header.Get(UIChunksHeader), "v7")}, view)
	token, ok, err := s.opts.Broker.TurnStart(ctx, id, turn)
	if err != nil {
		s.failEvents(w, r, id, err)
		return
	}
	var first []uistream.Chunk
	if !ok {
		// The broker no longer holds the turn's start: the message is
		// rebuilt from the session's records, then follows live.
		if token, err = s.opts.Broker.Head(ctx, id); err != nil {
			s.failEvents(w, r, id, err)
			return
		}
		first = append(tr.Start(), tr.Settled(snap.ToolCalls)...)
	}
	s.serveUI(w, r, id, tok, tr, view, token, first)
}

// serveUI writes a UI message stream: first, then the translated events
// from token until the turn ends or waits for an approval. A nil tr writes
// first alone.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken, tr *uistream.Translator, view *sessionView, token string, first []uistream.Chunk) {
	send, closeStream, ok := s.startStream(w, r, tok, UIStreamHeaders, "session_id", id, "stream", "ui")
	if !ok {
		return
	}
	defer closeStream()
	write := func(chunks []uistream.Chunk, done bool) error {
		if len(chunks) == 0 && !done {
			return nil
		}
		var buf []byte
		for _, c := range chunks {
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			buf = fmt.Appendf(buf, "data: %s\n\n", b)
		}
		if done {
			buf = fmt.Appendf(buf, "data: %s\n\n", uistream.Done)
		}
		return send(buf)
	}
	if tr == nil {
		_ = write(first, true)
		return
	}
	if write(first, false) != nil {
		return
	}
	view.ctx = r.Context()
	// A continuing stream may already be waiting for approvals the request
	// did not answer.
	check := len(first) > 0
	for {
		behind := false
		if check {
			paused, more, err := s.uiPause(r.Context(), view, tr, token)
			if err != nil {
				return
			}
			if paused != nil {
				_ = write(paused, true)
				return
			}
			behind = more
		}
		select {
		case <-s.shutdown:
			return
		case <-r.Context().Done():
			return
		default:
		}
		batch, err := s.readBatchMax(r, id, token, uiBatch)
		switch {
		case events.Rejected(err):
			_ = write([]uistream.Chunk{{Type: "error", ErrorText: "the live events of this turn are gone (the stream fell behind or expired): reload the session's messages"}}, true)
			return
		case err != nil:
			if r.Context().Err() == nil {
				s.log.Warn("UI stream ended: the event store failed", "session_id", id, "error", err)
			}
			return
		}
		if len(batch) == 0 {
			if send(KeepAliveFrame) != nil {
				return
			}
			continue
		}
		view.next()
		var out []uistream.Chunk
		relevant := false
		for _, d := range batch {
			token = d.Token
			out = append(out, tr.Add(d.Event)...)
			switch d.Event.Type {
			case wire.EventInterruptRaised, wire.EventInterruptResolved, wire.EventToolCallFinished:
				relevant = true
			}
		}
		if write(out, tr.Ended()) != nil || tr.Ended() {
			return
		}
		// Whether the turn now waits for a person is asked again after
		// events that can change it, or when the stream was behind.
		check = relevant || behind
	}
}

// uiBatch is the most events one read of a UI stream takes.
const uiBatch = 256

// uiPause returns the chunks that end a stream whose turn now waits for a
// person's approval with nothing else running (every tool call of the turn
// is settled or waits for a person, a timer or a task), or nil. The
// session's state is ahead of the stream's reader: behind reports that
// events after token exist (published before the snapshot was taken or
// since), so the stream reads them before it may pause.
func (s *Server) uiPause(ctx context.Context, view *sessionView, tr *uistream.Translator, token string) (_ []uistream.Chunk, behind bool, _ error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.UpdateTimeout)
	defer cancel()
	snap, err := view.refresh(ctx)
	if err != nil {
		s.log.Warn("UI stream: the session's snapshot failed", "session_id", view.id, "error", err)
		return nil, false, err
	}
	if snap.State == nil || tr.Turn() == "" || snap.State.ActiveTurnID != tr.Turn() {
		return nil, false, nil
	}
	// Every event of the state the snapshot shows was published before the
	// snapshot could show it.
	more, err := s.opts.Broker.Read(ctx, view.id, token, 1, time.Millisecond)
	if err != nil && !events.Rejected(err) {
		return nil, false, err
	}
	if len(more) > 0 {
		return nil, true, nil
	}
	var approvals []wire.Interrupt
	for _, in := range snap.PendingInterrupts {
		if in.Kind == wire.InterruptKindApproval {
			approvals = append(approvals, in)
		}
	}
	if len(approvals) == 0 {
		return nil, false, nil
	}
	for _, c := range snap.ToolCalls {
		if c.Status == wire.ToolCallApproved {
			return nil, false, nil // a call still runs: its output comes first
		}
	}
	var out []uistream.Chunk
	for _, in := range approvals {
		out = append(out, tr.RequestApproval(in.InterruptID, in.ToolCallID, in.ToolName, in.Digest)...)
	}
	return append(out, tr.Pause()...), false, nil
}

// sessionView is what a UI stream knows of its session: the latest
// snapshot, queried again (at most once per batch of events) when a call
// it needs is missing or not settled.
type sessionView struct {
	s         *Server
	ctx       context.Context
	id        string
	snap      wire.Snapshot
	calls     map[string]wire.ToolCall
	gen, seen int
}

func newSessionView(s *Server, id string, snap wire.Snapshot) *sessionView {
	v := &sessionView{s: s, id: id, ctx: context.Background()}
	v.set(snap)
	v.seen = v.gen
	return v
}

func (v *sessionView) set(snap wire.Snapshot) {
	v.snap = snap
	v.calls = map[string]wire.ToolCall{}
	for _, c := range snap.ToolCalls {
		v.calls[c.ToolCallID] = c
	}
}

// next marks a new batch of events: the snapshot may be queried again.
func (v *sessionView) next() { v.gen++ }

func (v *sessionView) refresh(ctx context.Context) (wire.Snapshot, error) {
	snap, err := v.s.sessions.GetAgentSnapshot(ctx, v.id)
	if err != nil {
		return wire.Snapshot{}, err
	}
	v.set(snap)
	v.seen = v.gen
	return snap, nil
}

func (v *sessionView) maybeRefresh() {
	if v.seen == v.gen {
		return
	}
	ctx, cancel := context.WithTimeout(v.ctx, v.s.opts.UpdateTimeout)
	defer cancel()
	if _, err := v.refresh(ctx); err != nil {
		if !errors.Is(err, context.Canceled) {
			v.s.log.Warn("UI stream: the session's snapshot failed", "session_id", v.id, "error", err)
		}
		v.seen = v.gen
	}
}

// ToolCall implements uistream.Session.
func (v *sessionView) ToolCall(id string) (wire.ToolCall, bool) {
	if c, ok := v.calls[id]; ok && c.Status.Final() {
		return c, true
	}
	v.maybeRefresh()
	c, ok := v.calls[id]
	return c, ok
}

// SettledToolCall implements uistream.SettledSession: the snapshot read
// for a batch of events may predate the event that settled a call, so a
// call not final there is read once more.
func (v *sessionView) SettledToolCall(id string) (wire.ToolCall, bool) {
	if c, ok := v.calls[id]; ok && c.Status.Final() {
		return c, true
	}
	ctx, cancel := context.WithTimeout(v.ctx, v.s.opts.UpdateTimeout)
	defer cancel()
	if _, err := v.refresh(ctx); err != nil && !errors.Is(err, context.Canceled) {
		v.s.log.Warn("UI stream: the session's snapshot failed", "session_id", v.id, "error", err)
	}
	c, ok := v.calls[id]
	return c, ok
}

// Plan implements uistream.Session.
func (v *sessionView) Plan() *wire.Plan {
	v.maybeRefresh()
	return v.snap.Plan
}
