package e2e

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// draining waits until the worker logged that it stopped taking Steps and
// waits for its running ones.
func draining(t *testing.T, w *agenttest.Worker) {
	t.Helper()
	err := agenttest.WaitFor(ctx(t), "the worker to start draining", time.Minute, func() (bool, error) {
		if w.Exited() {
			b, _ := os.ReadFile(w.LogPath)
			if len(b) > 4096 {
				b = b[len(b)-4096:]
			}
			return false, agenttest.Permanent(fmt.Errorf("the worker exited instead of draining:\n%s", b))
		}
		b, err := os.ReadFile(w.LogPath)
		return err == nil && strings.Contains(string(b), "waiting for running steps to finish"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSIGTERMDrainsARunningWrite is a rolling restart: SIGTERM reaches the
// worker while a non-idempotent write runs. The worker stops taking Steps,
// lets the write finish, and exits; the next worker finishes the turn. The
// write ran once and is recorded as succeeded, not outcome_unknown.
func TestSIGTERMDrainsARunningWrite(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("tool-d")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:write_gate:d")
	reached(t, gate)
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	draining(t, w)
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	code, err := w.Wait(time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("worker exit: code %d, %v; want 0 after the drain", code, err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: write_gate=succeeded:wrote d")
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("write_gate ran %d times, want 1", n)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCallSingleAttemptTool); n != 1 {
		t.Errorf("CallSingleAttemptTool completed %d times, want 1: %+v", n, h)
	}
}

// TestASecondSignalStopsAtOnce: an operator who cannot wait sends the
// signal again; the worker exits with the write still running, and the
// write ends outcome_unknown (it may have taken effect), never repeated.
func TestASecondSignalStopsAtOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("tool-f")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:write_gate:f")
	reached(t, gate)
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	draining(t, w)
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := w.Wait(time.Minute); err != nil || code == 0 {
		t.Fatalf("worker exit after the second signal: code %d, %v; want a non-zero code", code, err)
	}
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: write_gate=outcome_unknown:"+pluginapi.OutcomeUnknownToolResult)
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("write_gate ran %d times, want 1", n)
	}
}
