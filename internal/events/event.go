// Package events carries a session's live events (the spec's AgentEvents
// stream) from the session and its runners to readers such as browsers.
//
// Events are best effort: a retried Step can repeat them and a reader can
// miss them, so a durable result never lives only in an event. Readers
// rebuild from the session snapshot.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"
)

// Event is one live event of a session.
type Event struct {
	SessionID string `json:"session_id"`
	Type      string `json:"type"`
	TurnID    string `json:"turn_id,omitempty"`
	// StepExecutionID is shared by every attempt of one Step execution.
	StepExecutionID string `json:"step_execution_id,omitempty"`
	// Attempt is the one-based Step attempt (0 for events the session writes
	// from workflow code).
	Attempt int             `json:"attempt"`
	Payload json.RawMessage `json:"payload"`
	// Origin and Index identify the event for de-duplication: Origin is
	// the writer (one attempt of one Step, or one run of a session's
	// workflow code) and Index counts its events from 1. A write repeated
	// with the same pair, by a client retrying after a lost answer or by a
	// workflow task that runs again on another worker, is stored once. An
	// empty Origin is never de-duplicated. Neither reaches readers.
	Origin string `json:"-"`
	Index  uint64 `json:"-"`
	// Stream, when set, is the session whose stream the event is written
	// to, when that is not its own: a sub-agent's events are also written
	// to the streams of the sessions above it, with SessionID still the
	// sub-agent's. An event with Stream set is never announced on the
	// change feed; a sub-agent writes its own stream that way too (its
	// parent announces what lists show).
	Stream string `json:"-"`
}

// StreamID is the session whose stream holds e.
func (e Event) StreamID() string {
	if e.Stream != "" {
		return e.Stream
	}
	return e.SessionID
}

// Delivered is an event with the resume token that continues after it.
type Delivered struct {
	Token string
	// Sequence is the event's position in its session's stream: 1 for the
	// first event, one more for each next one, with no gap while the
	// stream keeps them. A new stream (after the events expired) starts
	// again at 1.
	Sequence uint64
	Event    Event
}

// Broker stores each session's recent events and serves them to readers
// from resume tokens. Publishing never blocks on readers.
//
// The methods that take a context may reach a shared store (Redis): they
// return its error, which a caller answers with 503, not 400.
type Broker interface {
	Sink
	// Head returns the token after the newest event of a session (the start
	// of an empty stream for a session with no events).
	Head(ctx context.Context, sessionID string) (string, error)
	// TurnStart returns the token just before the turn_started event of a
	// turn, so a reader replays that turn's events; false when the broker no
	// longer holds it.
	TurnStart(ctx context.Context, sessionID, turnID string) (string, bool, error)
	// Oldest returns the token before the oldest retained event.
	Oldest(ctx context.Context, sessionID string) (string, error)
	// Check validates a token for a session without reading: it returns
	// ErrInvalidToken, ErrTrimmed or ErrExpired for a token it cannot
	// continue.
	Check(ctx context.Context, sessionID, token string) error
	// KeptUntil returns when the broker drops a session's events if it
	// publishes nothing more (a later event moves it); its tokens resume no
	// further. Memory pressure or a restart can end them sooner.
	KeptUntil(ctx context.Context, sessionID string) (time.Time, error)
	// Read waits until events after token exist, or ctx ends or wait
	// passes, and returns up to max of them. It returns ErrInvalidToken,
	// ErrTrimmed or ErrExpired for a token it cannot continue.
	Read(ctx context.Context, sessionID, token string, max int, wait time.Duration) ([]Delivered, error)
	// Close flushes the events still on their way to the store and stops
	// the broker's readers.
	Close() error
}

// Rejected reports whether err is the broker's answer about a token (the
// reader must reload the snapshot) rather than a failure to reach it.
func Rejected(err error) bool {
	return errors.Is(err, ErrInvalidToken) || errors.Is(err, ErrTrimmed) || errors.Is(err, ErrExpired)
}

// Sink receives events. Publish must not block for long: it runs on the
// session's hot paths.
type Sink interface {
	Publish(e Event)
}

// Discard drops every event.
var Discard Sink = discard{}

type discard struct{}

func (discard) Publish(Event) {}

// LogSink logs every event at debug level, with its payload size instead of
// its payload, so text never reaches the logs.
type LogSink struct{ Logger *slog.Logger }

// Publish logs e.
func (s LogSink) Publish(e Event) {
	if s.Logger == nil {
		return
	}
	s.Logger.Debug("agent event", "session_id", e.SessionID, "type", e.Type, "turn_id", e.TurnID,
		"step_execution_id", e.StepExecutionID, "attempt", e.Attempt, "payload_bytes", len(e.Payload))
}

// waitTimer fires once wait passes; it never fires for a wait of 0 (a Read
// that waits only for its context). Call stop when done.
func waitTimer(wait time.Duration) (<-chan time.Time, func()) {
	if wait <= 0 {
		return nil, func() {}
	}
	t := time.NewTimer(wait)
	return t.C, func() { t.Stop() }
}

// Stats count what became of the events a broker was given in this
// process.
type Stats struct {
	// Published were stored (a repeated write counts once).
	Published int64
	// Dropped never reached the store (the Redis queue was full, or Redis
	// failed every retry).
	Dropped int64
	// Trimmed were removed to keep a session within its byte bound.
	Trimmed int64
}
