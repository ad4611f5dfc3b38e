package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestPythonRunnerThroughAKilledModelCall runs sessions on the Python SDK's
// echo runner through a real engine and worker: a turn answers; then the
// runner process is SIGKILLed in the middle of a model call, the host
// starts a new one, the RunModel Step's next attempt answers, and the
// answer is not doubled.
func TestPythonRunnerThroughAKilledModelCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	sdk, err := filepath.Abs(pySDKDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, ".venv", "bin", "python")); err != nil {
		testpeer.Missing(t, "the Python runner SDK's virtualenv", "bash sdk/python/install.sh (make test-peers)")
	}
	s := agenttest.NewStack(t, fmt.Sprintf(`
logging: {level: debug}
plugins:
  py:
    command: python
    venv: %s
    args: [%s]
agents:
  - name: echo
    flow_type: PyEcho
    runner: py
    runner_config: {pid_file: "{{DIR}}/runner.pid"}
    run_model_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 5s, maximum_attempts: 3, schedule_to_close_timeout: 5m}
`, filepath.Join(sdk, ".venv"), filepath.Join(sdk, "tests", "echo_runner.py")))
	s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: "PyEcho", InitialMessage: "hello from Go"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the first answer", id, idleWithAnswer)
	wantAnswer(t, snap, "hello from Go")

	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "hang-once please"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	pidFile := filepath.Join(s.Dir, "runner.pid")
	var pid int
	deadline := time.Now().Add(time.Minute)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner never started the hanging model call")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	snap = s.WaitForSnapshot("the answer after the kill", id, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && lastText(s) == "hang-once please"
	})
	if n := len(snap.Messages); n != 4 {
		t.Errorf("the session has %d messages, want 4 (two turns, no doubled answer): %+v", n, snap.Messages)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	var last agenttest.StepHistoryEntry
	for _, e := range h {
		if e.StepType == wire.StepRunModel && e.EventType == "completed" {
			last = e
		}
	}
	if last.Attempt < 2 {
		t.Errorf("the second turn's RunModel completed on attempt %d, want a retry after the kill", last.Attempt)
	}
}
