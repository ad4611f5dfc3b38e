package session

import (
	"strconv"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Compaction. A RunModel Step of a session with a compaction policy first
// estimates the next model input; past the policy's threshold it asks the
// runner where a summary may end and, when that is after the current
// summary, returns that cutoff instead of calling the model. The turn then
// runs CompactContext, which summarizes the messages after the current
// summary through the cutoff, and goes back to RunModel, whose input now
// starts with the summary. A second estimate that is still high finds no
// new cutoff, so the two cannot loop.

// transcriptFrom is the first message a model call sees: after the summary
// and after what retention deleted.
func (s *State) transcriptFrom() int64 {
	from := max(s.DeletedBefore, 1)
	if s.Summary != nil {
		from = max(from, s.Summary.LastSequence+1)
	}
	return from
}

// compact applies a RunModel Step that stopped for compaction: it commits
// the Step's store work and starts CompactContext.
func (s *State) compact(out ModelOutcome) []Command {
	if reason := s.checkStored(out.Stored); reason != "" {
		return s.failTurn(reason)
	}
	s.store(nil, out.Stored)
	through := out.CompactThrough
	switch {
	case s.Options.Compaction == nil:
		return s.failTurn("the RunModel step asked for a compaction in a session without a compaction policy")
	case through < s.transcriptFrom() || through >= s.NextSequence:
		return s.failTurn("the runner chose compaction cutoff " + strconv.FormatInt(through, 10) +
			"; it must be a stored message after the current summary (" + strconv.FormatInt(s.transcriptFrom(), 10) +
			" to " + strconv.FormatInt(s.NextSequence-1, 10) + ")")
	}
	s.Phase = phaseCompacting
	s.Status = wire.StatusCompactingContext
	s.CompactingThrough = through
	return []Command{
		Emit{Event: newEvent(wire.EventCompactionStarted, s.ActiveTurnID, out.Attempt, wire.CompactionStartedPayload{ThroughSequence: through})},
		s.compactContext(),
	}
}

// compactContext is the CompactContext Step of the running compaction.
func (s *State) compactContext() CompactContext {
	return CompactContext{Input: CompactInput{Turn: s.turnInput(), Through: s.CompactingThrough}, Limits: s.recoveryBound(s.Options.RunModel)}
}

// compacting is the phase of CompactContext.
func (s *State) compacting(in Input) Result {
	switch in := in.(type) {
	case ContextCompacted:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		s.countRetries(in.Outcome.Attempt)
		if sp := in.Outcome.Spend; sp != nil && sp.Refused != nil {
			s.CompactingThrough = 0
			s.Status = wire.StatusRunningModel // recording the failure
			return applied(s.spendRefused(nil, sp.Refused, in.Outcome.Attempt))
		}
		return applied(s.contextCompacted(in.Outcome, in.NowMs))
	case CompactionFailed:
		if in.TurnID != s.ActiveTurnID {
			return Result{}
		}
		s.CompactingThrough = 0
		s.Status = wire.StatusRunningModel // recording the failure
		return applied(s.failTurn(s.stepFailedReason("CompactContext", s.Options.RunModel, in.Attempt, in.Stop, in.Reason)))
	}
	return Result{}
}

// contextCompacted records the new summary and its call's usage, and goes
// back to the model call.
func (s *State) contextCompacted(out CompactOutcome, nowMs int64) []Command {
	gen := 1
	if s.Summary != nil {
		gen = s.Summary.Generation + 1
	}
	through := s.CompactingThrough
	s.Summary = &Summary{Generation: gen, FirstSequence: 1, LastSequence: through, Text: preview(out.Text), TextRef: out.TextRef, CreatedAtMs: nowMs}
	s.CompactingThrough = 0
	cmds := s.recordUsage(out.Usage, out.Attempt)
	s.chargeSpend(out.Usage, out.Spend)
	cmds = append(cmds, Emit{Event: newEvent(wire.EventCompactionFinished, s.ActiveTurnID, out.Attempt, wire.CompactionFinishedPayload{Generation: gen, ThroughSequence: through})})
	return append(cmds, s.toModel()...)
}

// snapshotSummary renders the summary for get_agent_snapshot.
func (s *State) snapshotSummary() *wire.ContextSummary {
	if s.Summary == nil {
		return nil
	}
	return &wire.ContextSummary{
		Generation: s.Summary.Generation, FirstSequence: s.Summary.FirstSequence, LastSequence: s.Summary.LastSequence,
		Text: s.Summary.Text, TextTruncated: s.Summary.TextRef != "", CreatedAt: formatDeadline(s.Summary.CreatedAtMs),
	}
}
