package runnerhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-plugin"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// testPluginPath is the testdata/testplugin binary, built once by TestMain.
var testPluginPath string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "runnerhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testPluginPath = filepath.Join(dir, "testplugin")
	build := exec.Command(goCommand(), "build", "-o", testPluginPath, "./testdata/testplugin")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// testContext returns a ctx that ends before the test's deadline.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// logBuffer collects the host's JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until the log holds a line that contains every one of
// parts, or the deadline passes.
func (b *logBuffer) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, line := range strings.Split(b.String(), "\n") {
			if containsAll(line, parts) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line contains %q; log:\n%s", parts, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func newTestHost(t *testing.T) (*Host, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	h := New(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: levelTrace})))
	t.Cleanup(h.Close)
	return h, logs
}

func launch(t *testing.T, h *Host, spec PluginSpec) pluginapi.Runner {
	t.Helper()
	if spec.Command == "" {
		spec.Command = testPluginPath
	}
	ctx := testContext(t)
	if err := h.Launch(ctx, spec); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	r, err := h.Runner(spec.Name)
	if err != nil {
		t.Fatalf("Runner: %v", err)
	}
	return r
}

func turn(agent, text string) pluginapi.TurnContext {
	return pluginapi.TurnContext{
		Agent:     agent,
		SessionID: "s1",
		TurnID:    "turn-1",
		Attempt:   1,
		Messages:  []pluginapi.Message{{Sequence: 1, Role: pluginapi.RoleUser, Text: text, TurnID: "turn-1"}},
	}
}

