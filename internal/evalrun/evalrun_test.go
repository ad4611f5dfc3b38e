package evalrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/evals"
)

// The agent the repository's recorded histories ran (internal/e2e's test
// agent and its runner).
const recordedAgent = `
temporal: {namespace: default, task_queue: dex-agents}
plugins:
  testrunner: {command: %s}
agents:
  - name: test
    flow_type: TestAgent
    runner: testrunner
    runner_config: {state_dir: "{{DIR}}"}
    default_tool_effect: unclassified
    tool_policies:
      read_gate: {effect: read}
      approve_write: {effect: non_idempotent_write, requires_approval: true}
`

// A recorded case (a read, an approved write, then a second turn) replays
// unchanged on the embedded engine and on an engine given by its address,
// where the replay's worker takes only its own task queue.
func TestRunOnTheEmbeddedEngineAndOnAnAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(t, fmt.Sprintf(recordedAgent, plugin)) // its engine only: no worker of its own starts
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("..", "evals", "testdata", "cases", "approval_turn.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := evals.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, address := range []string{"", s.Address()} {
		name := "embedded"
		if address != "" {
			name = "address"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			reports, err := Run(ctx, RunOptions{Config: cfg, Agent: "test", DataDir: t.TempDir(), Address: address, CaseTimeout: time.Minute}, []*evals.Case{c})
			if err != nil {
				t.Fatal(err)
			}
			r := reports[0]
			if r.Status != "same" || r.Replayed.ToolCalls != 2 || r.Replayed.Approvals != 1 || r.Replayed.Turns != 2 {
				t.Fatalf("the replay: %+v", r)
			}
		})
	}
}
