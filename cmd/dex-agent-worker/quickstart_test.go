package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// docsQuickstart returns the main.go and the dex.yaml of the plugin
// quickstart in docs/runners.md.
func docsQuickstart(t *testing.T) (mainGo, dexYAML string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "runners.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Quickstart: a plugin in its own module\n")
	if !ok {
		t.Fatal("docs/runners.md has no plugin quickstart section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return firstBlock(t, section, "go"), firstBlock(t, section, "yaml")
}

// firstBlock returns the first fenced code block of lang in a Markdown text.
func firstBlock(t *testing.T, text, lang string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)\n```" + lang + "\n(.*?)```\n").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s block", lang)
	}
	return m[1]
}

// blockWith returns the first lang block of text that contains marker.
func blockWith(t *testing.T, text, lang, marker string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)\n```"+lang+"\n(.*?)```\n").FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], marker) {
			return m[1]
		}
	}
	t.Fatalf("no %s block with %q", lang, marker)
	return ""
}

// TestPluginQuickstart follows the plugin quickstart of docs/runners.md as a plugin
// author would, in a module of its own that requires this repository
// through a replace directive: it builds the plugin, validates the config
// (which starts the plugin and configures the agent through the host), and
// runs a session on a worker.
func TestPluginQuickstart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a plugin in a new module")
	}
	mainGo, dexYAML := docsQuickstart(t)
	dir := buildInNewModule(t, "example.com/myrunner", mainGo, "myrunner")

	cfgPath := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfgPath, []byte(dexYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "config", "validate", "--config", cfgPath)
	if code != 0 || stderr != "" || !strings.Contains(stdout, "every plugin started and accepted its agents' runner_config") {
		t.Fatalf("config validate: exit %d\n%s%s", code, stdout, stderr)
	}

	// The same config on a worker: a session counts the words.
	stack := agenttest.NewStack(t, strings.ReplaceAll(dexYAML, "./bin/myrunner", filepath.Join(dir, "bin", "myrunner")))
	stack.StartWorker()
	stdout, stderr, code = runCLI(t, "session", "start", "--address", stack.Address(), "--config", stack.ConfigPath,
		"--agent", "counter", "--message", "one two three")
	if code != 0 {
		t.Fatalf("session start: exit %d\n%s", code, stderr)
	}
	id := strings.TrimSpace(stdout)
	final := stack.WaitForSnapshot("the answer", id, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && len(s.Messages) > 0 && s.Messages[len(s.Messages)-1].Role == "assistant"
	})
	if got := final.Messages[len(final.Messages)-1].Text; got != "Hello! Your message has 3 words." {
		t.Errorf("answer = %q", got)
	}
}

// buildInNewModule builds mainGo as a plugin author would, in a module of
// its own that requires this repository through a replace directive, into
// DIR/bin/BINARY, and returns DIR.
func buildInNewModule(t *testing.T, module, mainGo, binary string) string {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo), 0o644); err != nil {
		t.Fatal(err)
	}
	// The go.sum of this repository lists every module the plugin needs
	// (so nothing unverified is fetched); -mod=mod adds the requirements
	// that `go mod tidy` would. The module proxy stays as configured: the
	// new module's graph may need a go.mod (such as an older version of an
	// indirect dependency) that building this repository never fetched.
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd("mod", "init", module)
	// Both modules of the repository, as the guides say: the worker's (for
	// plugins/stepwise) and the runner SDK's (pluginapi).
	goCmd("mod", "edit", "-replace", "github.com/dex-agents/dex-agent-worker="+repo,
		"-replace", "github.com/dex-agents/dex-agent-worker/pluginapi="+filepath.Join(repo, "pluginapi"))
	goCmd("build", "-o", filepath.Join("bin", binary), ".")
	return dir
}