func runTool(t *testing.T, r pluginapi.Runner, name string) string {
	t.Helper()
	resp, err := r.ExecuteDeferredToolCall(testContext(t), &pluginapi.ExecuteToolRequest{
		Agent:    "a",
		ToolCall: pluginapi.ToolCall{ToolCallID: "c1", ToolName: name, Status: pluginapi.ToolCallApproved},
	})
	if err != nil {
		t.Fatalf("ExecuteDeferredToolCall(%s): %v", name, err)
	}
	if resp.Result == nil {
		t.Fatalf("ExecuteDeferredToolCall(%s) = %+v, want a result", name, resp)
	}
	return resp.Result.Output
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pidEvents records the "test.pid" events of a call.
type pidEvents struct{ pids chan int }

func (e *pidEvents) WriteTextDelta(string)      {}
func (e *pidEvents) WriteReasoningDelta(string) {}
func (e *pidEvents) Heartbeat()                 {}
func (e *pidEvents) WriteEvent(eventType string, payload any) error {
	if eventType != "test.pid" {
		return nil
	}
	raw, _ := payload.(json.RawMessage)
	var p struct{ PID int }
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	e.pids <- p.PID
	return nil
}

func TestLaunchInfoAndCapabilities(t *testing.T) {
	h, logs := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp"})

	info, caps, ok := h.Info("tp")
	if !ok {
		t.Fatal("Info(tp) = false")
	}
	if diff := cmp.Diff(pluginapi.InfoResponse{Name: "testplugin", Version: "1.2.3"}, info); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pluginapi.Capabilities{ToolTaskPolling: true, TranscriptCache: true}, caps); diff != "" {
		t.Errorf("Capabilities (-want +got):\n%s", diff)
	}
	if _, _, ok := h.Info("nope"); ok {
		t.Error("Info(nope) = true")
	}
	logs.waitFor(t, `"msg":"runner plugin started"`, `"plugin":"tp"`)

	ctx := testContext(t)
	if err := h.Ping(ctx, "tp"); err != nil {
		t.Errorf("Ping: %v", err)
	}
	got, err := r.Info(ctx, &pluginapi.InfoRequest{})
	if err != nil || got.Name != "testplugin" {
		t.Errorf("Runner.Info = %+v, %v", got, err)
	}
	// An optional call the plugin lacks fails without a round trip.
	if _, err := r.(pluginapi.InputTokenEstimator).EstimateInputTokens(ctx, &pluginapi.EstimateInputTokensRequest{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("EstimateInputTokens error = %v, want ErrUnsupported", err)
	}
	poll, err := r.(pluginapi.ToolTaskPoller).PollToolTask(ctx, &pluginapi.PollToolTaskRequest{Agent: "a", TaskID: "t1"})
	if err != nil || poll.TaskPending == nil {
		t.Errorf("PollToolTask = %+v, %v; want TaskPending", poll, err)
	}
}

func TestLaunchErrors(t *testing.T) {
	h, _ := newTestHost(t)
	ctx := testContext(t)
	launch(t, h, PluginSpec{Name: "tp"})
	noVenv := filepath.Join(t.TempDir(), ".venv")
	notExecutable := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		spec PluginSpec
		want []string
	}{
		{
			name: "not a plugin",
			spec: PluginSpec{Name: "bad", Command: "/bin/sh", Args: []string{"-c", "echo boom-from-plugin >&2; exit 3"}},
			want: []string{`runner plugin "bad"`, "boom-from-plugin"},
		},
		{
			name: "missing command",
			spec: PluginSpec{Name: "missing", Command: filepath.Join(t.TempDir(), "no-such-plugin")},
			want: []string{`runner plugin "missing": command /`, "no-such-plugin does not exist (build the plugin, or fix plugins.missing.command)"},
		},
		{
			name: "not executable",
			spec: PluginSpec{Name: "noexec", Command: notExecutable},
			want: []string{`runner plugin "noexec": command ` + notExecutable + " is not executable (mode -rw-r--r--; chmod +x it)"},
		},
		{
			name: "a directory",
			spec: PluginSpec{Name: "dir", Command: t.TempDir()},
			want: []string{`runner plugin "dir": command /`, "is a directory, not a program"},
		},
		{
			name: "not on PATH",
			spec: PluginSpec{Name: "path", Command: "dex-no-such-runner-plugin"},
			want: []string{`runner plugin "path": command "dex-no-such-runner-plugin" is not found on PATH`},
		},
		{
			name: "no Python on PATH",
			spec: PluginSpec{Name: "py", Command: "python3.99"},
			want: []string{`runner plugin "py": command "python3.99" is not found on PATH: install Python 3.11 or later, or set plugins.py.venv to the runner's virtualenv`},
		},
		{
			name: "a virtualenv that was never made",
			spec: PluginSpec{Name: "venv", Command: filepath.Join(noVenv, "bin", "python")},
			want: []string{`runner plugin "venv": command ` + noVenv + `/bin/python does not exist: create the virtualenv with "python3 -m venv ` + noVenv + `"`},
		},
		{
			name: "a Python package missing",
			spec: PluginSpec{Name: "nomod", Command: "/bin/sh", Args: []string{"-c", `echo "Traceback (most recent call last):" >&2; echo "ModuleNotFoundError: No module named 'dex_runner'" >&2; exit 1`}},
			want: []string{`runner plugin "nomod"`, `the plugin's Python (/bin/sh) has no module "dex_runner": install the package that provides it`},
		},
		{
			name: "duplicate",
			spec: PluginSpec{Name: "tp", Command: testPluginPath},
			want: []string{`runner plugin "tp" is already launched`},
		},
		{
			name: "reserved env",
			spec: PluginSpec{Name: "env", Command: testPluginPath, Env: []string{"PLUGIN_CLIENT_CERT"}},
			want: []string{`runner plugin "env"`, "PLUGIN_CLIENT_CERT is reserved"},
		},
		{
			name: "bad checksum text",
			spec: PluginSpec{Name: "sum", Command: testPluginPath, SHA256: "abc"},
			want: []string{`runner plugin "sum"`, "not 64 hex digits"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.Launch(ctx, tt.spec)
			if err == nil {
				t.Fatal("Launch succeeded")
			}
			t.Logf("Launch error: %v", err)
			if !containsAll(err.Error(), tt.want) {
				t.Errorf("Launch error = %q, want it to contain %q", err, tt.want)
			}
			if tt.name != "duplicate" {
				if _, err := h.Runner(tt.spec.Name); !errors.Is(err, ErrUnknownPlugin) {
					t.Errorf("Runner after a failed launch: error = %v, want ErrUnknownPlugin", err)
				}
			}
		})
	}
}

