package chat

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// streamMsg is what the stream goroutine hands the chat loop: an event, a
// reloaded snapshot, a note for the user, or a fatal error.
type streamMsg struct {
	event *Delivered
	snap  *Snapshot
	note  string
	err   error
}

// stream follows the session's events from token until ctx ends. It
// reconnects with Last-Event-ID after a dropped stream, with capped
// exponential backoff, and reloads the snapshot when the server rejects the
// token (400), continuing from the snapshot's token. The reader drops the
// events it has already seen, by ID.
func (s *Session) stream(ctx context.Context, token string, out chan<- streamMsg) {
	send := func(m streamMsg) bool {
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	lastID := ""
	backoff := s.MinBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(backoff*2, s.MaxBackoff)
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	reported := false // a note about the outage was sent
	rejected := 0     // 400s in a row
	for ctx.Err() == nil {
		// connCtx ends the connection; until the answer's headers arrive,
		// a timer bounds the wait, then follow watches the body.
		connCtx, cancelConn := context.WithCancel(ctx)
		timer := time.AfterFunc(s.IdleTimeout, cancelConn)
		var es *EventStream
		var err error
		if lastID != "" {
			es, err = s.Client.Events(connCtx, s.ID, "", lastID)
		} else {
			es, err = s.Client.Events(connCtx, s.ID, token, "")
		}
		timer.Stop()
		if err != nil {
			cancelConn()
			if ctx.Err() != nil {
				return
			}
			var apiErr *APIError
			switch {
			case errors.Is(err, ErrInvalidResumeToken):
				rctx, cancel := context.WithTimeout(ctx, s.RequestTimeout)
				snap, tok, serr := s.Client.Snapshot(rctx, s.ID)
				cancel()
				if serr == nil {
					if !send(streamMsg{snap: &snap}) {
						return
					}
					token, lastID = tok, ""
					// A second rejection in a row waits, so a server that
					// rejects its own tokens is not hammered.
					rejected++
					if rejected > 1 && !wait() {
						return
					}
					continue
				}
				err = serr
			case errors.As(err, &apiErr) && !apiErr.Temporary() && apiErr.StatusCode != 500:
				send(streamMsg{err: fmt.Errorf("event stream: %w", err)})
				return
			}
			if !reported {
				reported = send(streamMsg{note: fmt.Sprintf("(event stream: %v; reconnecting…)", err)})
			}
			if !wait() {
				return
			}
			continue
		}
		rejected = 0
		if reported {
			send(streamMsg{note: "(event stream: reconnected)"})
			reported = false
		}
		got := s.follow(ctx, es, send)
		if id := es.LastEventID(); id != "" {
			lastID = id
		}
		es.Close()
		cancelConn()
		if got {
			backoff = s.MinBackoff
		}
		// The server ended the stream (shut down, or it fell behind and
		// was trimmed): reconnect after the shortest wait.
		if !wait() {
			return
		}
	}
}

// follow reads es until it ends or stays silent, keep-alives included, for
// IdleTimeout. It reports whether any event arrived.
func (s *Session) follow(ctx context.Context, es *EventStream, send func(streamMsg) bool) bool {
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(max(s.IdleTimeout/4, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				es.Close()
				return
			case <-tick.C:
				if time.Since(es.LastActivity()) > s.IdleTimeout {
					es.Close()
					return
				}
			}
		}
	}()
	got := false
	for {
		d, err := es.Next()
		var bad *MalformedEventError
		switch {
		case errors.As(err, &bad):
			if !send(streamMsg{note: "(skipped a " + bad.Error() + ")"}) {
				return got
			}
			continue
		case err != nil:
			return got
		}
		got = true
		if !send(streamMsg{event: &d}) {
			return got
		}
	}
}
