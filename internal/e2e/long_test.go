package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/agenttest/probe"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/pgtest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// longSession drives one session turn by turn on a worker in this process,
// which tells it of each finished turn through its event sink.
type longSession struct {
	tb     testing.TB
	s      *agenttest.Stack
	waiter *turnWaiter
	id     string
	done   chan struct{}
	turns  int
	filler string
}

// startLongSession starts a worker in this process and a session of the
// test agent on it.
func startLongSession(tb testing.TB, s *agenttest.Stack) *longSession {
	tb.Helper()
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(s.Dir, "long-worker.log"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	waiter := &turnWaiter{chans: map[string]chan struct{}{}}
	d, err := daemon.Start(context.Background(), daemon.Options{
		Config: cfg, Logger: slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Events: waiter, TemporalAddress: s.Address(), MessageStorePath: filepath.Join(s.Dir, "messages.db"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(d.Stop)
	return (&longSession{tb: tb, s: s, waiter: waiter}).another()
}

// another starts another session on the same worker.
func (l *longSession) another() *longSession {
	id, err := l.s.Sessions.StartSession(context.Background(), client.StartSessionOptions{FlowType: flowType})
	if err != nil {
		l.tb.Fatal(err)
	}
	// Messages of 2 KiB.
	return &longSession{tb: l.tb, s: l.s, waiter: l.waiter, id: id, done: l.waiter.ch(id), filler: strings.Repeat("abcdefgh ", 2048/9+1)}
}

// turn sends the next message and waits for the turn to end.
func (l *longSession) turn() {
	l.turns++
	text := fmt.Sprintf("m%d %s", l.turns, l.filler)
	text = text[:2048]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ok, err := l.s.Sessions.SendUserMessage(ctx, l.id, text); err != nil || !ok {
		l.tb.Fatalf("turn %d: send: %v %v", l.turns, ok, err)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		l.tb.Fatalf("turn %d did not end within a minute", l.turns)
	}
}

// history describes the session's current run: its ID, size and length.
func (l *longSession) history() (runID string, bytes, events int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := l.s.Client.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: "default", Execution: &commonpb.WorkflowExecution{WorkflowId: l.id},
	})
	if err != nil {
		l.tb.Fatal(err)
	}
	info := resp.GetWorkflowExecutionInfo()
	if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		l.tb.Fatalf("after turn %d the session's run is %s", l.turns, st)
	}
	return info.GetExecution().GetRunId(), info.GetHistorySizeBytes(), info.GetHistoryLength()
}

// turnCost runs turns until one starts and ends in the same run, and
// returns the history bytes that turn added.
func (l *longSession) turnCost() int64 {
	for range 5 {
		run, before, _ := l.history()
		l.turn()
		if after, size, _ := l.history(); after == run {
			return size - before
		}
	}
	l.tb.Fatalf("five turns in a row continued as new")
	return 0
}

// longSessionTurns is how many turns TestLongSession runs: 800 in make
// test, DEX_LONG_SESSION_TURNS (2000 in make soak) when set.
func longSessionTurns(t *testing.T) int {
	n := 800
	if v := os.Getenv("DEX_LONG_SESSION_TURNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 20 {
			t.Fatalf("DEX_LONG_SESSION_TURNS=%q: want a number of turns >= 20", v)
		}
	}
	return n
}