func TestEnvAllowList(t *testing.T) {
	t.Setenv("DEX_TEST_ALLOWED", "yes")
	t.Setenv("DEX_TEST_NOT_LISTED", "no")
	t.Setenv("DEX_TEST_UNSET", "")
	os.Unsetenv("DEX_TEST_UNSET")

	h, _ := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp", Env: []string{"DEX_TEST_ALLOWED", "DEX_TEST_UNSET"}})

	var env []string
	if err := json.Unmarshal([]byte(runTool(t, r, "env")), &env); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	// The allow-listed variable that is set, and go-plugin's handshake
	// variables; nothing inherited (no PATH, HOME or DEX_TEST_NOT_LISTED).
	want := []string{
		"DEX_RUNNER_PLUGIN",
		"DEX_TEST_ALLOWED",
		"PLUGIN_CLIENT_CERT",
		"PLUGIN_MAX_PORT",
		"PLUGIN_MIN_PORT",
		"PLUGIN_PROTOCOL_VERSIONS",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("plugin environment names (-want +got):\n%s", diff)
	}
	if !slices.Contains(env, "DEX_TEST_ALLOWED=yes") {
		t.Errorf("plugin environment %q lacks DEX_TEST_ALLOWED=yes", env)
	}
}

func TestPluginOutputIsLoggedAndSecretsRedacted(t *testing.T) {
	const secret = "sk-test-0123456789abcdef"
	t.Setenv("DEX_TEST_API_KEY", secret)
	h, logs := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp", Env: []string{"DEX_TEST_API_KEY"}})
	if err := h.Configure(testContext(t), "tp", "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	// The plugin sees the value...
	if out := runTool(t, r, "env"); !strings.Contains(out, secret) {
		t.Fatalf("the plugin's environment %s lacks the secret", out)
	}
	// ...and logs it on its piped stderr (os.Stderr after Serve) and as an
	// hclog JSON line on its real stderr. Both reach the host's log with the
	// plugin's name, redacted.
	logs.waitFor(t, `"plugin":"tp"`, `"stream":"stderr"`, "configured agent a (protocol 1)")
	logs.waitFor(t, `"plugin":"tp"`, `"stream":"stderr"`, "env dump", "DEX_TEST_API_KEY=<redacted>")
	logs.waitFor(t, `"plugin":"tp"`, `"msg":"env dump"`, "DEX_TEST_API_KEY=<redacted>")
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the host log contains the secret:\n%s", logs.String())
	}
}

// TestPrintBeforeServe launches a plugin that prints to stdout before
// pluginapi.Serve: the first stdout line is go-plugin's handshake, so the
// start fails, and the error says why instead of go-plugin's
// "Unrecognized remote plugin message".
func TestPrintBeforeServe(t *testing.T) {
	const secret = "sk-test-print-0123456789"
	t.Setenv("DEX_TEST_API_KEY", secret)
	long := "x" + strings.Repeat("é", 300)
	tests := []struct {
		name, line, want string
	}{
		{"a log line", "starting my runner v1", `"starting my runner v1"`},
		{"an empty line", "", `""`},
		{"a secret", "key=" + secret, `"key=<redacted>"`},
		{"a long line", long, fmt.Sprintf("%q", long[:199]+"...")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newTestHost(t)
			err := h.Launch(testContext(t), PluginSpec{
				Name: "tp", Command: testPluginPath, Env: []string{"DEX_TEST_API_KEY"},
				Args: []string{"print-before-serve", tt.line},
			})
			if err == nil {
				t.Fatal("Launch succeeded")
			}
			t.Logf("Launch error: %v", err)
			want := "the plugin printed to stdout before pluginapi.Serve: " + tt.want + "; write logs to stderr"
			for _, part := range []string{`runner plugin "tp"`, want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Launch error lacks %q", part)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Unrecognized remote plugin message") {
				t.Errorf("Launch error shows a secret or go-plugin's raw message")
			}
		})
	}
}

