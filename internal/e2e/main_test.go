// Package e2e holds the integration tests that prove durability: a real
// embedded engine, the worker in a child process that the tests SIGKILL at
// exact points, and the test runner plugin counting real calls.
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestMain(m *testing.M) {
	agenttest.RunWorkerIfChild()
	os.Exit(m.Run())
}

const flowType = "TestAgent"

// testConfig is the worker config of the tests, with short heartbeat
// timeouts so a killed worker is noticed within seconds.
func testConfig(plugin string) string {
	return fmt.Sprintf(`
temporal: {namespace: default, task_queue: dex-agents}
logging: {level: debug}
plugins:
  testrunner:
    command: %s
    env: [DEX_TEST_SECRET]
agents:
  - name: test
    flow_type: %s
    runner: testrunner
    runner_config: {state_dir: "{{DIR}}"}
    default_tool_effect: unclassified
    tool_policies:
      read_gate: {effect: read}
      idem_gate: {effect: idempotent_write}
      noop: {effect: read}
      asker: {effect: read}
      labeler: {effect: read}
      leak: {effect: read}
      big: {effect: read}
      write_gate: {effect: non_idempotent_write, requires_approval: false}
      approve_write: {effect: non_idempotent_write, requires_approval: true}
    run_model_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 5s, maximum_attempts: 3, schedule_to_close_timeout: 5m}
    tool_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 3s, maximum_attempts: 3}
`, plugin, flowType)
}

func newStack(t *testing.T) *agenttest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	return agenttest.NewStack(t, testConfig(plugin))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func start(t *testing.T, s *agenttest.Stack, message string) string {
	t.Helper()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, InitialMessage: message})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// idleWithAnswer waits until the session finished its turn and its last
// message is an assistant answer.
func idleWithAnswer(s wire.Snapshot) bool {
	if s.State == nil || s.State.Status != wire.StatusWaitingForUserMessage || len(s.Messages) == 0 {
		return false
	}
	last := s.Messages[len(s.Messages)-1]
	return last.Role == "assistant"
}

func lastText(s wire.Snapshot) string { return s.Messages[len(s.Messages)-1].Text }

func wantAnswer(t *testing.T, snap wire.Snapshot, want string) {
	t.Helper()
	if got := lastText(snap); got != want {
		t.Fatalf("answer = %q\nwant     %q", got, want)
	}
}

func reached(t *testing.T, g agenttest.FileGate) int {
	t.Helper()
	pid, err := g.WaitUntilReached(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func countSteps(h []agenttest.StepHistoryEntry, eventType, stepType string) int {
	n := 0
	for _, e := range h {
		if e.EventType == eventType && e.StepType == stepType {
			n++
		}
	}
	return n
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// waitOK waits up to timeout until url answers 200; it fails at once when
// exited (nil: never) reports that the process serving it ended.
func waitOK(t testing.TB, what, url string, timeout time.Duration, exited func() bool) {
	t.Helper()
	err := agenttest.WaitFor(context.Background(), what, timeout, func() (bool, error) {
		if exited != nil && exited() {
			return false, agenttest.Permanent(fmt.Errorf("%s: the process exited", what))
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == 200, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
