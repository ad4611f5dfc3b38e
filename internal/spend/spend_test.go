package spend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestCost(t *testing.T) {
	prices := Prices{
		"gpt-5-mini":  {Input: 0.25, CachedInput: 0.025, Output: 2},
		"claude-opus": {Input: 15, Output: 75},
	}
	u := pluginapi.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 10_000, ModelCalls: 1}
	tests := []struct {
		name   string
		prices Prices
		models []string
		want   int64
		priced bool
	}{
		// 600k x 0.25 + 400k x 0.025 + 10k x 2 = 150000 + 10000 + 20000
		{"by the name asked for", prices, []string{"gpt-5-mini", "gpt-5-mini-2026-01-01"}, 180_000, true},
		{"by the name reported", prices, []string{"", "gpt-5-mini"}, 180_000, true},
		// No cached price: cached tokens count at the input price.
		{"without a cached price", prices, []string{"claude-opus"}, 15_750_000, true},
		{"by the default", Prices{"default": {Input: 1, Output: 1}}, []string{"unknown"}, 1_010_000, true},
		// Unknown and no default: the highest prices (15, 0.025 cached, 75).
		{"unknown", prices, []string{"unknown"}, 600_000*15 + 400_000*0.025 + 10_000*75, false},
		{"no prices", nil, []string{"gpt-5-mini"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, priced := tt.prices.Cost(tt.models, u)
			if got != tt.want || priced != tt.priced {
				t.Errorf("Cost = %d, %v; want %d, %v", got, priced, tt.want, tt.priced)
			}
		})
	}
	if got, _ := prices.Cost([]string{"gpt-5-mini"}, pluginapi.Usage{InputTokens: 1}); got != 1 {
		t.Errorf("a fraction of a micro-dollar = %d, want 1 (rounded up)", got)
	}
}

func TestCheckAndLeft(t *testing.T) {
	b := &Budget{ModelCalls: 3, CostMicros: 2_000_000}
	if r := Check("session", b, Spend{ModelCalls: 2, CostMicros: 1_999_999}); r != nil {
		t.Errorf("under the budget: %+v", r)
	}
	r := Check("session", b, Spend{ModelCalls: 2, CostMicros: 2_000_100})
	if r == nil || r.Counter != "cost_usd" || r.Used != 2_000_100 || r.Limit != 2_000_000 ||
		r.Reason != "spend limit reached: this session used $2.00 of its $2.00" {
		t.Errorf("over the cost: %+v", r)
	}
	r = Check("token_day", b, Spend{ModelCalls: 3})
	if r == nil || r.Reason != "spend limit reached: the API token's sessions in the last 24 hours used 3 model calls of its 3 model calls" {
		t.Errorf("at the call count: %+v", r)
	}
	if r := Check("turn", nil, Spend{ModelCalls: 1000}); r != nil {
		t.Error("no budget refused")
	}
	left := Left(b, Spend{ModelCalls: 1, CostMicros: 2_500_000})
	if *left != (Budget{ModelCalls: 2, InputTokens: -1, OutputTokens: -1, CostMicros: 0}) {
		t.Errorf("Left = %+v", *left)
	}
}

