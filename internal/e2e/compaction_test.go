package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// compactionWindow is the context window of the compaction tests' agent,
// in tokens (3 bytes each): about 15 turns of 2 KiB messages.
const compactionWindow = 20000

// compactionConfig is the test config with a compaction policy.
func compactionConfig(plugin string) string {
	return strings.Replace(testConfig(plugin), "    run_model_limit:",
		fmt.Sprintf("    compaction: {context_window_tokens: %d, trigger_ratio: 0.85, keep_ratio: 0.3}\n    run_model_limit:", compactionWindow), 1)
}

// maxInput returns the largest model input the test runner saw, in tokens,
// and how many summary calls it made.
func maxInput(t *testing.T, s *agenttest.Stack) (largest int64, calls, summaries int) {
	t.Helper()
	recs, err := s.Log().Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		switch r.Kind {
		case "input":
			n, _ := strconv.ParseInt(r.Detail, 10, 64)
			largest, calls = max(largest, n), calls+1
		case "summary":
			summaries++
		}
	}
	return largest, calls, summaries
}

// compactionTurns is how many turns TestCompactionKeepsTheInputUnderTheWindow
// runs: 200 in make test, DEX_COMPACTION_TURNS (2000 in make soak).
func compactionTurns(t *testing.T) int {
	n := 200
	if v := os.Getenv("DEX_COMPACTION_TURNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 20 {
			t.Fatalf("DEX_COMPACTION_TURNS=%q: want a number of turns >= 20", v)
		}
	}
	return n
}

// TestCompactionKeepsTheInputUnderTheWindow runs a long session of 2 KiB
// messages with a 20,000-token context window: the session compacts again
// and again, every model call's input (the summary calls' too) stays under
// the window, the model still answers each message, and the snapshot shows
// the latest summary.
func TestCompactionKeepsTheInputUnderTheWindow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	n := compactionTurns(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(t, compactionConfig(plugin))
	l := startLongSession(t, s)
	for l.turns < n {
		l.turn()
		if l.turns%100 == 0 {
			largest, calls, summaries := maxInput(t, s)
			t.Logf("turn %d: %d model calls, %d summaries, largest input %d tokens", l.turns, calls, summaries, largest)
		}
	}
	largest, calls, summaries := maxInput(t, s)
	t.Logf("%d turns: %d model calls, %d summaries, largest input %d tokens (window %d)", l.turns, calls, summaries, largest, compactionWindow)
	if largest > compactionWindow {
		t.Errorf("a model call's input was %d tokens, over the %d-token window", largest, compactionWindow)
	}
	if summaries < n/20 {
		t.Errorf("%d summaries in %d turns; the session should compact every ~15 turns", summaries, n)
	}
	snap, err := s.Sessions.GetAgentSnapshot(ctx(t), l.id)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.LastTurnError != "" || snap.State.TurnCount != n {
		t.Fatalf("after %d turns: %+v", n, *snap.State)
	}
	if got := lastText(snap); !strings.HasPrefix(got, fmt.Sprintf("echo: m%d ", n)) {
		t.Errorf("the last answer is %.40q", got)
	}
	cs := snap.ContextSummary
	if cs == nil || cs.Generation != summaries || cs.LastSequence < int64(2*n-100) || !strings.Contains(cs.Text, "Summary: the user wrote") {
		t.Errorf("the snapshot's summary = %+v, want generation %d near the end", cs, summaries)
	}
	if snap.Usage.ModelCalls != int64(calls) {
		t.Errorf("usage counts %d model calls, the runner saw %d (the summary calls count)", snap.Usage.ModelCalls, calls)
	}
}

// TestKilledDuringCompactContext: the worker dies while the summary call
// runs. The next worker runs CompactContext again (not the model call
// before it), the summary is recorded once, and the turn answers.
func TestKilledDuringCompactContext(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(t, strings.Replace(compactionConfig(plugin), "context_window_tokens: 20000", "context_window_tokens: 4000", 1))
	w := s.StartWorker()
	id := start(t, s, "hello")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	gate := s.Gate("summary")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("abcdefgh ", 400) // 3.6 KB: past 3,400 tokens in two turns
	var turns int
	for turns = 2; ; turns++ {
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, fmt.Sprintf("t%d %s", turns, filler)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		snap := s.WaitForSnapshot(fmt.Sprint("turn ", turns), id, func(s wire.Snapshot) bool {
			return s.State.Status == wire.StatusCompactingContext || idleWithAnswer(s) && s.State.TurnCount == turns
		})
		if snap.State.Status == wire.StatusCompactingContext {
			break
		}
		if turns > 6 {
			t.Fatal("no compaction in 6 turns")
		}
	}
	reached(t, gate)
	w.Kill()
	_ = gate.Release()
	s.StartWorker()
	snap := s.WaitForSnapshot("the answer after the compaction", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == turns })
	if snap.ContextSummary == nil || snap.ContextSummary.Generation != 1 {
		t.Errorf("summary = %+v, want generation 1", snap.ContextSummary)
	}
	if !strings.HasPrefix(lastText(snap), fmt.Sprintf("echo: t%d ", turns)) {
		t.Errorf("the answer is %.40q", lastText(snap))
	}
	steps, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	var compacts, models int
	for _, st := range steps {
		if st.EventType != "completed" {
			continue
		}
		switch st.StepType {
		case wire.StepCompactContext:
			compacts++
		case wire.StepRunModel:
			models++
		}
	}
	if compacts != 1 {
		t.Errorf("%d CompactContext steps completed, want 1", compacts)
	}
	if models != turns+1 {
		t.Errorf("%d RunModel steps completed, want %d (one per turn, plus the one that asked for the compaction)", models, turns+1)
	}
}