// TestPluginStartsInItsDir: a plugin starts in PluginSpec.Dir (the config
// file's directory), so relative paths in its args and runner_config
// resolve there, and in the worker's directory without one.
func TestPluginStartsInItsDir(t *testing.T) {
	dir := t.TempDir()
	h, _ := newTestHost(t)
	ctx := testContext(t)
	if err := h.Launch(ctx, PluginSpec{Name: "tp", Command: testPluginPath, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if err := h.Configure(ctx, "tp", "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	r, err := h.Runner("tp")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(runTool(t, r, "cwd")); got != want {
		t.Errorf("the plugin runs in %s, want %s", got, want)
	}
}

// TestReattachToARunnerInDebugMode starts the test plugin by hand in debug
// mode (DEX_RUNNER_DEBUG=1, as under a debugger), reads the --reattach value
// it prints, and attaches to it: the host's calls reach that very process,
// and closing the host leaves it running.
func TestReattachToARunnerInDebugMode(t *testing.T) {
	cmd, reattach := testpeer.StartDebugRunner(t, testPluginPath)
	if _, err := ParseReattach(reattach); err != nil {
		t.Fatalf("the printed value %q: %v", reattach, err)
	}

	h, _ := newTestHost(t)
	ctx := testContext(t)
	if err := h.Launch(ctx, PluginSpec{Name: "tp", Command: "/nonexistent/never-started", Reattach: reattach}); err != nil {
		t.Fatal(err)
	}
	if err := h.Configure(ctx, "tp", "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	r, err := h.Runner("tp")
	if err != nil {
		t.Fatal(err)
	}
	if got := runTool(t, r, "pid"); got != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("the call reached pid %s, want the debugged runner's %d", got, cmd.Process.Pid)
	}
	h.Close()
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("closing the host stopped the debugged runner: %v", err)
	}
}

func TestParseReattach(t *testing.T) {
	for _, bad := range []string{"", "4242", "4242:unix", "x:unix:/tmp/p", "0:unix:/tmp/p", "4242:udp:1.2.3.4:5", "4242:tcp:nohost"} {
		if _, err := ParseReattach(bad); err == nil {
			t.Errorf("ParseReattach(%q) succeeded", bad)
		}
	}
	rc, err := ParseReattach("4242:tcp:127.0.0.1:40001")
	if err != nil || rc.Pid != 4242 || rc.Addr.String() != "127.0.0.1:40001" || rc.Addr.Network() != "tcp" {
		t.Errorf("ParseReattach = %+v, %v", rc, err)
	}
}

// TestUnknownContractVersionIsRefused launches a runner whose handshake
// names runner contract version 2: the host refuses it before it connects,
// with an error that says which versions each side speaks and what to do.
func TestUnknownContractVersionIsRefused(t *testing.T) {
	h, _ := newTestHost(t)
	err := h.Launch(testContext(t), PluginSpec{Name: "tp", Command: testPluginPath, Args: []string{"contract-version", "2"}})
	if err == nil {
		t.Fatal("Launch succeeded")
	}
	t.Logf("Launch error: %v", err)
	for _, part := range []string{`runner plugin "tp"`, "the runner speaks runner contract version 2; this worker speaks version 1 (dex.runner.v1)", "docs/runners.md"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Launch error lacks %q", part)
		}
	}
	if strings.Contains(err.Error(), "incompatible API version") {
		t.Errorf("Launch error shows go-plugin's raw message")
	}
}

