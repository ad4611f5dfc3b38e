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

// forkSteps are the reads and writes of one Fork inside a driver's
// transaction; runFork is the algorithm both drivers share. Each step
// wraps its driver's errors.
type forkSteps interface {
	// existing returns the fork record of fork, if there is one.
	existing(fork string) (Fork, bool, error)
	// holds reports whether session has window rows or chunks.
	holds(session string) (bool, error)
	// chunks lists the session's chunks overlapping [1, at], its own and
	// shared.
	chunks(session string, at int64) ([]ownedRef, error)
	// firstRow is the session's first window row at or before at (0: none).
	firstRow(session string, at int64) (int64, error)
	// chunkData reads one stored chunk.
	chunkData(owner string, first int64) ([]byte, error)
	// window reads window rows [from, to] with their stored sizes.
	window(session string, from, to int64) ([]Message, []int64, error)
	// root returns the root of session when session is a fork.
	root(session string) (string, bool, error)
	insertFork(f Fork) error
	insertShare(fork string, sg segment) error
	// copyRows copies the parent's window rows [from, to] to fork as
	// they are stored, written by gen 0.
	copyRows(fork, parent string, from, to int64) error
	// insertRows writes encoded messages as fork's window rows, gen 0.
	insertRows(fork string, seqs []int64, encoded [][]byte) error
}

// runFork is Store.Fork over a driver's steps, inside one transaction that
// the caller commits.
func runFork(st forkSteps, fork, parent string, at int64, now time.Time) (ForkResult, error) {
	f, ok, err := st.existing(fork)
	switch {
	case err != nil:
		return ForkResult{}, err
	case ok && (f.Parent != parent || f.AtSequence != at):
		return ForkResult{}, forkConflict(f, parent, at)
	case ok:
		// Made before: the same result again.
		tail, sizes, err := st.window(fork, f.Through+1, at)
		if err != nil {
			return ForkResult{}, err
		}
		return ForkResult{Fork: f, Tail: tail, TailBytes: sizes}, nil
	}
	used, err := st.holds(fork)
	if err != nil {
		return ForkResult{}, err
	}
	if used {
		return ForkResult{}, fmt.Errorf("%w: session %q already holds messages; a fork needs a new session", ErrConflict, fork)
	}
	refs, err := st.chunks(parent, at)
	if err != nil {
		return ForkResult{}, err
	}
	var firstRow int64
	if len(refs) == 0 {
		if firstRow, err = st.firstRow(parent, at); err != nil {
			return ForkResult{}, err
		}
	}
	plan, err := planFork(parent, at, refs, firstRow)
	if err != nil {
		return ForkResult{}, err
	}
	var tail []Message
	var sizes []int64
	if plan.span != nil {
		data, err := st.chunkData(plan.span.Owner, plan.span.First)
		if err != nil {
			return ForkResult{}, err
		}
		msgs, err := checkChunk(plan.span.Owner, plan.span.ChunkRef, data)
		if err != nil {
			return ForkResult{}, err
		}
		tail = tailOf(msgs, plan.through, at)
		sizes = tailBytes(tail)
	} else if tail, sizes, err = st.window(parent, plan.through+1, at); err != nil {
		return ForkResult{}, err
	}
	f = Fork{Session: fork, Parent: parent, Root: parent, AtSequence: at, From: plan.from, Through: plan.through, Created: now.UTC().Truncate(time.Microsecond)}
	if root, ok, err := st.root(parent); err != nil {
		return ForkResult{}, err
	} else if ok {
		f.Root = root
	}
	if err := st.insertFork(f); err != nil {
		return ForkResult{}, err
	}
	for _, sg := range plan.segments {
		if err := st.insertShare(fork, sg); err != nil {
			return ForkResult{}, err
		}
	}
	switch {
	case len(tail) == 0:
	case plan.span == nil:
		// The parent's rows, as they are stored (one statement).
		if err := st.copyRows(fork, parent, plan.through+1, at); err != nil {
			return ForkResult{}, err
		}
	default:
		// Messages cut from a chunk are encoded again.
		encoded, err := encodeWrite(fork, tail, true)
		if err != nil {
			return ForkResult{}, err
		}
		seqs := make([]int64, len(tail))
		for i, m := range tail {
			seqs[i] = m.Sequence
		}
		if err := st.insertRows(fork, seqs, encoded); err != nil {
			return ForkResult{}, err
		}
	}
	return ForkResult{Fork: f, Tail: tail, TailBytes: sizes}, nil
}
