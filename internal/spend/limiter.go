package spend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Ledger is the part of the message store that sums spend across
// sessions.
type Ledger interface {
	Charge(ctx context.Context, c transcript.Charge) (bool, error)
	Spent(ctx context.Context, scope transcript.SpendScope, since time.Time) (transcript.Spend, error)
}

// Policy is what the config says about one agent's spend, for a session
// started by one API token ("" for none).
type Policy struct {
	Agent string
	// Limits are the agent's budgets; TokenLimits the token's.
	Limits, TokenLimits Limits
	Prices              Prices
	Hook                *Hook
}

// Active reports whether p checks or prices anything.
func (p *Policy) Active() bool {
	return p != nil && (p.Limits != Limits{} || p.TokenLimits != Limits{} || len(p.Prices) > 0 || p.Hook != nil)
}

// Call is one model call about to be made.
type Call struct {
	// Key names the call (workflow run, activity ID, attempt) for the
	// ledger and the hook: charging it twice counts it once.
	Key               string
	Token             string
	SessionID, TurnID string
	Session, Turn     wire.Spend
	Now               time.Time
	SummaryCall       bool
	// Parent is set for a sub-agent's call: the budget above it.
	Parent *ParentCall
}

// ParentCall is the budget a sub-agent's call counts against besides its
// own agent's: the session budgets of the agent above it, with what the
// whole tree of sessions used.
type ParentCall struct {
	Agent               string
	Limits, TokenLimits Limits
	Used                wire.Spend
}

// Check returns the refusal of the first parent budget that stops the
// call, or nil. Its scopes are parent_session and parent_token_session.
func (p *ParentCall) Check() *wire.SpendRefusal {
	for _, b := range []struct {
		scope string
		b     *Budget
	}{{"parent_session", p.Limits.Session}, {"parent_token_session", p.TokenLimits.Session}} {
		if r := Check(b.scope, b.b, fromClient(p.Used)); r != nil {
			return r.client()
		}
	}
	return nil
}

// Limiter checks and charges model calls.
type Limiter struct {
	// Ledger sums the per-day budgets; nil refuses a policy with one.
	Ledger Ledger
	Client *http.Client
	Logger *slog.Logger
}

// ErrNoLedger is returned for a per-day budget without a message store.
var ErrNoLedger = errors.New("spend: a per_day spend limit needs the message store")

// Check returns the refusal of the first budget that stops c, or nil. An
// error (the ledger or the hook cannot answer) fails the check closed:
// the Step fails, and its retries ask again.
func (l *Limiter) Check(ctx context.Context, p *Policy, c *Call) (*wire.SpendRefusal, error) {
	if !p.Active() {
		return nil, nil
	}
	for _, b := range []struct {
		scope string
		b     *Budget
		used  wire.Spend
	}{
		{"session", p.Limits.Session, c.Session}, {"turn", p.Limits.Turn, c.Turn},
		{"token_session", p.TokenLimits.Session, c.Session}, {"token_turn", p.TokenLimits.Turn, c.Turn},
	} {
		if r := Check(b.scope, b.b, fromClient(b.used)); r != nil {
			return r.client(), nil
		}
	}
	for _, d := range []struct {
		scope string
		b     *Budget
		sc    transcript.SpendScope
	}{
		{"day", p.Limits.Day, transcript.SpendScope{Agent: p.Agent}},
		{"token_day", p.TokenLimits.Day, transcript.SpendScope{Token: c.Token}},
	} {
		if d.b == nil || (d.scope == "token_day" && c.Token == "") {
			continue
		}
		used, err := l.spent(ctx, d.sc, c.Now)
		if err != nil {
			return nil, err
		}
		if r := Check(d.scope, d.b, used); r != nil {
			return r.client(), nil
		}
	}
	if p.Hook != nil {
		return p.Hook.check(ctx, l.client(), p, c)
	}
	return nil, nil
}

func (l *Limiter) spent(ctx context.Context, scope transcript.SpendScope, now time.Time) (transcript.Spend, error) {
	if l.Ledger == nil {
		return transcript.Spend{}, ErrNoLedger
	}
	sp, err := l.Ledger.Spent(ctx, scope, now.Add(-24*time.Hour))
	if err != nil {
		return transcript.Spend{}, fmt.Errorf("spend: reading the per-day spend: %w", err)
	}
	return sp, nil
}