// TestExitLogLevel checks the level of the log record of a plugin
// process's exit: INFO when the host stopped it, whatever its exit status;
// WARN for SIGTERM from elsewhere; ERROR for a crash.
func TestExitLogLevel(t *testing.T) {
	exitRecords := func(logs *logBuffer) []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if rec["msg"] == "plugin process exited" {
				out = append(out, rec)
			}
		}
		return out
	}
	t.Run("stopped by the host", func(t *testing.T) {
		h, logs := newTestHost(t)
		launch(t, h, PluginSpec{Name: "tp"})
		// The process exits with status 3 once the host asks it to stop, as
		// a runner whose shutdown fails would.
		if err := h.Configure(testContext(t), "tp", "a", []byte(`{"exit_status":3}`)); err != nil {
			t.Fatal(err)
		}
		h.Close() // returns once go-plugin has logged the exit
		recs := exitRecords(logs)
		if len(recs) != 1 || recs[0]["level"] != "INFO" || recs[0]["error"] != "exit status 3" || recs[0]["stopped_by_host"] != true {
			t.Errorf("exit records = %v, want one at INFO with exit status 3 and stopped_by_host", recs)
		}
		if strings.Contains(logs.String(), `"level":"ERROR"`) {
			t.Errorf("a stop by the host logged an error:\n%s", logs.String())
		}
	})
	for _, tt := range []struct {
		name   string
		signal syscall.Signal
		level  string
		error  string
	}{
		{"crash", syscall.SIGKILL, "ERROR", "signal: killed"},
		{"SIGTERM from elsewhere", syscall.SIGTERM, "WARN", "signal: terminated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newTestHost(t)
			r := launch(t, h, PluginSpec{Name: "tp"})
			pid, err := strconv.Atoi(runTool(t, r, "pid"))
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, tt.signal); err != nil {
				t.Fatal(err)
			}
			logs.waitFor(t, `"msg":"plugin process exited"`)
			recs := exitRecords(logs)
			if len(recs) != 1 || recs[0]["level"] != tt.level || recs[0]["error"] != tt.error || recs[0]["stopped_by_host"] != nil {
				t.Errorf("exit records = %v, want one at %s with %q", recs, tt.level, tt.error)
			}
		})
	}
}

func TestChecksum(t *testing.T) {
	data, err := os.ReadFile(testPluginPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	other := sha256.Sum256([]byte("another binary"))
	bad := hex.EncodeToString(other[:])

	t.Run("mismatch refused", func(t *testing.T) {
		h, _ := newTestHost(t)
		err := h.Launch(testContext(t), PluginSpec{Name: "tp", Command: testPluginPath, SHA256: bad})
		if !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			t.Fatalf("Launch error = %v, want ErrChecksumsDoNotMatch", err)
		}
		t.Logf("Launch error: %v", err)
		for _, want := range []string{`runner plugin "tp"`, good, bad} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Launch error = %q, want it to contain %q", err, want)
			}
		}
	})
	t.Run("match accepted", func(t *testing.T) {
		h, _ := newTestHost(t)
		r := launch(t, h, PluginSpec{Name: "tp", SHA256: strings.ToUpper(good)})
		if out := runTool(t, r, "pid"); out == "" {
			t.Error("no pid")
		}
	})
}

