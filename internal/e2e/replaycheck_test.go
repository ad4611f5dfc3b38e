package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestReplayCheckBeforeAnUpgrade runs replay-check as an operator does
// before an upgrade. This build replays a real session's history, fetched
// from visibility, and the repository's recorded histories; a build with
// other workflow code (tag dexupgradeprobe, as in the upgrade test: one
// more marker at each turn start) fails on the session, naming it and the
// event where the replay parted from the record, and exits 1.
func TestReplayCheckBeforeAnUpgrade(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	probe := agenttest.BuildBinaryWithTags(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker", "dexupgradeprobe")
	s := agenttest.NewStack(t, testConfig(plugin))
	s.StartWorker()
	id := start(t, s, "call:approve_write:rc1")
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	s.WaitForSnapshot("the answer", id, idleWithAnswer)

	cfg := strings.Replace(testConfig(plugin), "temporal: {namespace: default, task_queue: dex-agents}",
		fmt.Sprintf("temporal: {address: %s, namespace: default, task_queue: dex-agents}", s.Address()), 1)
	cfgPath := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(cfg, "{{DIR}}", s.Dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(bin string, args ...string) (string, int) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"replay-check"}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &ee):
			return string(out), ee.ExitCode()
		}
		t.Fatalf("replay-check: %v\n%s", err, out)
		return "", 0
	}
	visibility := []string{"--config", cfgPath, "--from-visibility", "agent=test status=all"}
	if out, code := check(bin, visibility...); code != 0 || !strings.Contains(out, "ok    "+id+" (run ") || !regexp.MustCompile(`replayed \d+ histories: \d+ ok, 0 failed`).MatchString(out) {
		t.Fatalf("this build: exit %d\n%s", code, out)
	}
	out, code := check(probe, visibility...)
	if code != 1 || !strings.Contains(out, "FAIL  "+id+" (run ") || !strings.Contains(out, "      session "+id) ||
		!regexp.MustCompile(`parted from the record at event \d+`).MatchString(out) || !strings.Contains(out, "[TMPRL1100]") {
		t.Fatalf("a build with other workflow code: exit %d, want 1 and the session named\n%s", code, out)
	}
	t.Logf("the changed build's report:\n%s", out)

	// The recorded histories (but the legacy one, which replays only under
	// the settings of its time) replay on this build.
	recorded := t.TempDir()
	paths, _ := filepath.Glob(filepath.Join("..", "sessionflow", "testdata", "histories", "*.json"))
	n := 0
	for _, p := range paths {
		if strings.HasPrefix(filepath.Base(p), "legacy_") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(recorded, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	out, code = check(bin, "--config", filepath.Join("..", "replaycheck", "testdata", "recorded.yaml"), "--histories", recorded)
	if want := fmt.Sprintf("replayed %d histories: %d ok, 0 failed", n, n); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("the recorded histories: exit %d, want %q\n%s", code, want, out)
	}
}