func openLedger(t *testing.T) transcript.Store {
	t.Helper()
	st, err := transcript.Open(t.Context(), transcript.Options{Driver: transcript.DriverSQLite, Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestLimiterPerDay: the per-day budgets count every session of the agent
// and of the token through the ledger; a charge counts once per key.
func TestLimiterPerDay(t *testing.T) {
	ctx := context.Background()
	l := &Limiter{Ledger: openLedger(t)}
	p := &Policy{Agent: "support", Limits: Limits{Day: &Budget{ModelCalls: 3}}, TokenLimits: Limits{Day: &Budget{OutputTokens: 100}}}
	call := func(session, key string) *Call {
		return &Call{Key: key, Token: "app", SessionID: session, TurnID: "t1", Now: time.Now()}
	}
	one := Spend{ModelCalls: 1, OutputTokens: 40}
	for i, key := range []string{"r1/a/1", "r1/a/1", "r2/a/1"} { // the second is a retried write
		if r, err := l.Check(ctx, p, call("s1", key)); err != nil || r != nil {
			t.Fatalf("call %d refused: %+v %v", i, r, err)
		}
		l.Charge(ctx, p, call("s1", key), one)
	}
	// 2 calls and 80 output tokens so far; a third call of another session
	// is allowed and takes the token past its 100 output tokens.
	if r, err := l.Check(ctx, p, call("s2", "r3/a/1")); err != nil || r != nil {
		t.Fatalf("third call refused: %+v %v", r, err)
	}
	_, left := l.Charge(ctx, p, call("s2", "r3/a/1"), one)
	if left == nil || left.Day == nil || left.Day.ModelCalls != 0 || left.TokenDay == nil || left.TokenDay.OutputTokens != 0 {
		t.Errorf("left = %+v", left)
	}
	r, err := l.Check(ctx, p, call("s3", "r4/a/1"))
	if err != nil || r == nil || r.Scope != "day" || r.Counter != "model_calls" {
		t.Fatalf("after 3 calls: %+v %v", r, err)
	}
	// Another token's sessions are not held by the first token's budget,
	// but still by the agent's.
	other := call("s4", "r5/a/1")
	other.Token = "other"
	if r, _ := l.Check(ctx, p, other); r == nil || r.Scope != "day" {
		t.Errorf("the agent's day budget does not hold another token: %+v", r)
	}
	// No ledger: a per-day budget cannot be checked, and fails closed.
	if _, err := (&Limiter{}).Check(ctx, p, call("s1", "k")); !errors.Is(err, ErrNoLedger) {
		t.Errorf("no ledger: %v", err)
	}
}

func TestLimiterSessionAndTurn(t *testing.T) {
	l := &Limiter{}
	p := &Policy{Agent: "a", Limits: Limits{Session: &Budget{InputTokens: 1000}, Turn: &Budget{ModelCalls: 2}}, TokenLimits: Limits{Session: &Budget{CostMicros: 50}}}
	c := &Call{Session: wire.Spend{InputTokens: 999, CostMicros: 49}, Turn: wire.Spend{ModelCalls: 1}}
	if r, err := l.Check(t.Context(), p, c); r != nil || err != nil {
		t.Fatalf("refused: %+v %v", r, err)
	}
	c.Turn.ModelCalls = 2
	if r, _ := l.Check(t.Context(), p, c); r == nil || r.Scope != "turn" {
		t.Errorf("turn budget: %+v", r)
	}
	c.Turn.ModelCalls, c.Session.CostMicros = 0, 50
	if r, _ := l.Check(t.Context(), p, c); r == nil || r.Scope != "token_session" || r.Counter != "cost_usd" {
		t.Errorf("token's session budget: %+v", r)
	}
	if r, err := l.Check(t.Context(), &Policy{Agent: "a"}, c); r != nil || err != nil {
		t.Errorf("an inactive policy checked: %+v %v", r, err)
	}
}

// TestHook: the hook is asked before and told after, with the headers;
// a refusal carries its reason; a hook that is down, slow, failing or
// answering nonsense fails the check closed with an error that names it.
func TestHook(t *testing.T) {
	var mu sync.Mutex
	var got []HookRequest
	var auth []string
	answer := `{"allow": true}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req HookRequest
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("hook body: %v", err)
		}
		mu.Lock()
		got, auth = append(got, req), append(auth, r.Header.Get("Authorization"))
		a := answer
		mu.Unlock()
		switch a {
		case "500":
			w.WriteHeader(500)
		case "slow":
			time.Sleep(300 * time.Millisecond)
		default:
			_, _ = io.WriteString(w, a)
		}
	}))
	defer srv.Close()
	ctx := t.Context()
	l := &Limiter{}
	p := &Policy{Agent: "support", Hook: &Hook{URL: srv.URL, Timeout: 100 * time.Millisecond, Headers: map[string]string{"Authorization": "Bearer hook-secret-123"}}}
	c := &Call{Key: "run/1/1", Token: "app", SessionID: "s1", TurnID: "t1", Session: wire.Spend{ModelCalls: 4}, Now: time.Now()}
	if r, err := l.Check(ctx, p, c); r != nil || err != nil {
		t.Fatalf("allowed call: %+v %v", r, err)
	}
	l.Charge(ctx, p, c, Spend{ModelCalls: 1, InputTokens: 10})
	mu.Lock()
	if len(got) != 2 || got[0].Phase != "check" || got[1].Phase != "report" || got[1].Used == nil || got[1].Used.InputTokens != 10 ||
		got[0].Key != "run/1/1" || got[0].Session.ModelCalls != 4 || got[0].APIToken != "app" || auth[0] != "Bearer hook-secret-123" {
		t.Errorf("hook saw %+v with %q", got, auth)
	}
	mu.Unlock()

	for _, tt := range []struct{ answer, want string }{
		{`{"allow": false, "reason": "account 7 is out of credit"}`, ""},
		{"500", "answered 500 Internal Server Error"},
		{"slow", "is unreachable"},
		{`{"ok": 1}`, "is not {"},
	} {
		mu.Lock()
		answer = tt.answer
		mu.Unlock()
		r, err := l.Check(ctx, p, c)
		if tt.want == "" {
			if err != nil || r == nil || r.Scope != "hook" || r.Reason != "spend limit reached: account 7 is out of credit" {
				t.Errorf("refusal: %+v %v", r, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrHook) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hook-secret") {
			t.Errorf("answer %s: err = %v, want an ErrHook with %q", tt.answer, err, tt.want)
		}
	}
	srv.Close()
	if _, err := l.Check(ctx, p, c); err == nil || !strings.Contains(err.Error(), "spend limit hook is unreachable") {
		t.Errorf("hook down: %v", err)
	}
}
