package session

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
)

// The message window of a session that keeps its messages in the store.
// A Step that stores messages writes them as window rows and returns
// previews (Entry); the workflow keeps the newest ones. Once the window
// holds WindowSize+ChunkSize messages, the next storing Step also moves the
// oldest ones, in whole chunks, into immutable chunks (planRoll); the
// workflow drops them from the window when that Step's result commits, and
// the Step after deletes their rows. Chunk boundaries depend only on the
// committed messages, so every attempt, and every later Step, cuts the same
// chunks: a chunk written by an attempt whose result never committed is
// written again, identically.

// Chunks a storing Step moves at most, so one commit stays small.
const (
	maxRollChunks = 4
	maxRollBytes  = 8 << 20
)

// windowFirst is the first sequence of the window (the next sequence when
// the window is empty).
func (s *State) windowFirst() int64 {
	if len(s.Window) > 0 {
		return s.Window[0].Sequence
	}
	return s.NextSequence
}

// storeWork is the store work of the next Step that stores messages, or
// nil in a session without the store. Each such Step gets a new Gen.
func (s *State) storeWork() *StoreWork {
	if !s.Options.Messages.Store {
		return nil
	}
	s.WriterGen++
	w := &StoreWork{
		Gen:           s.WriterGen,
		NextSequence:  s.NextSequence,
		DeleteThrough: s.RolledThrough,
		Roll:          s.planRoll(),
		DeletedBefore: s.DeletedBefore,
	}
	// Retention deletes only what a summary covers: without compaction the
	// model's input is every message (sessions before RetentionVersion
	// deleted them anyway, and replay as they ran).
	retains := s.Options.Compaction != nil || s.Options.Version < RetentionVersion
	if limit := s.Options.Messages.RetainedLimit; limit > 0 && retains {
		// Only whole chunks are deleted, so never past what chunks hold.
		from := min(s.NextSequence-limit, s.windowFirst())
		if s.Options.Compaction != nil {
			// With compaction, only summarized messages may go.
			summarized := int64(1)
			if s.Summary != nil {
				summarized = s.Summary.LastSequence + 1
			}
			from = min(from, summarized)
		}
		if from > max(s.DeletedBefore, 1) {
			w.RetainFrom = from
		}
	}
	s.Rolling, s.Retaining = w.Roll, w.RetainFrom
	return w
}

// planRoll cuts the oldest window messages into whole chunks once the
// window holds WindowSize+ChunkSize messages, keeping WindowSize of them: at
// most ChunkSize messages and ChunkMaxBytes of encoding per chunk, a
// larger message alone. Only complete chunks are cut, at most
// maxRollChunks of them and maxRollBytes in all.
func (s *State) planRoll() []ChunkPlan {
	o := s.Options.Messages
	size, maxBytes := max(o.ChunkSize, 1), max(o.ChunkMaxBytes, 1)
	movable := len(s.Window) - max(o.WindowSize, 1)
	if movable < size {
		return nil
	}
	var plans []ChunkPlan
	var total int64
	i := 0
	for i < movable && len(plans) < maxRollChunks {
		// A chunk starts at first and grows while it has room for the next
		// message; the first message always fits, alone when it is larger
		// than maxBytes.
		first := i
		var bytes int64
		for i < movable && i-first < size {
			b := s.Window[i].Bytes
			if i > first && bytes+b > maxBytes {
				break
			}
			bytes += b
			i++
		}
		// Only a complete chunk is cut: full by count, or with no room for
		// the message after it.
		complete := i-first == size || bytes >= maxBytes || (i < len(s.Window) && bytes+s.Window[i].Bytes > maxBytes)
		if !complete || (len(plans) > 0 && total+bytes > maxRollBytes) {
			break
		}
		total += bytes
		plans = append(plans, ChunkPlan{First: s.Window[first].Sequence, Last: s.Window[i-1].Sequence})
	}
	return plans
}

// checkStored returns why a Step's store result cannot be committed, or "":
// its messages must continue the sequence, and its chunks must be the
// oldest window messages in order.
func (s *State) checkStored(r *StoreResult) string {
	if r == nil {
		if s.Options.Messages.Store {
			return "the step returned no store result"
		}
		return ""
	}
	if !s.Options.Messages.Store {
		return "the step stored messages in a session without the message store"
	}
	if !slices.Equal(r.Chunks, s.Rolling) {
		return "the step cut chunks " + plans(r.Chunks) + "; it was asked for " + plans(s.Rolling)
	}
	if r.DeletedBefore > max(s.Retaining, s.DeletedBefore) {
		return "the step deleted messages before " + strconv.FormatInt(r.DeletedBefore, 10) + "; it was asked to delete only before " + strconv.FormatInt(s.Retaining, 10)
	}
	for i, m := range r.Messages {
		if m.Sequence != s.NextSequence+int64(i) {
			return "the step stored message " + strconv.FormatInt(m.Sequence, 10) + " where " + strconv.FormatInt(s.NextSequence+int64(i), 10) + " comes next"
		}
	}
	return ""
}

// store appends a Step's messages: framework messages themselves without
// the store, the stored previews with it (after dropping the window
// messages its chunks now hold). It returns how many messages it added.
func (s *State) store(msgs []contract.FrameworkMessage, r *StoreResult) int {
	if r == nil {
		for _, m := range msgs {
			s.append(m)
		}
		return len(msgs)
	}
	if n := len(r.Chunks); n > 0 {
		last := r.Chunks[n-1].Last
		drop := 0
		for drop < len(s.Window) && s.Window[drop].Sequence <= last {
			drop++
		}
		s.Window = append([]Entry(nil), s.Window[drop:]...)
		s.RolledThrough = last
	}
	if r.DeletedBefore > s.DeletedBefore {
		s.DeletedBefore = r.DeletedBefore
	}
	s.Rolling, s.Retaining = nil, 0
	for _, m := range r.Messages {
		m.TurnID = s.ActiveTurnID
		s.Window = append(s.Window, m)
		s.NextSequence = m.Sequence + 1
	}
	return len(r.Messages)
}

// refs returns the store references of a record's large fields.
func (s *State) refs(toolCallID string) RecordRefs {
	for _, r := range s.Refs {
		if r.ToolCallID == toolCallID {
			return r
		}
	}
	return RecordRefs{ToolCallID: toolCallID}
}

func (s *State) setOutputRef(toolCallID, ref string) {
	for i := range s.Refs {
		if s.Refs[i].ToolCallID == toolCallID {
			s.Refs[i].OutputRef = ref
			return
		}
	}
	s.Refs = append(s.Refs, RecordRefs{ToolCallID: toolCallID, OutputRef: ref})
}

func plans(ps []ChunkPlan) string {
	if len(ps) == 0 {
		return "none"
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.FormatInt(p.First, 10) + ".." + strconv.FormatInt(p.Last, 10)
	}
	return strings.Join(parts, ", ")
}
