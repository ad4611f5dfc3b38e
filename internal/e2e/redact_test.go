package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/dex-agents/dex-agent-worker/internal/redact"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestSecretsInRunnerErrorsNeverReachTheSession: the plugin is granted
// DEX_TEST_SECRET and puts it in a tool's error and in a model failure.
// Neither the model, the snapshot (last_turn_error, tool records,
// messages) nor the workflow history holds the value.
func TestSecretsInRunnerErrorsNeverReachTheSession(t *testing.T) {
	const secret = "sk-test-5d41402abc4b2a76b9719d911017c592"
	t.Parallel()
	s := newStack(t)
	s.Setenv("DEX_TEST_SECRET", secret)
	s.StartWorker()
	id := start(t, s, "call:leak:x")
	snap := s.WaitForSnapshot("the answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: leak=failed:The tool call failed: upstream rejected token "+redact.Placeholder)

	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "leakfail"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the failed turn", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.TurnCount == 2 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if want := "provider rejected key " + redact.Placeholder; !strings.Contains(snap.State.LastTurnError, want) {
		t.Errorf("last_turn_error = %q, want it to contain %q", snap.State.LastTurnError, want)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the snapshot holds the secret: %s", b)
	}
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if j := protojson.Format(e); strings.Contains(j, secret) {
			t.Errorf("history event %d (%s) holds the secret", e.GetEventId(), e.GetEventType())
		}
	}
	// Nor does the worker's log (at debug level), whichever component
	// wrote the line.
	logs, err := filepath.Glob(filepath.Join(s.Dir, "worker-*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no worker log: %v", err)
	}
	for _, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", name)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", name)
		}
		// The plugin's stderr line reached the log, redacted.
		if !strings.Contains(string(b), "leak: calling upstream with token "+redact.Placeholder) {
			t.Errorf("%s lacks the plugin's redacted stderr line", name)
		}
	}
}
