package e2e

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/activity"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/tracing/otlptest"
)

// turnWaiter turns turn_completed events into a channel per session.
type turnWaiter struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

func (w *turnWaiter) ch(id string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.chans[id] == nil {
		w.chans[id] = make(chan struct{}, 16)
	}
	return w.chans[id]
}

func (w *turnWaiter) Publish(e events.Event) {
	if e.Type == wire.EventTurnCompleted || e.Type == wire.EventTurnFailed {
		w.ch(e.SessionID) <- struct{}{}
	}
}

func benchStack(b *testing.B) *agenttest.Stack {
	plugin := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	return agenttest.NewStack(b, testConfig(plugin))
}

// BenchmarkSessionTurn measures one session turn: the scripted model asks
// for four no-op read tools, which run in parallel Steps, then answers.
// That is BuildUserMessage, RunModel, 4 x CallTool, RunModel.
func BenchmarkSessionTurn(b *testing.B) {
	s := benchStack(b)
	// The same turn with metrics on (telemetry.metrics.prometheus), and
	// with metrics and traces (every span exported over OTLP/gRPC to a
	// receiver in this process, plugin spans included): their overhead is
	// the ratio of the ns/op to telemetry=none's.
	receiver := otlptest.Start(b)
	for _, telemetry := range []string{"none", "metrics", "metrics+traces"} {
		b.Run("telemetry="+telemetry, func(b *testing.B) {
			benchSessionTurn(b, s, strings.Contains(telemetry, "metrics"), strings.Contains(telemetry, "traces"), receiver, "")
		})
	}
	// The same turn in a session that is not searchable by its Steps: the
	// cost of the ActiveStepTypes upserts is the ratio of telemetry=none's
	// ns/op to this one's.
	b.Run("search=disabled", func(b *testing.B) {
		benchSessionTurn(b, s, false, false, receiver, wire.ActiveStepSearchDisabled)
	})
}

func benchSessionTurn(b *testing.B, s *agenttest.Stack, metricsOn, tracesOn bool, receiver *otlptest.Receiver, search string) {
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		b.Fatal(err)
	}
	if metricsOn {
		cfg.Telemetry.Metrics.Prometheus = "127.0.0.1:0"
	}
	if tracesOn {
		cfg.Telemetry.Traces = config.TelemetryTraces{Exporter: config.TracesOTLP, Endpoint: receiver.GRPCEndpoint()}
	}
	id, d := timedTurns(b, s, cfg, client.StartSessionOptions{FlowType: flowType, ActiveStepSearchMode: search}, "call:noop:1 call:noop:2 call:noop:3 call:noop:4")
	defer d.Stop()
	ctx := context.Background()
	snap, err := s.Sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if got := lastText(snap); got != "done: noop=succeeded:ok; noop=succeeded:ok; noop=succeeded:ok; noop=succeeded:ok" {
		b.Fatalf("last answer = %q", got)
	}
	reportHistoryPerTurn(b, s, id, wire.UpdateSendUserMessage)
	if tracesOn {
		// The spans were exported: the turns' roots reached the receiver.
		d.Stop()
		roots := 0
		for _, sp := range receiver.Spans() {
			if sp.ParentID == "" && sp.Attributes["gen_ai.conversation.id"] == id && strings.HasPrefix(sp.Name, "invoke_agent") {
				roots++
			}
		}
		if roots < b.N+1 {
			b.Fatalf("%d turn roots exported, want %d", roots, b.N+1)
		}
	}
}