// Charge records what c used: in the ledger (when a per-day budget needs
// it), and to the hook. It returns the call's cost and what the budgets
// left. A ledger or hook failure here is logged, never returned: the call
// was made, and failing its Step would make it again.
func (l *Limiter) Charge(ctx context.Context, p *Policy, c *Call, used Spend) (int64, *wire.SpendLeft) {
	if !p.Active() {
		return 0, nil
	}
	if p.Limits.Day != nil || p.TokenLimits.Day != nil {
		if l.Ledger == nil {
			l.logger().Error("spend: a per_day limit needs the message store; the call is not counted", "agent", p.Agent)
		} else if _, err := l.Ledger.Charge(ctx, transcript.Charge{Key: c.Key, Agent: p.Agent, Token: c.Token, Session: c.SessionID, At: c.Now, Spend: used}); err != nil {
			l.logger().Error("spend: charging the ledger failed; the call is not counted in the per-day sums", "agent", p.Agent, "session_id", c.SessionID, "error", err)
		}
	}
	if p.Hook != nil {
		if err := p.Hook.report(ctx, l.client(), p, c, used); err != nil {
			l.logger().Error("spend: the spend limit hook was not told about a model call", "agent", p.Agent, "session_id", c.SessionID, "error", err)
		}
	}
	session := fromClient(c.Session).Add(used)
	left := &wire.SpendLeft{AsOf: c.Now.UTC().Format(time.RFC3339)}
	left.Session = toClient(Left(p.Limits.Session, session))
	left.TokenSession = toClient(Left(p.TokenLimits.Session, session))
	if p.Limits.Day != nil && l.Ledger != nil {
		if day, err := l.spent(ctx, transcript.SpendScope{Agent: p.Agent}, c.Now); err == nil {
			left.Day = toClient(Left(p.Limits.Day, day))
		}
	}
	if p.TokenLimits.Day != nil && c.Token != "" && l.Ledger != nil {
		if day, err := l.spent(ctx, transcript.SpendScope{Token: c.Token}, c.Now); err == nil {
			left.TokenDay = toClient(Left(p.TokenLimits.Day, day))
		}
	}
	if left.Session == nil && left.TokenSession == nil && left.Day == nil && left.TokenDay == nil {
		left = nil
	}
	return used.CostMicros, left
}

func (l *Limiter) client() *http.Client {
	if l.Client != nil {
		return l.Client
	}
	return http.DefaultClient
}

func (l *Limiter) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (r *Refusal) client() *wire.SpendRefusal {
	return &wire.SpendRefusal{Scope: r.Scope, Counter: r.Counter, Used: r.Used, Limit: r.Limit, Reason: r.Reason}
}

func fromClient(s wire.Spend) Spend {
	return Spend{ModelCalls: s.ModelCalls, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CostMicros: s.CostMicros}
}

func toClient(b *Budget) *wire.Spend {
	if b == nil {
		return nil
	}
	return &wire.Spend{ModelCalls: b.ModelCalls, InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, CostMicros: b.CostMicros}
}

// Hook is an application's spend limit behind HTTP.
type Hook struct {
	URL     string
	Timeout time.Duration
	// Headers go with each request; their values are secrets.
	Headers map[string]string
}

// HookRequest is the body the worker POSTs to the hook.
type HookRequest struct {
	// Phase is "check" before a model call and "report" after it.
	Phase     string `json:"phase"`
	Key       string `json:"key"`
	Agent     string `json:"agent"`
	APIToken  string `json:"api_token,omitempty"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Summary is set for compaction's summary calls.
	Summary bool `json:"summary_call,omitempty"`
	// Session and Turn are what the session and the turn used before the
	// call; Used (report only) is what the call used.
	Session wire.Spend  `json:"session"`
	Turn    wire.Spend  `json:"turn"`
	Used    *wire.Spend `json:"used,omitempty"`
}

// HookResponse is the hook's answer to a check.
type HookResponse struct {
	Allow  *bool  `json:"allow"`
	Reason string `json:"reason"`
}

// ErrHook wraps every failure to get an answer from the hook.
var ErrHook = errors.New("spend limit hook")

func (h *Hook) check(ctx context.Context, hc *http.Client, p *Policy, c *Call) (*wire.SpendRefusal, error) {
	body, err := h.post(ctx, hc, h.request("check", p, c, nil))
	if err != nil {
		return nil, err
	}
	var resp HookResponse
	if err := json.Unmarshal(body, &resp); err != nil || resp.Allow == nil {
		return nil, fmt.Errorf("%w: the answer to a check is not {\"allow\": true|false, \"reason\": ...}", ErrHook)
	}
	if *resp.Allow {
		return nil, nil
	}
	reason := resp.Reason
	if reason == "" {
		reason = "the application's spend limit refused the call"
	}
	if len(reason) > 500 {
		reason = reason[:500]
	}
	return &wire.SpendRefusal{Scope: "hook", Reason: ErrorPrefix + reason}, nil
}

func (h *Hook) report(ctx context.Context, hc *http.Client, p *Policy, c *Call, used Spend) error {
	u := wire.Spend{ModelCalls: used.ModelCalls, InputTokens: used.InputTokens, OutputTokens: used.OutputTokens, CostMicros: used.CostMicros}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if _, err = h.post(ctx, hc, h.request("report", p, c, &u)); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

func (h *Hook) request(phase string, p *Policy, c *Call, used *wire.Spend) HookRequest {
	return HookRequest{Phase: phase, Key: c.Key, Agent: p.Agent, APIToken: c.Token, SessionID: c.SessionID, TurnID: c.TurnID,
		Summary: c.SummaryCall, Session: c.Session, Turn: c.Turn, Used: used}
}

// post sends one request and returns the body of a 2xx answer. Errors
// name the hook's host and status, never its headers.
func (h *Hook) post(ctx context.Context, hc *http.Client, req HookRequest) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHook, err)
	}
	r.Header.Set("Content-Type", "application/json")
	for k, v := range h.Headers {
		r.Header.Set(k, v)
	}
	resp, err := hc.Do(r)
	if err != nil {
		// The url.Error names the URL, which the operator configured and
		// may see; it holds no header.
		return nil, fmt.Errorf("%w is unreachable (%s): %v", ErrHook, r.URL.Host, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%w (%s): reading the answer: %v", ErrHook, r.URL.Host, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w (%s) answered %s", ErrHook, r.URL.Host, resp.Status)
	}
	return body, nil
}
