package transcript

import (
	"fmt"
	"sync/atomic"
	"time"
)

// The spend ledger: one row per model call, so that budgets across
// sessions (per agent and per API token, over a rolling day) hold on every
// worker that shares the store. A session's own counters live in its
// workflow state; only the cross-session sums come from here.

// Charge is the spend of one model call.
type Charge struct {
	// Key names the model call: the Step's workflow run, activity ID and
	// attempt. Charging a key again is a no-op, so a retried write after a
	// lost answer never counts twice.
	Key string
	// Agent and Token are the scopes the charge counts in; Token is the
	// API token that started the session ("" for none).
	Agent, Token string
	Session      string
	At           time.Time
	Spend        Spend
}

// Spend counts model calls, tokens and cost.
type Spend struct {
	ModelCalls   int64 `json:"model_calls"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CostMicros is the cost in millionths of a US dollar.
	CostMicros int64 `json:"cost_micros"`
}

// Add returns the sum of s and t.
func (s Spend) Add(t Spend) Spend {
	return Spend{s.ModelCalls + t.ModelCalls, s.InputTokens + t.InputTokens, s.OutputTokens + t.OutputTokens, s.CostMicros + t.CostMicros}
}

// SpendScope names what a sum covers: the charges of one agent, or of one
// API token. Exactly one is set.
type SpendScope struct {
	Agent, Token string
}

func (s SpendScope) check() error {
	if (s.Agent == "") == (s.Token == "") {
		return fmt.Errorf("%w: a spend scope names exactly one of agent and token", ErrInvalid)
	}
	return nil
}

func checkCharge(c Charge) error {
	switch {
	case c.Key == "" || len(c.Key) > 512:
		return fmt.Errorf("%w: a charge's key must be 1 to 512 bytes", ErrInvalid)
	case c.Agent == "":
		return fmt.Errorf("%w: a charge names its agent", ErrInvalid)
	case c.Spend.ModelCalls < 0 || c.Spend.InputTokens < 0 || c.Spend.OutputTokens < 0 || c.Spend.CostMicros < 0:
		return fmt.Errorf("%w: a charge's counts are not negative", ErrInvalid)
	}
	return checkSession(c.Session)
}

// SpendRetention is how long the ledger keeps a charge: a rolling day's
// sums need a day; the rest is margin for clocks and late retries.
const SpendRetention = 48 * time.Hour

// pruneClock lets a store prune the ledger at most once a minute.
type pruneClock struct{ last atomic.Int64 }

// due reports whether a prune is due at now, and if so claims it.
func (p *pruneClock) due(now time.Time) bool {
	last := p.last.Load()
	return now.UnixMicro()-last >= time.Minute.Microseconds() && p.last.CompareAndSwap(last, now.UnixMicro())
}
