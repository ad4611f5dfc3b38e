package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// StreamHeaders are sent with every event stream.
var StreamHeaders = map[string]string{
	"Content-Type":      "text/event-stream",
	"Cache-Control":     "no-cache",
	"Connection":        "keep-alive",
	"X-Accel-Buffering": "no",
}

// wireEvent is the SSE data of one event: the spec's AgentEvent wire JSON,
// with the payload as JSON text.
type wireEvent struct {
	SessionID       string `json:"session_id"`
	Type            string `json:"type"`
	TurnID          string `json:"turn_id,omitempty"`
	StepExecutionID string `json:"step_execution_id,omitempty"`
	Attempt         int    `json:"attempt"`
	Payload         string `json:"payload"`
	// Sequence is the event's place in the session's stream (1, 2, ...
	// with no gap while the stream keeps its events), so a reader can
	// check that it missed nothing; it starts at 1 again in a new stream,
	// whose first read follows a snapshot reload.
	Sequence uint64 `json:"sequence,omitempty"`
}

// Frame renders one SSE frame.
func Frame(d events.Delivered) []byte {
	data, _ := json.Marshal(wireEvent{
		SessionID: d.Event.SessionID, Type: d.Event.Type, TurnID: d.Event.TurnID,
		StepExecutionID: d.Event.StepExecutionID, Attempt: d.Event.Attempt, Payload: string(d.Event.Payload),
		Sequence: d.Sequence,
	})
	return fmt.Appendf(nil, "id: %s\ndata: %s\n\n", d.Token, data)
}

// KeepAliveFrame is sent after an idle long poll.
var KeepAliveFrame = []byte(": keep-alive\n\n")

// OpenStreams returns the number of event streams open now.
func (s *Server) OpenStreams() int {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	n := 0
	for _, c := range s.streams {
		n += c
	}
	return n
}

// openStream counts an event stream of tok; false when the token holds
// MaxStreamsPerToken already. Call the returned func when the stream ends.
func (s *Server) openStream(tok *scopedToken) (func(), bool) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streams[tok.index] >= s.opts.MaxStreamsPerToken {
		return nil, false
	}
	s.streams[tok.index]++
	return func() {
		s.streamsMu.Lock()
		s.streams[tok.index]--
		s.streamsMu.Unlock()
	}, true
}

// startStream starts a long-lived response of tok: it counts it against
// MaxStreamsPerToken (429, logged with logArgs, when the token holds its
// most), sends headers and 200, and returns a write that sets the write
// deadline and flushes, and the func that ends the count. ok is false when
// the answer was the 429.
func (s *Server) startStream(w http.ResponseWriter, r *http.Request, tok *scopedToken, headers map[string]string, logArgs ...any) (write func([]byte) error, end func(), ok bool) {
	end, ok = s.openStream(tok)
	if !ok {
		s.log.Warn("stream refused: the token holds its most open streams",
			append([]any{"token", tok.Name, "max_streams_per_token", s.opts.MaxStreamsPerToken}, logArgs...)...)
		s.fail(w, r, errorf(http.StatusTooManyRequests, "too_many_requests",
			"this token has %d event streams open, the most it may (http.max_streams_per_token): close one first", s.opts.MaxStreamsPerToken))
		return nil, nil, false
	}
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}, end, true
}

func (s *Server) events(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	// A session's stream holds its sub-agents' events too (session_id the
	// child's); readers that know them ask for them.
	var subAgents bool
	switch v := r.URL.Query().Get("sub_agents"); v {
	case "", "false":
	case "true":
		subAgents = true
	default:
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "sub_agents must be true or false, got %q", v))
		return
	}
	token := r.Header.Get("Last-Event-ID")
	if token == "" {
		token = r.URL.Query().Get("resume_token")
	}
	if token == "" {
		var err error
		if token, err = s.opts.Broker.Oldest(r.Context(), id); err != nil {
			s.failEvents(w, r, id, err)
			return
		}
	}
	if err := s.opts.Broker.Check(r.Context(), id, token); err != nil {
		s.failEvents(w, r, id, err)
		return
	}
	write, closeStream, ok := s.startStream(w, r, tok, StreamHeaders, "session_id", id)
	if !ok {
		return
	}
	defer closeStream()
	if err := write([]byte(": stream open\n\n")); err != nil {
		return
	}
	ctx := r.Context()
	for {
		select {
		case <-s.shutdown:
			return
		case <-ctx.Done():
			return
		default:
		}
		batch, err := s.readBatch(r, id, token)
		switch {
		case errors.Is(err, events.ErrTrimmed):
			_ = write([]byte(": the stream fell behind and was trimmed; reload the snapshot\n\n"))
			return
		case errors.Is(err, events.ErrExpired):
			_ = write([]byte(": the session's events expired; reload the snapshot\n\n"))
			return
		case err != nil:
			if r.Context().Err() == nil {
				s.log.Warn("event stream ended: the event store failed", "session_id", id, "error", err)
			}
			return
		}
		if len(batch) == 0 {
			if write(KeepAliveFrame) != nil {
				return
			}
			continue
		}
		var buf []byte
		for _, d := range batch {
			if subAgents || d.Event.SessionID == "" || d.Event.SessionID == id {
				buf = append(buf, Frame(d)...)
			}
			token = d.Token
		}
		if len(buf) > 0 && write(buf) != nil {
			return
		}
	}
}

