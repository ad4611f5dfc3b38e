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

// TestRunnerWalkthrough follows docs/runner-in-15-minutes.md: it builds
// the walkthrough's main.go in a module of its own, validates its dex.yaml
// (with the scripted model, and with a real provider's config, which
// builds the provider's client without calling it), runs plugin check,
// and on a worker saves a note after its approval (once) and counts words.
func TestRunnerWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin in a new module")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "runner-in-15-minutes.md"))
	if err != nil {
		t.Fatal(err)
	}
	mainGo, dexYAML := firstBlock(t, string(doc), "go"), firstBlock(t, string(doc), "yaml")
	dir := buildInNewModule(t, "example.com/notes", mainGo, "notes")
	notes := filepath.Join(dir, "notes.txt")
	// The notes file as an absolute path: the plugin runs in the test's
	// working directory, not the walkthrough's.
	dexYAML = strings.Replace(dexYAML, "notes_file: notes.txt", "notes_file: "+notes, 1)
	cfgPath := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfgPath, []byte(dexYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "config", "validate", "--config", cfgPath)
	if code != 0 || stderr != "" {
		t.Fatalf("config validate: exit %d\n%s%s", code, stdout, stderr)
	}
	// The real-model line of the comment: the same runner builds an OpenAI
	// client from it (no call is made).
	t.Setenv("OPENAI_API_KEY", "sk-test-not-used")
	real := strings.Replace(dexYAML, "model: {provider: scripted}", "model: {provider: openai, name: gpt-5-mini}", 1)
	real = strings.Replace(real, "command: ./bin/notes ", "command: ./bin/notes\n    env: [OPENAI_API_KEY] ", 1)
	if !strings.Contains(real, "model: {provider: openai, name: gpt-5-mini}") || !strings.Contains(real, "\n    env: [OPENAI_API_KEY]") {
		t.Fatalf("the walkthrough's dex.yaml changed; the real-model variant is not made:\n%s", real)
	}
	realPath := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(realPath, []byte(real), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI(t, "config", "validate", "--config", realPath); code != 0 || stderr != "" {
		t.Fatalf("config validate with a real model: exit %d\n%s%s", code, stdout, stderr)
	}

	stdout, _, code = runCLI(t, "plugin", "check", "--config", cfgPath, "--agent", "notes", "--message", "note: buy milk")
	if code != 0 || !regexp.MustCompile(`(?m)^PASS tool_deferral .*1 call`).MatchString(stdout) || !strings.Contains(stdout, "save_note") {
		t.Fatalf("plugin check: exit %d\n%s", code, stdout)
	}
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Fatalf("plugin check ran save_note (the notes file exists: %v)", err)
	}

	// Step 5: the guide's tests, with runnertest and agenttest, in the
	// walkthrough's module.
	testGo := blockWith(t, string(doc), "go", "runnertest.New")
	if err := os.WriteFile(filepath.Join(dir, "main_test.go"), []byte(testGo), 0o644); err != nil {
		t.Fatal(err)
	}
	gotest := exec.Command("go", "test", "-count=1", "./...")
	gotest.Dir = dir
	gotest.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := gotest.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok  \texample.com/notes") {
		t.Fatalf("the guide's go test: %v\n%s", err, out)
	}

	stack := agenttest.NewStack(t, strings.ReplaceAll(dexYAML, "./bin/notes", filepath.Join(dir, "bin", "notes")))
	stack.StartWorker()
	session := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCLI(t, append(append([]string{"session"}, args...), "--address", stack.Address(), "--config", stack.ConfigPath)...)
		if code != 0 {
			t.Fatalf("session %v: exit %d\n%s", args, code, stderr)
		}
		return strings.TrimSpace(stdout)
	}
	answered := func(id string) string {
		t.Helper()
		s := stack.WaitForSnapshot("the answer", id, func(s wire.Snapshot) bool {
			return s.State.Status == wire.StatusWaitingForUserMessage && len(s.Messages) > 0 && s.Messages[len(s.Messages)-1].Role == "assistant"
		})
		return s.Messages[len(s.Messages)-1].Text
	}
	id := session("start", "--agent", "notes", "--message", "note: buy milk")
	snap := stack.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if in := snap.PendingInterrupts[0]; in.ToolName != "save_note" {
		t.Fatalf("interrupt %+v", in)
	}
	session("approve", id, snap.PendingInterrupts[0].InterruptID)
	if got := answered(id); got != "Done: saved to notes.txt." {
		t.Errorf("answer = %q", got)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "buy milk\n" {
		t.Errorf("notes file = %q, %v; want the note once", b, err)
	}
	id = session("start", "--agent", "notes", "--message", "one two three")
	if got := answered(id); got != "Your message has 3 words." {
		t.Errorf("answer = %q", got)
	}
}
