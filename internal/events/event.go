// Package events carries a session's live events (the spec's AgentEvents
// stream) from the session and its runners to readers such as browsers.
//
// Events are best effort: a retried Step can repeat them and a reader can
// miss them, so a durable result never lives only in an event. Readers
// rebuild from the session snapshot.
package events

import (
	"encoding/json"
	"log/slog"
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
