package sessionflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/internal/tracing/temporaltrace"
)

// countingTracer counts the turn roots the workflow writes.
type countingTracer struct {
	*temporaltrace.Tracing
	ended atomic.Int64
}

func (c *countingTracer) TurnEnded(t tracing.Turn) {
	c.ended.Add(1)
	c.Tracing.TurnEnded(t)
}

// TestReplayRecordedHistoriesWithTracing replays the histories recorded
// without tracing on a worker that traces (the Temporal interceptors and
// the session's turn tracer): tracing never shapes a command, so they
// replay, and a replay writes no span.
func TestReplayRecordedHistoriesWithTracing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	tr, err := tracing.New(context.Background(), tracing.Options{Exporter: tracing.ExporterFile, File: file})
	if err != nil {
		t.Fatal(err)
	}
	tt, err := temporaltrace.New(tr)
	if err != nil {
		t.Fatal(err)
	}
	var wis []interceptor.WorkerInterceptor
	for _, ic := range tt.Interceptors() {
		wis = append(wis, ic.(interceptor.WorkerInterceptor))
	}
	counting := &countingTracer{Tracing: tt}
	for _, path := range histories(t) {
		if strings.HasPrefix(filepath.Base(path), "legacy_") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: wis})
			if err != nil {
				t.Fatal(err)
			}
			r.RegisterWorkflowWithOptions(Workflow(Runtime{Options: recordedSettings(), Tracer: counting}), workflow.RegisterOptions{Name: "TestAgent"})
			r.RegisterWorkflowWithOptions(Workflow(Runtime{Options: recordedSettings(), Tracer: counting}), workflow.RegisterOptions{Name: "TestAgentHelper"})
			if err := replayFile(r, nil, path); err != nil {
				t.Fatalf("replay %s with tracing: %v", path, err)
			}
		})
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := counting.ended.Load(); n != 0 {
		t.Errorf("the replays wrote %d turn roots, want 0", n)
	}
	if b, err := os.ReadFile(file); err != nil || len(b) != 0 {
		t.Errorf("the replays exported spans (%v):\n%.2000s", err, b)
	}
}
