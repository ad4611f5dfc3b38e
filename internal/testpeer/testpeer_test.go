package testpeer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissing runs the helper test below in a child process, with and
// without CI=true.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTPEER_CHILD") == "1" {
		Missing(t, "frobnicator", "apt-get install frobnicator")
		return
	}
	run := func(ci string) (string, string, error) {
		skipped := filepath.Join(t.TempDir(), "skipped")
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTPEER_CHILD=1", "CI="+ci, SkippedFileEnv+"="+skipped)
		out, err := cmd.CombinedOutput()
		rec, _ := os.ReadFile(skipped)
		return string(out), string(rec), err
	}
	out, rec, err := run("true")
	if err == nil || !strings.Contains(out, "--- FAIL") || !strings.Contains(out, "CI=true: a missing test peer fails the run") {
		t.Errorf("with CI=true the test did not fail: %v\n%s", err, out)
	}
	if rec != "" {
		t.Errorf("with CI=true a skip was recorded: %q", rec)
	}
	out, rec, err = run("")
	if err != nil || !strings.Contains(out, "--- SKIP") {
		t.Errorf("without CI the test did not skip: %v\n%s", err, out)
	}
	if want := "TestMissing: frobnicator is missing; install it with: apt-get install frobnicator\n"; rec != want {
		t.Errorf("recorded skip = %q, want %q", rec, want)
	}
}
