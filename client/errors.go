package client

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// ErrNoSession reports a session the engine does not run: it ended (and,
// for a read, no worker serves its record), or it never existed.
var ErrNoSession = errors.New("no such session is running (it ended, or never existed)")

// verbs word each update and query for people, as "<verb> session ID".
var verbs = map[string]string{
	wire.UpdateSendUserMessage:     "send a message to",
	wire.UpdateResolveInterrupt:    "approve or reject a call of",
	wire.UpdateExtendInterrupt:     "extend a deadline of",
	wire.UpdateAnswerQuestion:      "answer a question of",
	wire.UpdateExecutePlan:         "run the plan of",
	wire.UpdateSessionSettings:     "change the settings of",
	wire.UpdateSteerUserMessage:    "steer the turn of",
	wire.UpdateDeleteQueuedMessage: "delete a queued message of",
	wire.UpdateCancelTurn:          "cancel the turn of",
	wire.UpdateCloseSession:        "close",
	wire.UpdateSessionMetadata:     "rename or archive",
	wire.QueryAgentSnapshot:        "read",
	wire.QueryListAgentMessages:    "read the messages of",
}

// sessionError words a failed update or query (name) of a session for
// people: what was tried, on which session, and why, never the update's
// or query's own name nor the engine's "workflow". The engine's error
// stays in the chain (errors.As finds it).
func sessionError(name, sessionID string, err error) error {
	verb, ok := verbs[name]
	if !ok {
		verb = "reach"
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) && !errors.Is(err, ErrSessionClosed) {
		return &SessionError{Verb: verb, SessionID: sessionID, errs: []error{ErrNoSession, err}}
	}
	return &SessionError{Verb: verb, SessionID: sessionID, errs: []error{err}}
}

// SessionError is a failed request to a session. Its text is the first
// of its errors; errors.Is and errors.As see them all (ErrNoSession and
// the engine's NotFound, say).
type SessionError struct {
	// Verb says what was tried ("send a message to", "read").
	Verb      string
	SessionID string
	errs      []error
}

func (e *SessionError) Error() string {
	return fmt.Sprintf("%s session %s: %s", e.Verb, e.SessionID, forPeople(e.errs[0].Error()))
}

func (e *SessionError) Unwrap() []error { return e.errs }

// forPeople says "session" where the engine says "workflow".
func forPeople(msg string) string {
	for _, r := range []struct{ from, to string }{
		{"workflow execution", "session"}, {"Workflow execution", "Session"},
		{"workflow", "session"}, {"Workflow", "Session"},
	} {
		msg = strings.ReplaceAll(msg, r.from, r.to)
	}
	return msg
}
