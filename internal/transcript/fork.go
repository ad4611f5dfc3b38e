package transcript

import (
	"fmt"
	"time"
)

// Forks. A fork is a new session whose transcript begins as messages 1..at
// of another session (its parent). The parent's chunks that end at or
// before the fork point are shared, not copied: the fork records them as
// segments (a base session and a range of sequences), and Chunks and Chunk
// of the fork serve the base's chunks in those ranges beside the fork's
// own. Only the messages after the last shared chunk (at most a window and
// a chunk of them) are copied, as the fork's first window rows. So a fork
// costs the same whatever the parent's length.
//
// A shared chunk outlives its owner's deletes: DeleteChunks (retention) and
// DeleteSession of the owner retire it instead, so the owner no longer
// sees it while its forks still read it; it is deleted once no fork shares
// it any more (DeleteSession of the last fork that did).

// MaxForkSegments bounds the segments of one fork: a fork of a fork of ...
// shares chunks of every session up the chain, one segment per stretch of
// one owner's chunks.
const MaxForkSegments = 64

// Fork is the record of a fork.
type Fork struct {
	// Session is the fork; Parent the session it was forked from; Root the
	// first session of the chain (the parent's root when the parent is a
	// fork itself).
	Session string `json:"session_id"`
	Parent  string `json:"parent_session_id"`
	Root    string `json:"root_session_id"`
	// AtSequence is the fork point: the fork's transcript began as the
	// parent's messages 1..AtSequence.
	AtSequence int64 `json:"at_sequence"`
	// From is the first message the fork can read (the parent's retention
	// may have deleted older ones); Through the last sequence its shared
	// chunks hold (0: none). Messages Through+1..AtSequence were copied as
	// the fork's window rows.
	From    int64     `json:"from_sequence"`
	Through int64     `json:"through_sequence"`
	Created time.Time `json:"created_at"`
}

// ForkResult is what Fork did: the record, and the messages it copied as
// the fork's window rows (Through+1..AtSequence).
type ForkResult struct {
	Fork Fork
	Tail []Message
	// TailBytes are the sizes of the copied messages' encodings.
	TailBytes []int64
}

// tailBytes returns the encoded sizes of msgs.
func tailBytes(msgs []Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = int64(EncodedSize(m))
	}
	return out
}

// segment is a stretch of one base session's chunks that a fork shares.
type segment struct {
	Base        string
	First, Last int64
}

// ownedRef is a chunk ref with the session that stores it.
type ownedRef struct {
	ChunkRef
	Owner string
}

// forkPlan is what a fork of parent at a shares and copies.
type forkPlan struct {
	segments []segment
	from     int64
	through  int64
	// span is the chunk that holds the fork point but ends after it: the
	// tail comes from it instead of the parent's window rows.
	span *ownedRef
}

// planFork cuts the parent's chunks that overlap [1, at] (its own and those
// it shares, in order) into the shared segments and the tail. The chunks
// must follow each other without a hole. Without chunks, the parent's
// messages start at firstRow, its first window row (0: none at or before
// at). The fork's messages start where the parent's do: retention may have
// deleted the first ones.
func planFork(parent string, at int64, refs []ownedRef, firstRow int64) (forkPlan, error) {
	var p forkPlan
	if len(refs) == 0 {
		if firstRow == 0 {
			if at == 0 {
				return forkPlan{from: 1}, nil
			}
			return forkPlan{}, fmt.Errorf("%w: session %q: no message at or before %d is stored", ErrMissing, parent, at)
		}
		return forkPlan{from: firstRow, through: firstRow - 1}, nil
	}
	for i, r := range refs {
		if i > 0 && r.First != refs[i-1].Last+1 {
			return forkPlan{}, fmt.Errorf("%w: session %q: no chunk holds messages %d to %d", ErrMissing, parent, refs[i-1].Last+1, r.First-1)
		}
		if i == 0 {
			// Retention may have deleted the chunks before the first.
			p.from, p.through = r.First, r.First-1
		}
		if r.Last > at {
			p.span = &refs[i]
			break
		}
		p.through = r.Last
		if n := len(p.segments); n > 0 && p.segments[n-1].Base == r.Owner {
			p.segments[n-1].Last = r.Last
			continue
		}
		p.segments = append(p.segments, segment{Base: r.Owner, First: r.First, Last: r.Last})
	}
	if len(p.segments) > MaxForkSegments {
		return forkPlan{}, fmt.Errorf("%w: session %q: a fork at %d would share chunks of %d stretches of sessions (at most %d): the chain of forks is too long",
			ErrInvalid, parent, at, len(p.segments), MaxForkSegments)
	}
	return p, nil
}

// tailOf returns the messages through+1..at of a chunk that holds at.
func tailOf(msgs []Message, through, at int64) []Message {
	var out []Message
	for _, m := range msgs {
		if m.Sequence > through && m.Sequence <= at {
			out = append(out, m)
		}
	}
	return out
}

// checkFork validates Fork's arguments.
func checkFork(fork, parent string, at int64) error {
	if err := checkSession(fork); err != nil {
		return err
	}
	if err := checkSession(parent); err != nil {
		return err
	}
	if fork == parent {
		return fmt.Errorf("%w: session %q cannot be forked into itself", ErrInvalid, fork)
	}
	if at < 0 {
		return fmt.Errorf("%w: session %q: fork point %d (0 forks before the first message)", ErrInvalid, parent, at)
	}
	return nil
}

func forkConflict(f Fork, parent string, at int64) error {
	return fmt.Errorf("%w: session %q is already a fork of %q at %d (asked: %q at %d)", ErrConflict, f.Session, f.Parent, f.AtSequence, parent, at)
}

func retiredConflict(session string, ref ChunkRef) error {
	return fmt.Errorf("%w: session %q: the chunk starting at %d was deleted while a fork shares it; a deleted session's ID cannot be used again while its forks exist",
		ErrConflict, session, ref.First)
}

// chunkRefs drops the owners.
func chunkRefs(owned []ownedRef) []ChunkRef {
	if owned == nil {
		return nil
	}
	out := make([]ChunkRef, len(owned))
	for i, r := range owned {
		out[i] = r.ChunkRef
	}
	return out
}

// checkLimit validates a list's limit.
func checkLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("%w: limit %d (at least 1)", ErrInvalid, limit)
	}
	return nil
}
