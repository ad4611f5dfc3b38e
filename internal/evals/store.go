package evals

import (
	"context"
	"fmt"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
)

// StoreTexts reads long texts from the message store.
type StoreTexts struct{ Store transcript.Store }

// Message reads the stored message with sequence seq: from the window, or
// from the chunk that holds it.
func (s StoreTexts) Message(ctx context.Context, session string, seq int64) (string, error) {
	msgs, err := s.Store.Window(ctx, session, seq, seq)
	if err != nil {
		return "", err
	}
	if len(msgs) == 0 {
		refs, err := s.Store.Chunks(ctx, session, seq, seq)
		if err != nil {
			return "", err
		}
		for _, r := range refs {
			if msgs, err = s.Store.Chunk(ctx, session, r.First); err != nil {
				return "", err
			}
		}
	}
	for _, m := range msgs {
		if m.Sequence == seq {
			return m.Text, nil
		}
	}
	return "", fmt.Errorf("message %d of %s is not stored (retention may have deleted it)", seq, session)
}

// Blob reads a stored blob as text.
func (s StoreTexts) Blob(ctx context.Context, session, ref string) (string, error) {
	b, err := s.Store.Blob(ctx, session, ref)
	return string(b), err
}
