package httpclient

import (
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/session"
)

// TestEventNamesAreTheSessions: the client's event names are the ones the
// session writes (which docs/conformance.md ties to the spec), so the
// client cannot drift from the wire.
func TestEventNamesAreTheSessions(t *testing.T) {
	for _, p := range [][2]string{
		{EventTurnStarted, session.EventTurnStarted}, {EventTurnCompleted, session.EventTurnCompleted},
		{EventTurnFailed, session.EventTurnFailed}, {EventTextDelta, session.EventTextDelta},
		{EventReasoningDelta, session.EventReasoningDelta}, {EventToolCallDeferred, session.EventToolCallDeferred},
		{EventToolCallStarted, session.EventToolCallStarted}, {EventToolCallFinished, session.EventToolCallFinished},
		{EventInterruptRaised, session.EventInterruptRaised}, {EventInterruptResolved, session.EventInterruptResolved},
		{EventUsageRecorded, session.EventUsageRecorded}, {EventCompactionStarted, session.EventCompactionStarted},
		{EventCompactionFinished, session.EventCompactionFinished}, {EventSpendLimitReached, session.EventSpendLimitReached},
		{EventTurnSteered, session.EventTurnSteered}, {EventTurnCancelled, session.EventTurnCancelled},
		{CancellationSteered, session.CancellationSteered}, {CancellationTurnCancelled, session.CancellationTurnCancelled},
	} {
		if got, want := p[0], p[1]; got != want {
			t.Errorf("httpclient has %q where the session writes %q", got, want)
		}
	}
}
