package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// pySDKDir is sdk/python.
func pySDKDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "sdk", "python")
}

// TestPythonSDKTests runs the Python runner SDK's own checks in its
// virtualenv: pytest (the shared test vectors, the go-plugin handshake over
// mutual TLS with a real plugin process), mypy --strict and ruff.
func TestPythonSDKTests(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	dir := pySDKDir()
	bin := filepath.Join(dir, ".venv", "bin")
	for _, p := range []string{filepath.Join(bin, "python"), filepath.Join(dir, "src", "dex_runner", "_gen", "dex", "runner", "v1", "runner_pb2.py")} {
		if _, err := os.Stat(p); err != nil {
			testpeer.Missing(t, "the Python runner SDK's "+p, "bash sdk/python/install.sh (make test-peers)")
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	out := run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
	if !regexp.MustCompile(`(?m)^\d+ passed`).MatchString(out) || regexp.MustCompile(`(?m)(failed|skipped|error)`).MatchString(out) {
		t.Fatalf("pytest ran no test, or skipped or failed some:\n%s", out)
	}
	t.Logf("pytest: %s", out)
	if out := run("mypy"); !regexp.MustCompile(`^Success: no issues found`).MatchString(out) {
		t.Fatalf("mypy:\n%s", out)
	}
	run("ruff", "check", "--no-cache", "src", "tests")
	run("ruff", "format", "--check", "--no-cache", "src", "tests")

	// The Python examples pass the same checks, with their own settings.
	for _, ex := range []string{"orders-openai-agents", "orders-pydantic-ai", "orders-langgraph", "orders-google-adk", "orders-claude-agent-sdk"} {
		dir := filepath.Join(dir, "..", "..", "examples", ex)
		for _, args := range [][]string{{"ruff", "check", "--no-cache", "."}, {"ruff", "format", "--check", "--no-cache", "."}, {"mypy"}} {
			cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("examples/%s: %v: %v\n%s", ex, args, err, out)
			}
		}
	}
}
