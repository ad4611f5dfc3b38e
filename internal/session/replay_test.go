package session

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Histories in testdata/histories were recorded from real sessions (see
// internal/e2e TestRecordApprovalTurnHistory -update-histories). Replaying
// them fails when a change to the workflow would break running sessions.
// quietLogger hides the replayer's expected nondeterminism report.
var quietLogger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))

func replayer(t *testing.T) worker.WorkflowReplayer {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(Workflow(Runtime{
		Options:          Options{Agent: "test"},
		RunModel:         DefaultRunModelLimits,
		Tool:             DefaultToolLimits,
		SearchAttributes: true,
	}), workflow.RegisterOptions{Name: "TestAgent"})
	return r
}

func TestReplayRecordedHistories(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no recorded histories in testdata/histories")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if err := replayer(t).ReplayWorkflowHistoryFromJSONFile(nil, path); err != nil {
				t.Fatalf("replay %s: %v", path, err)
			}
		})
	}
}

// TestReplayDetectsAnIncompatibleHistory proves the replay test can fail: a
// history whose tool Step had another activity type does not replay.
func TestReplayDetectsAnIncompatibleHistory(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "histories", "approval_turn.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"CallSingleAttemptTool"`, `"CallTool"`, 1)
	if bad == string(b) {
		t.Fatal("the recorded history has no CallSingleAttemptTool step")
	}
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replayer(t).ReplayWorkflowHistoryFromJSONFile(quietLogger, path); err == nil {
		t.Fatal("an incompatible history replayed without error")
	}
}
