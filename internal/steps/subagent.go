package steps

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// ReadSubAgentAnswer reads a sub-agent's answer whole from the message
// store, when the child's report held only its beginning, and keeps the
// call's result in the parent's session (by reference when it is long).
// It only reads the child's transcript and puts a blob by its content, so
// running it again is harmless.
func (a *Activities) ReadSubAgentAnswer(ctx context.Context, in session.SubAgentAnswerInput) (session.SubAgentAnswer, error) {
	st, err := a.store()
	if err != nil {
		return session.SubAgentAnswer{}, err
	}
	// The answer is the child's newest message: a window row, unless the
	// child rolled it into a chunk since.
	msgs, err := transcript.Read(ctx, st, in.ChildSessionID, in.Sequence, in.Sequence, in.Sequence)
	if errors.Is(err, transcript.ErrMissing) {
		msgs, err = transcript.Read(ctx, st, in.ChildSessionID, in.Sequence, in.Sequence+1, in.Sequence)
	}
	if err != nil {
		return session.SubAgentAnswer{}, fmt.Errorf("read message %d of the sub-agent's session %s: %w", in.Sequence, in.ChildSessionID, err)
	}
	var text string
	found := false
	for _, m := range msgs {
		if m.Sequence == in.Sequence {
			text, found = m.Text, true
		}
	}
	if !found {
		return session.SubAgentAnswer{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the sub-agent's session %s holds no message %d", in.ChildSessionID, in.Sequence), wire.MessageStoreErrorType, nil)
	}
	result := session.SubAgentResult(in.ChildSessionID, text)
	if in.Note != "" {
		// A background child's answer, as the message queued into the
		// session.
		result = in.Note + text
	}
	preview, ref, err := a.keepLarge(ctx, in.SessionID, result)
	if err != nil {
		return session.SubAgentAnswer{}, err
	}
	return session.SubAgentAnswer{Output: preview, OutputRef: ref}, nil
}