// TestLongSession runs a session of many turns (2 KiB messages, echoed)
// and checks that it keeps running and that a turn at the end adds no
// more history than one at the start: history bytes per turn at the last
// turn within 1.1x of turn 10. The workflow's payloads stay bounded
// whatever the depth, and the session continues as new as its history
// grows.
func TestLongSession(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	n := longSessionTurns(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(t, testConfig(plugin))
	l := startLongSession(t, s)
	firstRun, _, _ := l.history()
	for l.turns < 9 {
		l.turn()
	}
	early := l.turnCost()
	start := time.Now()
	for l.turns < n-1 {
		l.turn()
		if l.turns%200 == 0 {
			run, size, events := l.history()
			t.Logf("turn %d: run %s, history %d bytes in %d events (%.1f turns/s)", l.turns, run[:8], size, events, float64(l.turns-10)/time.Since(start).Seconds())
		}
	}
	late := l.turnCost()
	ratio := float64(late) / float64(early)
	t.Logf("history bytes per turn: %d at turn 10, %d at turn %d (ratio %.3f)", early, late, l.turns, ratio)
	if ratio > 1.1 {
		t.Errorf("a turn at depth %d adds %d history bytes, %.2fx the %d of turn 10; want at most 1.1x", l.turns, late, ratio, early)
	}
	// A run takes about 270 of these turns before the engine suggests
	// continue-as-new (near 4,100 history events).
	if run, _, _ := l.history(); run == firstRun && l.turns >= 600 {
		t.Errorf("%d turns in one run: the session never continued as new", l.turns)
	}
	if n, where := largestPayload(t, s, l.id); n > 256<<10 {
		t.Errorf("the largest payload of the current run is %d bytes, at %s", n, where)
	}
	// The last messages are all there, in order, in the store.
	page, err := s.Sessions.WithMessages(s.MessageStore(t)).ListAgentMessages(context.Background(), l.id, wire.ListMessagesRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(2 * l.turns)
	if got := page.Messages[len(page.Messages)-1].Sequence; got != want || len(page.Messages) != 200 {
		t.Errorf("the newest page ends at %d with %d messages; want %d and 200", got, len(page.Messages), want)
	}
	for i, m := range page.Messages {
		if m.Sequence != want-199+int64(i) {
			t.Fatalf("page message %d has sequence %d: a hole", i, m.Sequence)
		}
	}
	if last := page.Messages[len(page.Messages)-1]; !strings.HasPrefix(last.Text, fmt.Sprintf("echo: m%d ", l.turns)) || len(last.Text) != 2048+len("echo: ") {
		t.Errorf("the last answer is %d bytes: %.40q", len(last.Text), last.Text)
	}
}

// BenchmarkTurnAtDepth compares a turn of a session 2,000 turns deep
// (DEX_BENCH_DEPTH) with a turn of shallow sessions (10 to 30 turns deep,
// a new one every 20 turns), with 2 KiB messages, on the same worker. The
// two alternate, so both see the same machine: ns/op is the deep turn;
// shallow-ns/turn, the shallow one; time-ratio and median-ratio compare
// their means and medians, bytes-ratio the history bytes a turn adds.
func BenchmarkTurnAtDepth(b *testing.B) { turnAtDepth(b, benchStack(b)) }

// BenchmarkTurnAtDepthCompacted is BenchmarkTurnAtDepth with a compaction
// policy (a 20,000-token window): the deep session's model input stays as
// small as a shallow one's (input-ratio near 1 or below).
func BenchmarkTurnAtDepthCompacted(b *testing.B) {
	plugin := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	turnAtDepth(b, agenttest.NewStack(b, compactionConfig(plugin)))
}

// BenchmarkTurnAtDepthPostgres is BenchmarkTurnAtDepth with the message
// store on PostgreSQL, the store of a deployment past one machine.
func BenchmarkTurnAtDepthPostgres(b *testing.B) {
	pg := pgtest.Start(b)
	b.Setenv("DEX_BENCH_DSN", pg.CreateDatabase(b, ""))
	plugin := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	turnAtDepth(b, agenttest.NewStack(b, testConfig(plugin)+"message_store: {driver: postgres, dsn_env: DEX_BENCH_DSN}\n"))
}

// turnAtDepth builds a deep session on s and times its turns against
// shallow sessions' turns on the same worker.
func turnAtDepth(b *testing.B, s *agenttest.Stack) {
	deep := 2000
	if v := os.Getenv("DEX_BENCH_DEPTH"); v != "" {
		var err error
		if deep, err = strconv.Atoi(v); err != nil || deep < 20 {
			b.Fatalf("DEX_BENCH_DEPTH=%q: want a depth >= 20", v)
		}
	}
	d := startLongSession(b, s)
	for d.turns < deep-1 {
		d.turn()
	}
	var shallow *longSession
	b.Run(fmt.Sprintf("depth=%d", deep), func(b *testing.B) {
		var deepTimes, shallowTimes []time.Duration
		var deepBytes, shallowBytes, deepN, shallowN int64
		// timed runs one turn of l and returns its duration and history
		// bytes (0, false when the turn continued as new).
		var deepInput, shallowInput []int64
		timed := func(l *longSession) (time.Duration, int64, bool) {
			run, before, _ := l.history()
			calls := len(logRecords(b, s))
			if l == d {
				b.StartTimer()
			}
			start := time.Now()
			l.turn()
			took := time.Since(start)
			b.StopTimer()
			after, size, _ := l.history()
			// The largest model input of the turn, in tokens.
			var largest int64
			for _, r := range logRecords(b, s)[calls:] {
				if r.Kind == "input" {
					n, _ := strconv.ParseInt(r.Detail, 10, 64)
					largest = max(largest, n)
				}
			}
			if l == d {
				deepInput = append(deepInput, largest)
			} else {
				shallowInput = append(shallowInput, largest)
			}
			return took, size - before, after == run
		}
		b.ResetTimer()
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			if shallow == nil || shallow.turns >= 30 {
				shallow = d.another()
				for shallow.turns < 9 {
					shallow.turn()
				}
			}
			took, n, same := timed(shallow)
			shallowTimes = append(shallowTimes, took)
			if same {
				shallowBytes, shallowN = shallowBytes+n, shallowN+1
			}
			took, n, same = timed(d)
			deepTimes = append(deepTimes, took)
			if same {
				deepBytes, deepN = deepBytes+n, deepN+1
			}
		}
		mean := func(ts []time.Duration) float64 {
			var sum time.Duration
			for _, t := range ts {
				sum += t
			}
			return float64(sum) / float64(len(ts))
		}
		median := func(ts []time.Duration) float64 {
			ts = slices.Clone(ts)
			slices.Sort(ts)
			return float64(ts[len(ts)/2])
		}
		b.ReportMetric(mean(shallowTimes), "shallow-ns/turn")
		b.ReportMetric(mean(deepTimes)/mean(shallowTimes), "time-ratio")
		b.ReportMetric(median(deepTimes)/median(shallowTimes), "median-ratio")
		meanInt := func(ns []int64) float64 {
			var sum int64
			for _, n := range ns {
				sum += n
			}
			return float64(sum) / float64(len(ns))
		}
		forkAtDepth(b, s, d, shallow)
		b.ReportMetric(meanInt(deepInput), "deep-input-tokens")
		b.ReportMetric(meanInt(deepInput)/meanInt(shallowInput), "input-ratio")
		if deepN > 0 && shallowN > 0 {
			b.ReportMetric(float64(deepBytes)/float64(deepN), "history-B/turn")
			b.ReportMetric((float64(deepBytes)/float64(deepN))/(float64(shallowBytes)/float64(shallowN)), "bytes-ratio")
		}
	})
}

// logRecords reads the test runner's log.
func logRecords(b *testing.B, s *agenttest.Stack) []probe.Invocation {
	b.Helper()
	recs, err := s.Log().Read()
	if err != nil {
		b.Fatal(err)
	}
	return recs
}

// forkAtDepth times forks of the deep session and of a shallow one (10 to
// 30 turns), alternating, each at its last message: client.ForkSession
// from the parent's query to the fork's start. It reports the median
// shallow fork and the ratio of the medians (fork-ratio); and the ratio
// against a session of 60 turns (fork-window-ratio), whose window is as
// full as the deep one's: a fork copies the window's messages (at most
// message_window_size + message_chunk_size), and shares the rest.
func forkAtDepth(b *testing.B, s *agenttest.Stack, deep, shallow *longSession) {
	b.Helper()
	sessions := s.Sessions.WithMessages(benchStore(b, s))
	fork := func(l *longSession) time.Duration {
		snap, err := s.Sessions.GetAgentSnapshot(context.Background(), l.id)
		if err != nil {
			b.Fatal(err)
		}
		at := snap.Messages[len(snap.Messages)-1].Sequence
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if _, err := sessions.ForkSession(ctx, l.id, client.ForkOptions{AtSequence: at}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	full := deep.another()
	for full.turns < 60 {
		full.turn()
	}
	const forks = 21
	var deepTimes, shallowTimes, fullTimes []time.Duration
	for range forks {
		shallowTimes = append(shallowTimes, fork(shallow))
		deepTimes = append(deepTimes, fork(deep))
		fullTimes = append(fullTimes, fork(full))
	}
	slices.Sort(deepTimes)
	slices.Sort(shallowTimes)
	slices.Sort(fullTimes)
	b.ReportMetric(float64(shallowTimes[forks/2])/1e6, "fork-shallow-ms")
	b.ReportMetric(float64(deepTimes[forks/2])/float64(shallowTimes[forks/2]), "fork-ratio")
	b.ReportMetric(float64(deepTimes[forks/2])/float64(fullTimes[forks/2]), "fork-window-ratio")
}

// benchStore opens the message store of the stack's config: dev's SQLite
// file, or the config's message_store.
func benchStore(b *testing.B, s *agenttest.Stack) transcript.Reader {
	b.Helper()
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		b.Fatal(err)
	}
	o := transcript.Options{Driver: transcript.DriverSQLite, Path: filepath.Join(s.Dir, "messages.db")}
	if ms := cfg.MessageStore; ms != nil && ms.Driver == config.MessageStorePostgres {
		dsn, err := ms.DSN()
		if err != nil {
			b.Fatal(err)
		}
		o = transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn.Reveal()}
	}
	st, err := transcript.Open(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return transcript.Reader{Store: st}
}
