package session

import (
	"strconv"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Forks. A fork is a new session whose transcript begins as messages
// 1..AtSequence of its parent. Whoever starts it asks the parent's
// ForkPoint, has the message store share the parent's chunks and copy the
// messages after them (transcript.Store.Fork), and starts the session with
// the result (wire.ForkStart). The fork inherits the transcript, the
// summary that ends at or before the fork point, and the settings; never a
// pending approval, a queued message, a running turn, the usage or the
// plan. Tool calls up to the fork point are in its transcript with their
// results; none is run again.

// ForkPoint answers get_fork_point for a fork at at.
func (s *State) ForkPoint(at int64) wire.ForkPoint {
	p := wire.ForkPoint{
		Agent:               s.Options.Agent,
		Store:               s.Options.Messages.Store,
		FirstSequence:       max(s.DeletedBefore, 1),
		WindowFirstSequence: s.windowFirst(),
		LastSequence:        s.NextSequence - 1,
		// Tool results are stored by the Step that resumes the turn (a
		// model call, or the Step that records a failed or stopped turn),
		// so from the calls' request until then the last message holds
		// calls without results.
		ResultsPending:  s.Phase != phaseNone && len(s.ToolCalls) > 0,
		SessionSettings: []byte("{}"),
	}
	if s.Settings != "" {
		p.SessionSettings = []byte(s.Settings)
	}
	if sm := s.Summary; sm != nil {
		p.SummaryLastSequence = sm.LastSequence
		if sm.LastSequence <= at {
			p.Summary = &wire.ForkSummary{
				Generation: sm.Generation, FirstSequence: sm.FirstSequence, LastSequence: sm.LastSequence,
				Text: sm.Text, TextRef: sm.TextRef, CreatedAtMs: sm.CreatedAtMs,
			}
		} else {
			p.SummaryAfter = true
		}
	}
	return p
}

// startFork sets up a fork's transcript from its start input, or says why
// it cannot.
func (s *State) startFork(f *wire.ForkStart) string {
	switch {
	case !s.Options.Messages.Store:
		return "the agent keeps no messages in the message store"
	case f.ParentSessionID == "" || f.AtSequence < 0:
		return "it names no parent and fork point"
	case f.FromSequence < 1 || f.ThroughSequence >= f.AtSequence && len(f.Tail) > 0 || f.ThroughSequence > f.AtSequence:
		return "its shared range " + strconv.FormatInt(f.FromSequence, 10) + ".." + strconv.FormatInt(f.ThroughSequence, 10) +
			" does not fit fork point " + strconv.FormatInt(f.AtSequence, 10)
	}
	want := f.ThroughSequence + 1
	for _, m := range f.Tail {
		if m.Sequence != want {
			return "its copied messages skip sequence " + strconv.FormatInt(want, 10)
		}
		want++
	}
	if want != f.AtSequence+1 {
		return "its copied messages end at " + strconv.FormatInt(want-1, 10) + ", not at the fork point " + strconv.FormatInt(f.AtSequence, 10)
	}
	if sm := f.Summary; sm != nil && (sm.LastSequence > f.AtSequence || sm.LastSequence < sm.FirstSequence) {
		return "its summary of messages " + strconv.FormatInt(sm.FirstSequence, 10) + ".." + strconv.FormatInt(sm.LastSequence, 10) +
			" does not end at or before the fork point"
	}
	s.ForkedFrom = &wire.ForkOrigin{ParentSessionID: f.ParentSessionID, AtSequence: f.AtSequence}
	s.NextSequence = f.AtSequence + 1
	s.RolledThrough = f.ThroughSequence
	if f.FromSequence > 1 {
		s.DeletedBefore = f.FromSequence
	}
	s.Window = make([]Entry, 0, len(f.Tail))
	for _, m := range f.Tail {
		s.Window = append(s.Window, Entry{
			Message: contract.Message{
				Sequence: m.Sequence, Role: contract.Role(m.Role), Text: m.Text, ToolCallID: m.ToolCallID,
				ToolName: m.ToolName, TurnID: m.TurnID, ToolStatus: contract.ToolCallStatus(m.ToolStatus),
			},
			Bytes: m.Bytes, Truncated: m.Truncated,
		})
	}
	if sm := f.Summary; sm != nil {
		s.Summary = &Summary{
			Generation: sm.Generation, FirstSequence: sm.FirstSequence, LastSequence: sm.LastSequence,
			Text: sm.Text, TextRef: sm.TextRef, CreatedAtMs: sm.CreatedAtMs,
		}
	}
	return ""
}
