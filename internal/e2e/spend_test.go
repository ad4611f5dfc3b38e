package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
)

// spendConfig is the test config with spend limits on the test agent (and
// a price table), and the HTTP API with two tokens, one with its own
// per-day budget.
func spendConfig(t *testing.T, limits string) (string, string) {
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", limits+"\n    run_model_limit:", 1) + fmt.Sprintf(`
prices:
  default: {input: 2, output: 10}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
      - {name: acme, token: %s, session_prefix: "acme-", spend_limits: {per_day: {model_calls: 2}}}
`, port, tokenAll, tokenAcme)
	return cfg, fmt.Sprintf("http://127.0.0.1:%d", port)
}

// modelCalls counts the model calls the test runner made.
func modelCalls(t *testing.T, s *agenttest.Stack) int {
	_, calls, _ := maxInput(t, s)
	return calls
}

func idleAfter(turns int) func(wire.Snapshot) bool {
	return func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && s.State.ActiveTurnID == "" && s.State.TurnCount == turns
	}
}

// TestSpendLimitReachedMidSession: a session with a budget of 3 model calls
// answers three turns; the fourth fails before any model call with the
// limit in last_turn_error and a spend_limit_reached event, its message is
// kept, and the next turn fails the same way. The snapshot shows the cost
// (priced by the table) and what the budget left.
func TestSpendLimitReachedMidSession(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	cfg, base := spendConfig(t, "    spend_limits: {per_session: {model_calls: 3}}")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "m1")
	s.WaitForSnapshot("turn 1", id, idleAfter(1))
	for i := 2; i <= 3; i++ {
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, fmt.Sprint("m", i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		s.WaitForSnapshot(fmt.Sprint("turn ", i), id, idleAfter(i))
	}
	snap, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	sp := snap.Spend
	if snap.State.LastTurnError != "" || sp == nil || sp.CostMicros <= 0 || sp.Left == nil || sp.Left.Session == nil || sp.Left.Session.ModelCalls != 0 || sp.Left.Session.InputTokens != -1 {
		t.Fatalf("after 3 turns: error %q, spend %+v", snap.State.LastTurnError, sp)
	}
	// The scripted model's tokens at $2 and $10 per million.
	if want := (snap.Usage.InputTokens*2 + snap.Usage.OutputTokens*10); sp.CostMicros != want {
		t.Errorf("cost = %d micro-dollars, want %d for %+v", sp.CostMicros, want, snap.Usage)
	}
	for i := 4; i <= 5; i++ {
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, fmt.Sprint("m", i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		snap = s.WaitForSnapshot(fmt.Sprint("turn ", i), id, idleAfter(i))
		const want = "spend limit reached: this session used 3 model calls of its 3 model calls"
		if snap.State.LastTurnError != want {
			t.Errorf("turn %d: last_turn_error = %q, want %q", i, snap.State.LastTurnError, want)
		}
		if snap.Spend == nil || snap.Spend.Refused == nil || snap.Spend.Refused.Scope != "session" || snap.Spend.Refused.Counter != "model_calls" {
			t.Errorf("turn %d: spend = %+v", i, snap.Spend)
		}
	}
	if n := modelCalls(t, s); n != 3 {
		t.Errorf("the runner made %d model calls, want 3", n)
	}
	var users []string
	for _, m := range snap.Messages {
		if m.Role == "user" {
			users = append(users, m.Text)
		}
	}
	if strings.Join(users, ",") != "m1,m2,m3,m4,m5" {
		t.Errorf("user messages = %q: every message is kept", users)
	}
	failed := 0
	events := sessionEvents(t, apiClient(t, base, tokenAll), id, func(e httpclient.Event) bool {
		if e.Type == wire.EventTurnFailed {
			failed++
		}
		return failed == 2
	})
	reached := findEvents(t, events, wire.EventSpendLimitReached, nil)
	if len(reached) != 2 {
		t.Fatalf("%d spend_limit_reached events, want 2 (turns 4 and 5)", len(reached))
	}
	p := eventPayload(t, reached[0])
	if p["scope"] != "session" || p["counter"] != "model_calls" || p["used"] != float64(3) || p["limit"] != float64(3) || !strings.HasPrefix(fmt.Sprint(p["reason"]), "spend limit reached: ") {
		t.Errorf("spend_limit_reached payload = %v", p)
	}
}

// TestSpendPerDayAcrossSessions: the acme token's per-day budget of 2
// model calls counts every session it started (in the message store's
// ledger); its third call, in another session, is refused, while sessions
// of another token go on.
func TestSpendPerDayAcrossSessions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	cfg, base := spendConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	startAs := func(token, id string) {
		t.Helper()
		if _, err := apiClient(t, base, token).StartSession(ctx(t), httpclient.StartRequest{Agent: "test", SessionID: id, InitialMessage: "hi"}); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	startAs(tokenAcme, "acme-1")
	s.WaitForSnapshot("acme-1 turn 1", "acme-1", idleAfter(1))
	if ok, err := s.Sessions.SendUserMessage(ctx(t), "acme-1", "again"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s.WaitForSnapshot("acme-1 turn 2", "acme-1", idleAfter(2))
	startAs(tokenAcme, "acme-2")
	snap := s.WaitForSnapshot("acme-2 turn 1", "acme-2", idleAfter(1))
	const want = "spend limit reached: the API token's sessions in the last 24 hours used 2 model calls of its 2 model calls"
	if snap.State.LastTurnError != want {
		t.Errorf("acme-2: last_turn_error = %q, want %q", snap.State.LastTurnError, want)
	}
	startAs(tokenAll, "other-1")
	if snap := s.WaitForSnapshot("other-1 turn 1", "other-1", idleAfter(1)); snap.State.LastTurnError != "" {
		t.Errorf("another token's session: %q", snap.State.LastTurnError)
	}
	if n := modelCalls(t, s); n != 3 {
		t.Errorf("the runner made %d model calls, want 3", n)
	}
}

// TestSpendLimitHookDown: an agent's spend limit hook that cannot be
// reached fails each turn closed, after RunModel's attempts, with an error
// that names the hook; no model call is made.
func TestSpendLimitHookDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	dead := agenttest.FreePort(t)
	cfg, _ := spendConfig(t, fmt.Sprintf("    spend_limit: {url: \"http://127.0.0.1:%d/spend\", timeout: 1s, headers: {Authorization: \"Bearer hook-secret-0123\"}}", dead))
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "hello")
	snap := s.WaitForSnapshot("the failed turn", id, idleAfter(1))
	if e := snap.State.LastTurnError; !strings.Contains(e, "spend limit hook is unreachable (127.0.0.1:") || strings.Contains(e, "hook-secret") {
		t.Errorf("last_turn_error = %q", e)
	}
	if n := modelCalls(t, s); n != 0 {
		t.Errorf("the runner made %d model calls, want 0", n)
	}
}