// timedTurns starts a worker in this process on cfg and a session with start,
// sends message once to warm up the plugin connection and caches, then
// times b.N turns of it. The caller stops the worker.
func timedTurns(b *testing.B, s *agenttest.Stack, cfg *config.Config, start client.StartSessionOptions, message string) (string, *daemon.Daemon) {
	waiter := &turnWaiter{chans: map[string]chan struct{}{}}
	logger := slog.New(slog.NewTextHandler(logTo(b, s.Dir, "bench-worker.log"), &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := daemon.Start(context.Background(), daemon.Options{Config: cfg, Logger: logger, Events: waiter, TemporalAddress: s.Address(), MessageStorePath: filepath.Join(s.Dir, "messages.db")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	id, err := s.Sessions.StartSession(ctx, start)
	if err != nil {
		d.Stop()
		b.Fatal(err)
	}
	done := waiter.ch(id)
	turn := func() {
		if ok, err := s.Sessions.SendUserMessage(ctx, id, message); err != nil || !ok {
			b.Fatalf("send: %v %v", ok, err)
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatal("turn did not complete")
		}
	}
	turn()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		turn()
	}
	b.StopTimer()
	return id, d
}

const bareQueue = "bench-bare"

func noopActivity(ctx context.Context, n int) (string, error) { return "ok", nil }

// bareTurnWorkflow runs the same pattern as a session turn on plain
// Temporal: per update, one activity, four in parallel, one more; the
// update returns when the last one finished.
func bareTurnWorkflow(ctx workflow.Context) error {
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	}
	if err := workflow.SetUpdateHandler(ctx, "turn", func(ctx workflow.Context, text string) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, opts)
		var out string
		if err := workflow.ExecuteActivity(ctx, "noop", 0).Get(ctx, &out); err != nil {
			return "", err
		}
		var fs []workflow.Future
		for i := 1; i <= 4; i++ {
			fs = append(fs, workflow.ExecuteActivity(ctx, "noop", i))
		}
		for _, f := range fs {
			if err := f.Get(ctx, &out); err != nil {
				return "", err
			}
		}
		if err := workflow.ExecuteActivity(ctx, "noop", 5).Get(ctx, &out); err != nil {
			return "", err
		}
		return out, nil
	}); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// BenchmarkBareTemporalTurn is the baseline of BenchmarkSessionTurn: the
// same six no-op activities in the same pattern, on the same engine.
func BenchmarkBareTemporalTurn(b *testing.B) {
	s := benchStack(b)
	w := worker.New(s.Client, bareQueue, worker.Options{DisableRegistrationAliasing: true, DefaultHeartbeatThrottleInterval: 500 * time.Millisecond})
	w.RegisterWorkflowWithOptions(bareTurnWorkflow, workflow.RegisterOptions{Name: "BareTurn"})
	w.RegisterActivityWithOptions(noopActivity, activity.RegisterOptions{Name: "noop"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	run, err := s.Client.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{ID: "bare-1", TaskQueue: bareQueue}, "BareTurn")
	if err != nil {
		b.Fatal(err)
	}
	turn := func() {
		h, err := s.Client.UpdateWorkflow(ctx, temporalclient.UpdateWorkflowOptions{
			WorkflowID: run.GetID(), UpdateName: "turn", Args: []any{"go"}, WaitForStage: temporalclient.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			b.Fatal(err)
		}
		var out string
		if err := h.Get(ctx, &out); err != nil || out != "ok" {
			b.Fatalf("turn: %q %v", out, err)
		}
	}
	turn()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		turn()
	}
	b.StopTimer()
	reportHistoryPerTurn(b, s, run.GetID(), "turn")
}

// reportHistoryPerTurn reports the history events and the workflow tasks
// per turn of a workflow's latest run, a turn being one accepted update
// named update: what a turn costs the engine, beside its time.
func reportHistoryPerTurn(b *testing.B, s *agenttest.Stack, id, update string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	it := s.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events, tasks, turns := 0, 0, 0
	byType := map[string]int{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		events++
		byType[e.GetEventType().String()]++
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			tasks++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			if e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName() == update {
				turns++
			}
		}
	}
	if turns == 0 {
		b.Fatalf("no %s update in the history of %s", update, id)
	}
	b.Logf("%s: %d turns, history events by type: %v", id, turns, byType)
	b.ReportMetric(float64(events)/float64(turns), "events/turn")
	b.ReportMetric(float64(tasks)/float64(turns), "wftasks/turn")
}

func logTo(b *testing.B, dir, name string) *os.File {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}