// failEvents answers a broker error before a stream starts: 400 for a
// token the broker rejects (the reader reloads the snapshot), 503 when the
// event store cannot be reached (the reader retries).
func (s *Server) failEvents(w http.ResponseWriter, r *http.Request, id string, err error) {
	if events.Rejected(err) {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "%v: reload the snapshot and open the stream from its resume_token", err))
		return
	}
	s.log.Warn("the event store is unreachable", "session_id", id, "error", err)
	s.fail(w, r, errorf(http.StatusServiceUnavailable, "unavailable", "the live event store is unreachable; retry shortly"))
}

// readBatch long-polls the broker, ending early on shutdown.
func (s *Server) readBatch(r *http.Request, id, token string) ([]events.Delivered, error) {
	return s.readBatchMax(r, id, token, 256)
}

// readBatchMax is readBatch taking up to max events.
func (s *Server) readBatchMax(r *http.Request, id, token string, max int) ([]events.Delivered, error) {
	ctx := r.Context()
	stop := make(chan struct{})
	defer close(stop)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.shutdown:
			cancel()
		case <-stop:
		}
	}()
	batch, err := s.opts.Broker.Read(ctx, id, token, max, s.opts.KeepAlive)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return batch, err
}

// sessionChanges streams the change feed (wire.SessionChange) of the
// sessions the token may see, as SSE frames of event type "change", so a
// page that lists sessions reads its list again, or moves a count, when
// one of them changes. It keeps nothing: a client that connects again
// reads the list first. A "resync" change asks it to read the list again
// (changes were lost).
func (s *Server) sessionChanges(w http.ResponseWriter, r *http.Request, tok *scopedToken) {
	feed, ok := s.opts.Broker.(events.ChangeFeed)
	if !ok {
		s.fail(w, r, errorf(http.StatusNotFound, "not_found", "this server's event store has no change feed"))
		return
	}
	// The watch starts before the stream's first comment, so a client
	// that saw it open and then read the list misses no change.
	watch, stop := feed.WatchChanges()
	defer stop()
	write, closeStream, ok := s.startStream(w, r, tok, StreamHeaders, "stream", "changes")
	if !ok {
		return
	}
	defer closeStream()
	if err := write([]byte(": stream open\n\n")); err != nil {
		return
	}
	ctx := r.Context()
	keepAlive := time.NewTicker(s.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-s.shutdown:
			return
		case <-ctx.Done():
			return
		case <-keepAlive.C:
			if write(KeepAliveFrame) != nil {
				return
			}
		case <-watch.Ready():
			changes, open := watch.Next()
			var buf []byte
			for _, c := range changes {
				if c.Type != wire.ChangeResync && !s.mayWatch(ctx, tok, c.SessionID) {
					continue
				}
				data, _ := json.Marshal(c)
				buf = fmt.Appendf(buf, "event: change\ndata: %s\n\n", data)
			}
			if len(buf) > 0 && write(buf) != nil {
				return
			}
			if !open {
				return
			}
		}
	}
}

// mayWatch reports whether tok may see session id (its prefix and agent).
func (s *Server) mayWatch(ctx context.Context, tok *scopedToken, id string) bool {
	if id == "" || !tok.allowsSession(id) {
		return false
	}
	agent, err := s.sessionAgent(ctx, id)
	return err == nil && tok.allowsAgent(agent)
}
