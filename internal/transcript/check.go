package transcript

import (
	"fmt"
)

// Checks and errors that both backends share.

// checkWriter validates a PutWindow writer: Temporal attempts start at 1,
// and the workflow's first Gen is 1, so a zero means the caller forgot it.
func checkWriter(session string, w Writer) error {
	if err := checkSession(session); err != nil {
		return err
	}
	if w.Gen < 1 || w.Attempt < 1 {
		return fmt.Errorf("%w: session %q: writer %s (gen and attempt start at 1)", ErrInvalid, session, w)
	}
	return nil
}

func fencedErr(session string, seq int64, holder, w Writer) error {
	return fmt.Errorf("%w: session %q: message %d is held by %s, newer than this writer (%s); nothing was written",
		ErrFenced, session, seq, holder, w)
}

func sameFirstConflict(session string, ref, stored ChunkRef) error {
	return fmt.Errorf("%w: session %q: a chunk starting at %d is stored with other content (messages %d to %d, %d bytes; this one %d to %d, %d bytes)",
		ErrConflict, session, ref.First, stored.First, stored.Last, stored.Bytes, ref.First, ref.Last, ref.Bytes)
}

func overlapConflict(session string, ref, other ChunkRef) error {
	return fmt.Errorf("%w: session %q: the chunk of messages %d to %d overlaps the stored chunk of messages %d to %d",
		ErrConflict, session, ref.First, ref.Last, other.First, other.Last)
}

// windowReader collects the rows of a Window read, which arrive in order of
// sequence, and finds the first hole.
type windowReader struct {
	msgs []Message
	// sizes are the rows' stored sizes (their encodings' lengths).
	sizes []int64
}

// add takes the next row read for [from, to].
func (w *windowReader) add(session string, from, seq int64, data []byte) error {
	want := from + int64(len(w.msgs))
	if seq != want {
		return fmt.Errorf("%w: session %q: message %d has no window row", ErrMissing, session, want)
	}
	m, err := decodeMessage(data)
	if err != nil {
		return fmt.Errorf("session %q: window row %d: %w", session, seq, err)
	}
	if m.Sequence != seq {
		return fmt.Errorf("%w: session %q: window row %d holds message %d", ErrCorrupt, session, seq, m.Sequence)
	}
	w.msgs = append(w.msgs, m)
	w.sizes = append(w.sizes, int64(len(data)))
	return nil
}

// done returns the rows of [from, to], or ErrMissing when rows at its end
// were missing.
func (w *windowReader) done(session string, from, to int64) ([]Message, error) {
	if next := from + int64(len(w.msgs)); next <= to {
		return nil, fmt.Errorf("%w: session %q: message %d has no window row", ErrMissing, session, next)
	}
	return w.msgs, nil
}

// checkChunk decodes a stored chunk and checks it against its ref.
func checkChunk(session string, ref ChunkRef, data []byte) ([]Message, error) {
	msgs, err := decodeChunk(data)
	if err != nil {
		return nil, fmt.Errorf("session %q: chunk %d: %w", session, ref.First, err)
	}
	if msgs[0].Sequence != ref.First || msgs[len(msgs)-1].Sequence != ref.Last || len(msgs) != ref.Count || int64(len(data)) != ref.Bytes {
		return nil, fmt.Errorf("%w: session %q: chunk %d holds messages %d to %d (%d bytes), its index says %d to %d (%d bytes)",
			ErrCorrupt, session, ref.First, msgs[0].Sequence, msgs[len(msgs)-1].Sequence, len(data), ref.First, ref.Last, ref.Bytes)
	}
	return msgs, nil
}
