package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dex-agents/dex-agent-worker/httpclient/sse"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Event is one live event of a session, as the event stream carries it.
type Event struct {
	SessionID string `json:"session_id"`
	Type      string `json:"type"`
	TurnID    string `json:"turn_id,omitempty"`
	// StepExecutionID is shared by every attempt of one Step execution.
	StepExecutionID string `json:"step_execution_id,omitempty"`
	// Attempt is the one-based Step attempt; 0 for the session's own events.
	Attempt int `json:"attempt"`
	// Payload is the event's JSON object. On the wire it is JSON text (a
	// string holding JSON); an object is accepted too.
	Payload Payload `json:"payload"`
}

// Payload is an event payload: a JSON object.
type Payload json.RawMessage

// UnmarshalJSON accepts a JSON string that holds JSON, or JSON itself.
func (p *Payload) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	*p = append((*p)[:0], b...)
	return nil
}

// MarshalJSON writes the payload as JSON text, as the server does.
func (p Payload) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte(`""`), nil
	}
	return json.Marshal(string(p))
}

// Decode unmarshals the payload into v.
func (p Payload) Decode(v any) error { return json.Unmarshal(p, v) }

// Send modes of a message (Client.SendMessageMode).
const (
	SendModeQueue        = wire.SendModeQueue
	SendModeSteer        = wire.SendModeSteer
	SendModeInterrupt    = wire.SendModeInterrupt
	SendModeRejectIfBusy = wire.SendModeRejectIfBusy
)

// Delivered is an event with the resume token that continues after it.
type Delivered struct {
	ID    string
	Event Event
}

// EventStream reads a session's event stream.
type EventStream struct {
	body io.ReadCloser
	r    *sse.Reader
	last atomic.Int64 // unix nanoseconds of the latest bytes read
}

// MalformedEventError reports a frame whose data is not an event. The
// stream goes on: call Next again.
type MalformedEventError struct {
	ID  string
	Err error
}

func (e *MalformedEventError) Error() string {
	return fmt.Sprintf("malformed event (id %q): %v", e.ID, e.Err)
}

func (e *MalformedEventError) Unwrap() error { return e.Err }

// Events opens the session's event stream after a resume token: resumeToken
// is sent as ?resume_token= (the token of a snapshot) and lastEventID as the
// Last-Event-ID header (the last event read, on a reconnect); the server
// prefers the header. The error wraps ErrInvalidResumeToken for a 400.
func (c *Client) Events(ctx context.Context, sessionID, resumeToken, lastEventID string) (*EventStream, error) {
	u := c.url(sessionPath(sessionID, "events"))
	if resumeToken != "" {
		u += "?resume_token=" + url.QueryEscape(resumeToken)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.do(req)
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest {
			return nil, fmt.Errorf("%w: %w", ErrInvalidResumeToken, apiErr)
		}
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("the events route answered %q, not text/event-stream", ct)
	}
	s := &EventStream{body: resp.Body}
	s.last.Store(time.Now().UnixNano())
	s.r = sse.NewReader(activityReader{s})
	return s, nil
}

type activityReader struct{ s *EventStream }

func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.s.body.Read(p)
	if n > 0 {
		a.s.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// LastActivity is when bytes last arrived, keep-alive comments included.
func (s *EventStream) LastActivity() time.Time { return time.Unix(0, s.last.Load()) }

// Next returns the next event. It returns io.EOF when the server ends the
// stream, and a *MalformedEventError for a frame it skips.
func (s *EventStream) Next() (Delivered, error) {
	ev, err := s.r.Next()
	if err != nil {
		return Delivered{}, err
	}
	var e Event
	if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
		return Delivered{}, &MalformedEventError{ID: ev.ID, Err: err}
	}
	return Delivered{ID: ev.ID, Event: e}, nil
}

// LastEventID is the id of the latest frame read: reconnect with it.
func (s *EventStream) LastEventID() string { return s.r.LastEventID() }

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