func TestConfigure(t *testing.T) {
	h, _ := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp"})
	ctx := testContext(t)

	err := h.Configure(ctx, "tp", "b", []byte(`{"fail":"model.name is required"}`))
	for _, want := range []string{`runner plugin "tp"`, `Configure agent "b"`, "model.name is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Configure error = %v, want it to contain %q", err, want)
		}
	}
	if errors.Is(err, ErrPluginShutdown) || errors.Is(err, ErrMalformedOutcome) {
		t.Errorf("Configure error %v is classified; a runner's own error should not be", err)
	}
	if err := h.Configure(ctx, "nope", "a", nil); !errors.Is(err, ErrUnknownPlugin) {
		t.Errorf("Configure(nope) error = %v, want ErrUnknownPlugin", err)
	}
	if err := h.Configure(ctx, "tp", "a", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := h.Tools("tp", "a"); got != nil {
		t.Errorf("Tools(tp, a) = %q for a plugin that reports none, want nil (unknown)", got)
	}
	if err := h.Configure(ctx, "tp", "c", []byte(`{"tools":["lookup","refund"]}`)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"lookup", "refund"}, h.Tools("tp", "c")); diff != "" {
		t.Errorf("Tools(tp, c) (-want +got):\n%s", diff)
	}
	cr, err := r.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "c", RunnerConfig: []byte(`{"tools":["lookup"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"lookup"}, cr.Tools); diff != "" {
		t.Errorf("handle Configure tools (-want +got):\n%s", diff)
	}
	if got := h.Tools("tp", "b"); got != nil {
		t.Errorf("Tools(tp, b) = %q after a refused Configure, want nil", got)
	}
	if got := h.Tools("nope", "a"); got != nil {
		t.Errorf("Tools(nope, a) = %q, want nil", got)
	}

	resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn("a", "hi")})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.TurnCompleted.NewMessages[0].Text; !strings.HasSuffix(got, ` config={"n":1}`) {
		t.Errorf("RunModelStep text = %q, want the agent's config", got)
	}
	// The failed configuration was not remembered.
	_, err = r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn("b", "hi")})
	if err == nil || !strings.Contains(err.Error(), `agent "b" is not configured`) {
		t.Errorf("RunModelStep for agent b: error = %v, want not configured", err)
	}
}

func TestPluginKilledMidCallIsRelaunched(t *testing.T) {
	h, logs := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp"})
	ctx := testContext(t)
	if err := h.Configure(ctx, "tp", "a", []byte(`{"greeting":"hello"}`)); err != nil {
		t.Fatal(err)
	}

	events := &pidEvents{pids: make(chan int, 1)}
	errc := make(chan error, 1)
	go func() {
		_, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn("a", "hang"), Events: events})
		errc <- err
	}()
	var pid int
	select {
	case pid = <-events.pids:
	case err := <-errc:
		t.Fatalf("RunModelStep returned before it hung: %v", err)
	case <-ctx.Done():
		t.Fatal("no pid event")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Logf("RunModelStep error: %v", err)
		if !errors.Is(err, ErrPluginShutdown) {
			t.Fatalf("RunModelStep error = %v, want ErrPluginShutdown", err)
		}
		if !strings.Contains(err.Error(), `runner plugin "tp": RunModelStep`) {
			t.Errorf("RunModelStep error = %q, want it to name the plugin and the call", err)
		}
	case <-ctx.Done():
		t.Fatal("RunModelStep did not return after the kill")
	}

	// The next call relaunches the plugin and re-sends the configuration
	// before RunModelStep.
	resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn("a", "hi")})
	if err != nil {
		t.Fatalf("RunModelStep after the crash: %v", err)
	}
	text := resp.TurnCompleted.NewMessages[0].Text
	want := ` config={"greeting":"hello"}`
	if !strings.HasSuffix(text, want) {
		t.Errorf("RunModelStep text = %q, want suffix %q", text, want)
	}
	if strings.HasPrefix(text, "pid="+strconv.Itoa(pid)+" ") {
		t.Errorf("RunModelStep text = %q came from the killed process %d", text, pid)
	}
	if n := h.Restarts(); n != 1 {
		t.Errorf("Restarts() = %d after one relaunch", n)
	}
	logs.waitFor(t, `"plugin":"tp"`, "runner plugin process is gone")
	if got := strings.Count(logs.String(), `"msg":"runner plugin started"`); got != 2 {
		t.Errorf("%d starts logged, want 2", got)
	}
}

// copyFile copies src to dst with mode 0o755, replacing dst (a running
// executable cannot be rewritten in place).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(dst)
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFailedRelaunchBacksOff(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "plugin")
	broken := filepath.Join(dir, "broken.sh")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho relaunch-broken >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, testPluginPath, bin)

	h, _ := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp", Command: bin})
	ctx := testContext(t)
	if err := h.Configure(ctx, "tp", "a", []byte(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(runTool(t, r, "pid"))
	if err != nil {
		t.Fatal(err)
	}

	// The process dies between calls, and its binary is broken.
	copyFile(t, broken, bin)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	old := h.plugins["tp"].proc
	h.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !old.client.Exited() {
		if time.Now().After(deadline) {
			t.Fatal("go-plugin did not notice the exit")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := h.Ping(ctx, "tp"); !errors.Is(err, ErrPluginShutdown) {
		t.Errorf("Ping after the crash: error = %v, want ErrPluginShutdown", err)
	}

	// The next call waits out the first backoff, tries one relaunch and
	// reports its failure.
	_, err = r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn("a", "hi")})
	t.Logf("first call: %v", err)
	if !errors.Is(err, ErrPluginShutdown) || !containsAll(err.Error(), []string{`runner plugin "tp"`, "relaunch-broken"}) {
		t.Errorf("first call after the crash: error = %v, want ErrPluginShutdown with the launch failure", err)
	}
	// A call whose deadline ends before the next attempt fails at once.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = r.RunModelStep(short, &pluginapi.RunModelStepRequest{Turn: turn("a", "hi")})
	t.Logf("short call: %v", err)
	if !errors.Is(err, ErrPluginShutdown) || !strings.Contains(err.Error(), "restarting in") {
		t.Errorf("call during the backoff: error = %v, want ErrPluginShutdown (restarting in ...)", err)
	}

	// Once the binary is fixed, a call relaunches it with the configuration.
	copyFile(t, testPluginPath, bin)
	resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn("a", "hi")})
	if err != nil {
		t.Fatalf("call after the fix: %v", err)
	}
	if got := resp.TurnCompleted.NewMessages[0].Text; !strings.HasSuffix(got, ` config={"v":2}`) {
		t.Errorf("text = %q, want the re-sent config", got)
	}
	if err := h.Ping(ctx, "tp"); err != nil {
		t.Errorf("Ping after the relaunch: %v", err)
	}
}

func TestCloseKillsProcesses(t *testing.T) {
	h, _ := newTestHost(t)
	r1 := launch(t, h, PluginSpec{Name: "one"})
	r2 := launch(t, h, PluginSpec{Name: "two"})
	var pids []int
	for _, r := range []pluginapi.Runner{r1, r2} {
		pid, err := strconv.Atoi(runTool(t, r, "pid"))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}

	h.Close()
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("process %d still exists after Close", pid)
		}
	}
	_, err := r1.BuildUserMessage(testContext(t), &pluginapi.BuildUserMessageRequest{Agent: "a", Text: "hi"})
	if !errors.Is(err, ErrPluginShutdown) {
		t.Errorf("call after Close: error = %v, want ErrPluginShutdown", err)
	}
	if err := h.Launch(testContext(t), PluginSpec{Name: "three", Command: testPluginPath}); err == nil {
		t.Error("Launch after Close succeeded")
	}
	h.Close() // idempotent
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{7, 6400 * time.Millisecond},
		{8, 10 * time.Second},
		{100, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.failures), func(t *testing.T) {
			if got := backoff(tt.failures); got != tt.want {
				t.Errorf("backoff(%d) = %v, want %v", tt.failures, got, tt.want)
			}
		})
	}
}

// TestMessagesPastTheLimit: a request or an answer larger than the host's
// gRPC limit fails with ErrMessageTooLarge, which says so, instead of
// gRPC's bare "received message larger than max".
func TestMessagesPastTheLimit(t *testing.T) {
	h, _ := newTestHost(t)
	r := launch(t, h, PluginSpec{Name: "tp", MaxMessageBytes: 64 << 10})
	ctx := testContext(t)
	_, err := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "a", Text: strings.Repeat("x", 80<<10)})
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "65536 bytes") {
		t.Errorf("BuildUserMessage with 80 KiB: error = %v, want ErrMessageTooLarge naming the limit", err)
	}
	if resp, err := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "a", Text: "small"}); err != nil || resp.Message.Text != "small" {
		t.Errorf("a small call after them: %v", err)
	}
}
