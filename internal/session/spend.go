package session

import (
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Spend limits. The Steps that call the model (RunModel, CompactContext)
// check the budgets the worker's config sets before the call, with the
// session's and the turn's counters from their input, and price the call
// after it. The session keeps the counters and records what the Steps
// said: a refusal ends the turn with spend_limit_reached, and the next
// turn's first Step checks again, so new turns fail until the budget
// allows.

// sessionSpend is what the session's model calls used.
// Its sub-agents' spend counts too.
func (s *State) sessionSpend() wire.Spend {
	own := wire.Spend{ModelCalls: s.Usage.ModelCalls, InputTokens: s.Usage.InputTokens, OutputTokens: s.Usage.OutputTokens, CostMicros: s.CostMicros}
	return addSpend(own, s.SubAgentSpend)
}

// chargeSpend adds a model call's usage and cost to the turn's counters
// (recordUsage adds the usage to the session's) and keeps what the Step
// said its budgets left.
func (s *State) chargeSpend(u contract.Usage, sp *StepSpend) {
	var cost int64
	if sp != nil {
		cost = max(sp.CostMicros, 0)
		if sp.Left != nil {
			s.SpendLeft = sp.Left
		}
	}
	s.CostMicros += cost
	s.SpendRefused = nil
	s.TurnSpend = wire.Spend{
		ModelCalls: s.TurnSpend.ModelCalls + u.ModelCalls, InputTokens: s.TurnSpend.InputTokens + u.InputTokens,
		OutputTokens: s.TurnSpend.OutputTokens + u.OutputTokens, CostMicros: s.TurnSpend.CostMicros + cost,
	}
}

// spendRefused ends the turn that a spend limit stopped before its model
// call, after committing the Step's store work (stored, nil for none).
func (s *State) spendRefused(stored *StoreResult, r *wire.SpendRefusal, attempt int) []Command {
	if reason := s.checkStored(stored); reason != "" {
		return s.failTurn(reason)
	}
	if stored != nil {
		s.store(nil, stored)
	}
	ref := *r
	if !strings.HasPrefix(ref.Reason, wire.SpendLimitErrorPrefix) {
		ref.Reason = wire.SpendLimitErrorPrefix + ref.Reason
	}
	s.SpendRefused = &ref
	cmds := []Command{Emit{Event: newEvent(wire.EventSpendLimitReached, s.ActiveTurnID, attempt, wire.SpendLimitReachedPayload(ref))}}
	return append(cmds, s.failTurn(ref.Reason)...)
}

// snapshotSpend renders the session's spend for get_agent_snapshot: nil
// until a Step priced a call or a limit applied.
func (s *State) snapshotSpend() *wire.SpendStatus {
	if s.CostMicros == 0 && s.SpendLeft == nil && s.SpendRefused == nil && s.SubAgentSpend == (wire.Spend{}) {
		return nil
	}
	st := &wire.SpendStatus{CostMicros: s.CostMicros, Left: s.SpendLeft, Refused: s.SpendRefused}
	if s.SubAgentSpend != (wire.Spend{}) {
		sub := s.SubAgentSpend
		st.SubAgents = &sub
	}
	return st
}
