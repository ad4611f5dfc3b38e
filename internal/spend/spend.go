// Package spend enforces the spend limits an operator sets in the config:
// budgets of model calls, input and output tokens and cost, per session,
// per turn and per rolling day, for an agent and for the API token that
// started a session, and an application's own limit behind an HTTP hook.
//
// The RunModel and CompactContext Steps ask a Limiter before each model
// call and charge it after. A session's own counters travel in the Step's
// input (they live in the workflow state); the per-day sums come from the
// message store's ledger, which every worker shares. A refusal is an
// outcome of the Step, recorded in the session's history, never an error
// the engine retries.
package spend

import (
	"fmt"
	"math"
	"strings"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Spend is what model calls used: calls, tokens and cost in millionths of
// a US dollar.
type Spend = transcript.Spend

// Budget bounds a Spend; a zero field is no bound.
type Budget struct {
	ModelCalls   int64 `json:"model_calls,omitempty"`
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	CostMicros   int64 `json:"cost_micros,omitempty"`
}

// Limits are the budgets of one scope (an agent, or an API token).
type Limits struct {
	Session, Turn, Day *Budget
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input, CachedInput, Output float64
}

// Prices are model prices by model name; "default" prices any other model.
type Prices map[string]Price

// DefaultPrice is the key of the price of models the table does not name.
const DefaultPrice = "default"

// Cost returns what usage of a model cost, in millionths of a US dollar,
// rounded up. names are the model's names in order of preference (the
// name asked for, then the one the provider reported). Without a price for
// any of them and without a default, it counts the table's highest prices
// so that a budget is never under-counted, and priced is false.
func (p Prices) Cost(names []string, u pluginapi.Usage) (micros int64, priced bool) {
	if len(p) == 0 {
		return 0, true
	}
	price, ok := Price{}, false
	for _, n := range append(names, DefaultPrice) {
		if price, ok = p[n]; ok && n != "" {
			break
		}
	}
	if !ok {
		for _, q := range p {
			price.Input, price.CachedInput, price.Output = max(price.Input, q.Input), max(price.CachedInput, q.CachedInput), max(price.Output, q.Output)
		}
	}
	cachedPrice := price.CachedInput
	if cachedPrice == 0 {
		cachedPrice = price.Input
	}
	cached := min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	// Dollars per million tokens is millionths of a dollar per token.
	c := float64(u.InputTokens-cached)*price.Input + float64(cached)*cachedPrice + float64(max(u.OutputTokens, 0))*price.Output
	return int64(math.Ceil(c)), ok
}

// Of turns a model call's usage and cost into a Spend.
func Of(u pluginapi.Usage, costMicros int64) Spend {
	return Spend{ModelCalls: u.ModelCalls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostMicros: costMicros}
}

// Refusal says which budget stops the next model call.
type Refusal struct {
	// Scope is "session", "turn" or "day", with "token_" before it for a
	// token's budget, "parent_session" or "parent_token_session" for the
	// budget above a sub-agent, or "hook" for the external limit.
	Scope string `json:"scope"`
	// Counter is model_calls, input_tokens, output_tokens or cost_usd
	// (empty for the hook).
	Counter string `json:"counter,omitempty"`
	// Used and Limit are the counter's value and bound (cost in millionths
	// of a US dollar).
	Used  int64 `json:"used,omitempty"`
	Limit int64 `json:"limit,omitempty"`
	// Reason is the whole sentence people and the turn's error see.
	Reason string `json:"reason"`
}

// ErrorPrefix starts the last_turn_error of a turn a spend limit stopped.
const ErrorPrefix = "spend limit reached: "

var scopeText = map[string]string{
	"session": "this session", "turn": "this turn", "day": "the agent's sessions in the last 24 hours",
	"token_session": "this session (its API token's limit)", "token_turn": "this turn (its API token's limit)",
	"token_day": "the API token's sessions in the last 24 hours",
	// A sub-agent's calls count against the session above it.
	"parent_session":       "the parent session with its sub-agents",
	"parent_token_session": "the parent session with its sub-agents (its API token's limit)",
}

// Check returns the first counter of used that reached its bound in b, or
// nil. A call may start while every counter is below its bound.
func Check(scope string, b *Budget, used Spend) *Refusal {
	if b == nil {
		return nil
	}
	for _, c := range []struct {
		name        string
		used, limit int64
	}{
		{"model_calls", used.ModelCalls, b.ModelCalls},
		{"input_tokens", used.InputTokens, b.InputTokens},
		{"output_tokens", used.OutputTokens, b.OutputTokens},
		{"cost_usd", used.CostMicros, b.CostMicros},
	} {
		if c.limit > 0 && c.used >= c.limit {
			r := &Refusal{Scope: scope, Counter: c.name, Used: c.used, Limit: c.limit}
			r.Reason = fmt.Sprintf("%s%s used %s of its %s", ErrorPrefix, scopeText[scope], amount(c.name, c.used), amount(c.name, c.limit))
			return r
		}
	}
	return nil
}

// amount writes a counter's value for people.
func amount(counter string, n int64) string {
	switch counter {
	case "cost_usd":
		return fmt.Sprintf("$%.2f", float64(n)/1e6)
	default:
		return fmt.Sprintf("%d %s", n, strings.ReplaceAll(counter, "_", " "))
	}
}

// Left returns what b leaves of used, counter by counter (nil without a
// budget; a counter without a bound is -1).
func Left(b *Budget, used Spend) *Budget {
	if b == nil {
		return nil
	}
	left := func(limit, used int64) int64 {
		if limit == 0 {
			return -1
		}
		return max(limit-used, 0)
	}
	return &Budget{
		ModelCalls:   left(b.ModelCalls, used.ModelCalls),
		InputTokens:  left(b.InputTokens, used.InputTokens),
		OutputTokens: left(b.OutputTokens, used.OutputTokens),
		CostMicros:   left(b.CostMicros, used.CostMicros),
	}
}
