package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// devRun is a `dex-agent-worker dev` process a test started.
type devRun struct {
	cmd     *exec.Cmd
	logPath string // its stderr
	done    chan struct{}
	err     error // what cmd.Wait returned, once done is closed
}

// startDev runs `bin dev args...` in dir (the test's own directory when
// "") with env (the test's environment when nil), and returns once dev
// printed its whole banner, with the banner.
func startDev(t *testing.T, bin, dir string, env []string, args ...string) (*devRun, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dev"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	d := &devRun{cmd: cmd, logPath: filepath.Join(t.TempDir(), "dev.log"), done: make(chan struct{})}
	logf, err := os.Create(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-d.done
	})
	banner := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Stop with Ctrl-C") {
				banner <- b.String()
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		d.err = cmd.Wait()
		close(d.done)
	}()
	select {
	case b := <-banner:
		return d, b
	case <-d.done:
		t.Fatalf("dev %v exited before its banner: %v\n%s", args, d.err, d.log(t))
	case <-time.After(2 * time.Minute):
		t.Fatalf("dev %v printed no banner in 2 minutes\n%s", args, d.log(t))
	}
	return nil, ""
}

// log returns what dev wrote to stderr so far.
func (d *devRun) log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stop stops dev as Ctrl-C does, waits for it, and returns how it exited.
func (d *devRun) stop(t *testing.T) error {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		return d.err
	case <-time.After(time.Minute):
		t.Fatal("dev did not stop within a minute of SIGINT")
		return nil
	}
}

// TestDevResumesSessionsAfterARestart runs the real binary: a session waits
// for approval, dev stops on SIGINT, the operator adds an approval
// deadline to the config, dev starts again on the same data dir, and the
// approval completes the refund. The session keeps the settings it started
// with (no deadline), so its history replays under the changed config.
// The second dev runs with --trace: it prints the turn's span tree when
// the turn ends, though the turn started in the first dev.
func TestDevResumesSessionsAfterARestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dev.yaml")
	writeConfig := func(extra string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: %s}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
%s`, plugin, filepath.Join(dir, "orders.json"), extra)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig("")
	port := agenttest.FreePort(t)
	args := []string{"--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--temporal-port", fmt.Sprint(port), "--ui-port", "0", "--http", "127.0.0.1:0"}
	dev, _ := startDev(t, bin, "", nil, args...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sessions := devSessions(t, ctx, port)
	id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "refund order 5"})
	if err != nil {
		t.Fatal(err)
	}
	var snap wire.Snapshot
	waitSnap := func(what string, cond func(wire.Snapshot) bool) {
		t.Helper()
		err := agenttest.WaitFor(ctx, what, time.Minute, func() (bool, error) {
			s, err := sessions.GetAgentSnapshot(ctx, id)
			snap = s
			return err == nil && cond(s), err
		})
		if err != nil {
			t.Fatalf("%v; snapshot %+v", err, snap)
		}
	}
	waitSnap("a pending approval", func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	interrupt := snap.PendingInterrupts[0].InterruptID

	if err := dev.stop(t); err != nil {
		t.Fatalf("dev exited with %v after SIGINT, want 0", err)
	}

	// A config change while the session waits: sessions started from now
	// on get a deadline; this one replays with its own settings.
	writeConfig("    interrupt_deadline: 1h\n")
	restarted, _ := startDev(t, bin, "", nil, append(args, "--trace")...)
	waitSnap("the approval still pending after the restart", func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if d := snap.PendingInterrupts[0].Deadline; d != "" {
		t.Errorf("the pending approval got the new config's deadline %s; want the session's own (none)", d)
	}
	ok, err := sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: interrupt, Approved: true})
	if err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	waitSnap("the final answer", func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && s.Messages[len(s.Messages)-1].Role == "assistant"
	})
	if got := snap.Messages[len(snap.Messages)-1].Text; !strings.HasPrefix(got, "Done. Refunded $47.50 of order 5") {
		t.Errorf("final answer = %q", got)
	}
	err = agenttest.WaitFor(ctx, "the turn's trace on dev's stderr", time.Minute, func() (bool, error) {
		return strings.Contains(restarted.log(t), "  invoke_agent orders"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if log := restarted.log(t); !regexp.MustCompile(`(?m)^      execute_tool refund_order .*tool_call.status=succeeded`).MatchString(log) ||
		!regexp.MustCompile(`(?m)^  invoke_agent orders  (\d+h)?(\d+m)?[\d.]+m?s  turn.id=turn-1`).MatchString(log) {
		t.Errorf("no turn tree with the refund on stderr:\n%s", log)
	}

	// A session started after the change gets the new deadline.
	id, err = sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "refund order 3"})
	if err != nil {
		t.Fatal(err)
	}
	waitSnap("a pending approval in the new session", func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if snap.PendingInterrupts[0].Deadline == "" {
		t.Error("a session started after the config change has no approval deadline")
	}
}

// TestDevDataDirSetsDEX_DATA_DIR checks that the config sees --data-dir as
// ${DEX_DATA_DIR}, over a DEX_DATA_DIR the user set.
func TestDevDataDirSetsDEX_DATA_DIR(t *testing.T) {
	t.Setenv("DEX_DATA_DIR", "/somewhere/else")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(cfgPath, []byte(`
plugins:
  orders: {command: "${DEX_DATA_DIR}/no-such-plugin"}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "${DEX_DATA_DIR:-.dex}/orders.json"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, dataDir := range []string{"data-a", filepath.Join(dir, "data-b")} {
		cfg, abs, err := loadDevConfig(cfgPath, dataDir)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, filepath.Base(dataDir)); abs != want {
			t.Errorf("data dir %s: abs = %s, want %s", dataDir, abs, want)
		}
		if got, want := cfg.Agents[0].RunnerConfig["store_path"], filepath.Join(abs, "orders.json"); got != want {
			t.Errorf("data dir %s: store_path = %v, want %s", dataDir, got, want)
		}
		if got := os.Getenv("DEX_DATA_DIR"); got != abs {
			t.Errorf("DEX_DATA_DIR = %q, want %q", got, abs)
		}
	}
	if testing.Short() {
		return
	}
	// Through the command: the plugin path names the flag's data dir, which
	// shows the config was loaded after DEX_DATA_DIR was set.
	t.Setenv("DEX_DATA_DIR", "/somewhere/else")
	dataDir := filepath.Join(dir, "data-c")
	_, stderr, code := runCLI(t, "dev", "--config", cfgPath, "--data-dir", dataDir,
		"--temporal-port", fmt.Sprint(agenttest.FreePort(t)), "--ui-port", "0", "--http", "127.0.0.1:0")
	want := filepath.Join(dataDir, "no-such-plugin") + " does not exist"
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--data-dir overrides DEX_DATA_DIR") {
		t.Errorf("dev: exit %d, stderr lacks %q or the override warning:\n%s", code, want, stderr)
	}
}

type fakeEngine struct{}

func (fakeEngine) FrontendAddress() string { return "127.0.0.1:7233" }
func (fakeEngine) Namespace() string       { return "default" }
func (fakeEngine) UIAddress() string       { return "" }

// TestDevTokenRule checks which tokens dev serves the API with: the
// config's alone when it declares some (no unscoped token beside them),
// otherwise --api-token, $DEX_API_TOKEN or a generated one; and that the
// banner says which, without a config token's value.
func TestDevTokenRule(t *testing.T) {
	const (
		adminValue  = "config-admin-0123456789abcdef"
		tenantValue = "config-tenant-0123456789abcdef"
		flagValue   = "flag-0123456789abcdef"
		envValue    = "env-0123456789abcdef"
	)
	t.Setenv("DEX_TEST_ADMIN_TOKEN", adminValue)
	scoped, err := config.LoadBytes([]byte(`
plugins: {p: {command: x}}
agents: [{name: orders, flow_type: OrdersAgent, runner: p}]
http:
  auth:
    tokens:
      - {name: admin, token: "${DEX_TEST_ADMIN_TOKEN}"}
      - {token: "`+tenantValue+`", session_prefix: u1}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := config.LoadBytes([]byte("plugins: {p: {command: x}}\nagents: [{name: orders, flow_type: OrdersAgent, runner: p}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cfg        *config.Config
		flag       string
		flagSet    bool
		env        string
		wantTokens []string // values dev adds
		wantSource string
		wantErr    string
	}{
		{name: "config tokens", cfg: scoped, env: envValue, wantSource: "from the config (2 token(s): admin, tokens[1])"},
		{name: "config tokens and --api-token", cfg: scoped, flag: flagValue, flagSet: true,
			wantErr: "--api-token cannot be used with this config: it declares http.auth.tokens (2 token(s): admin, tokens[1])"},
		{name: "flag", cfg: plain, flag: flagValue, flagSet: true, env: envValue, wantTokens: []string{flagValue}, wantSource: "from --api-token"},
		{name: "empty flag", cfg: plain, flagSet: true, wantErr: "--api-token is empty"},
		{name: "environment", cfg: plain, env: envValue, wantTokens: []string{envValue}, wantSource: "from $DEX_API_TOKEN"},
		{name: "generated", cfg: plain, wantSource: "generated and kept in {{FILE}} (printed below)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokenFile := filepath.Join(t.TempDir(), "data", "api-token")
			tt.wantSource = strings.ReplaceAll(tt.wantSource, "{{FILE}}", tokenFile)
			access, err := devAccess(tt.cfg, tt.flag, tt.flagSet, tt.env, tokenFile, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				for _, v := range []string{adminValue, tenantValue, flagValue} {
					if strings.Contains(err.Error(), v) {
						t.Errorf("the error shows a token value: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var values []string
			for _, tok := range access.tokens {
				values = append(values, tok.Value)
				if tok.SessionPrefix != "" || len(tok.Agents) != 0 {
					t.Errorf("dev token %+v is scoped", tok)
				}
			}
			if tt.name == "generated" {
				if len(values) != 1 || len(values[0]) != 48 || !access.generated {
					t.Fatalf("generated tokens = %q", values)
				}
				tt.wantTokens = values
			}
			if !slices.Equal(values, tt.wantTokens) || access.source != tt.wantSource {
				t.Errorf("tokens %q from %q, want %q from %q", values, access.source, tt.wantTokens, tt.wantSource)
			}
			var out bytes.Buffer
			printBanner(&globals{stdout: &out}, tt.cfg, fakeEngine{}, "/data", false, "dev.yaml", time.Second, "127.0.0.1:8080", access)
			banner := out.String()
			if !strings.Contains(banner, "  API token          "+tt.wantSource+"\n") {
				t.Errorf("the banner does not say the token is %s:\n%s", tt.wantSource, banner)
			}
			for _, v := range []string{adminValue, tenantValue} {
				if strings.Contains(banner, v) {
					t.Errorf("the banner shows a config token's value:\n%s", banner)
				}
			}
			if exported := strings.Contains(banner, "export DEX_API_TOKEN="+strings.Join(values, "")); exported != access.generated {
				t.Errorf("banner exports the token: %v, generated: %v\n%s", exported, access.generated, banner)
			}
		})
	}
}

// TestDevKeepsItsToken: the token dev generates is kept in the data dir
// (mode 0600) and served again by the next dev, so tabs and shells keep
// working across restarts; --new-token replaces it, and a file dev did not
// write is refused by name, not served.
func TestDevKeepsItsToken(t *testing.T) {
	cfg, err := config.LoadBytes([]byte("plugins: {p: {command: x}}\nagents: [{name: orders, flow_type: OrdersAgent, runner: p}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "data", "api-token")
	first, err := devAccess(cfg, "", false, "", file, false)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
	if dir, err := os.Stat(filepath.Dir(file)); err != nil || dir.Mode().Perm() != 0o700 {
		t.Errorf("the data dir made for the token: %v %v, want mode 0700", dir.Mode().Perm(), err)
	}
	again, err := devAccess(cfg, "", false, "", file, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.token != first.token || again.source != "kept in "+file+" (--new-token replaces it)" || !again.generated {
		t.Errorf("second start: token %q from %q, want the first one (%q) kept", again.token, again.source, first.token)
	}
	// The environment still wins over the kept token, and leaves it be.
	if env, err := devAccess(cfg, "", false, "env-0123456789abcdef", file, false); err != nil || env.token != "env-0123456789abcdef" {
		t.Errorf("with $DEX_API_TOKEN: %+v %v", env, err)
	}
	rotated, err := devAccess(cfg, "", false, "", file, true)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.token == first.token || len(rotated.token) != 48 {
		t.Errorf("--new-token kept %q", rotated.token)
	}
	if kept, err := devAccess(cfg, "", false, "", file, false); err != nil || kept.token != rotated.token {
		t.Errorf("after --new-token: %q %v, want the new token", kept.token, err)
	}
	// A loose mode is tightened; a file dev did not write is refused.
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := devAccess(cfg, "", false, "", file, false); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after a start: %v, want 0600", fi.Mode().Perm())
	}
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := devAccess(cfg, "", false, "", file, false); err == nil || !strings.Contains(err.Error(), file+" does not hold a token dev made") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a foreign token file: %v", err)
	}
}

// TestDevRefusesAPITokenBesideConfigTokens runs the command: the error
// comes before anything starts.
func TestDevRefusesAPITokenBesideConfigTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(cfg, []byte(`
plugins: {p: {command: /bin/true}}
agents: [{name: orders, flow_type: OrdersAgent, runner: p}]
http:
  auth:
    tokens: [{name: tenant, token: "tenant-0123456789abcdef", session_prefix: u1}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "dev", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--api-token", "flag-0123456789abcdef")
	if code != 1 || !strings.Contains(stderr, "--api-token cannot be used with this config: it declares http.auth.tokens (1 token(s): tenant)") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("dev created its data dir before refusing the flag: %v", err)
	}
}

// TestDevBannerShowsHTTPS checks the banner's links for an API on TLS.
func TestDevBannerShowsHTTPS(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes([]byte(`
plugins: {p: {command: x}}
agents: [{name: orders, flow_type: OrdersAgent, runner: p}]
http:
  tls: {cert_file: /etc/dex/server.pem, key_file: /etc/dex/server.key}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printBanner(&globals{stdout: &out}, cfg, fakeEngine{}, "/data", false, "dev.yaml", time.Second, "127.0.0.1:8443", apiAccess{source: "generated (printed below)", token: "t", generated: true})
	if !strings.Contains(out.String(), "  HTTP API           https://127.0.0.1:8443/v1") || strings.Contains(out.String(), "http://127.0.0.1:8443") {
		t.Errorf("banner:\n%s", out.String())
	}
}

// TestBannerMarksANewDataDir: a data dir dev has just created is marked
// new, so a dev started from another directory (a relative --data-dir)
// does not look like lost sessions.
func TestBannerMarksANewDataDir(t *testing.T) {
	cfg, err := config.LoadBytes([]byte("agents: [{name: a, flow_type: A, runner: r}]\nplugins: {r: {command: /bin/true}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, fresh := range []bool{true, false} {
		var out strings.Builder
		printBanner(&globals{stdout: &out}, cfg, fakeEngine{}, "/data", fresh, "dev.yaml", time.Second, "127.0.0.1:8080", apiAccess{source: "generated", token: "t", generated: true})
		if got := strings.Contains(out.String(), "(new: no sessions yet; --data-dir is relative to the current directory)"); got != fresh {
			t.Errorf("fresh %v: the banner marks it new: %v\n%s", fresh, got, out.String())
		}
	}
}

// TestDevReattachesToARunnerInDebugMode starts the orders runner by hand in
// debug mode, as under a debugger, and dev with --reattach: the session's
// model and tool calls reach that process, which dev never started.
func TestDevReattachesToARunnerInDebugMode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	dir := t.TempDir()

	runner, reattach := testpeer.StartDebugRunner(t, plugin)

	cfg := filepath.Join(dir, "dev.yaml")
	// The command does not exist: dev must not start it.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: %s}
    tool_policies:
      lookup_order: {effect: read}
`, filepath.Join(dir, "not-built"), filepath.Join(dir, "orders.json"))), 0o644); err != nil {
		t.Fatal(err)
	}
	port := agenttest.FreePort(t)
	dev, _ := startDev(t, bin, "", nil, "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--temporal-port", fmt.Sprint(port),
		"--ui-port", "0", "--http", "127.0.0.1:0", "--reattach", "orders="+reattach)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sessions := devSessions(t, ctx, port)
	id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "look up order 3"})
	if err != nil {
		t.Fatal(err)
	}
	err = agenttest.WaitFor(ctx, "the answer", time.Minute, func() (bool, error) {
		s, err := sessions.GetAgentSnapshot(ctx, id)
		return err == nil && s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && len(s.Messages) > 2, err
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, dev.log(t))
	}
	if !strings.Contains(dev.log(t), "attaching to a runner in debug mode") {
		t.Errorf("dev did not say it attached:\n%s", dev.log(t))
	}
	if _, err := os.Stat(filepath.Join(dir, "orders.json")); err != nil {
		t.Errorf("the debugged runner did not serve the turn (no store): %v", err)
	}
	if err := dev.stop(t); err != nil {
		t.Errorf("dev exited with %v", err)
	}
	if err := runner.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("stopping dev stopped the debugged runner: %v", err)
	}
}

// devSessions is a session client of the engine dev runs on port.
func devSessions(t *testing.T, ctx context.Context, port int) *client.AgentSessionClient {
	t.Helper()
	tc, err := temporalclient.DialContext(ctx, temporalclient.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return client.New(tc, "default", "")
}

// TestDevRunsAPythonRunner: dev runs a Python runner from the config
// (command: python with the SDK's virtualenv as venv) and a session on it
// answers.
func TestDevRunsAPythonRunner(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	sdk := pythonSDK(t, "dex_runner")
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	dir := t.TempDir()
	cfg := pythonEchoConfig(t, sdk, dir, "{}")
	port := agenttest.FreePort(t)
	dev, _ := startDev(t, bin, "", nil, "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--temporal-port", fmt.Sprint(port),
		"--ui-port", "0", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sessions := devSessions(t, ctx, port)
	id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "EchoAgent", InitialMessage: "hello, Python"})
	if err != nil {
		t.Fatal(err)
	}
	err = agenttest.WaitFor(ctx, "the answer", time.Minute, func() (bool, error) {
		s, err := sessions.GetAgentSnapshot(ctx, id)
		return err == nil && s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && len(s.Messages) == 2 &&
			s.Messages[1].Text == "hello, Python", err
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, dev.log(t))
	}
	if err := dev.stop(t); err != nil {
		t.Errorf("dev exited with %v", err)
	}
}

// TestDevRunsTheFrameworkExamples runs make dev-frameworks's config
// (configs/frameworks.yaml) as it is: each framework example's orders agent, on its
// scripted model, looks order 7 up, waits for the refund's approval, and
// once approved refunds it and answers.
func TestDevRunsTheFrameworkExamples(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	pythonSDK(t, "dex_runner.openai_agents", "dex_runner.pydantic_ai", "dex_runner.langgraph", "dex_runner.google_adk", "dex_runner.claude_agent_sdk")
	if _, err := os.Stat(filepath.Join("..", "..", "examples", "orders-openai-agents-ts", "dist", "main.js")); err != nil {
		testpeer.Missing(t, "the build of examples/orders-openai-agents-ts", "bash examples/orders-openai-agents-ts/install.sh (make test-peers)")
	}
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	dir := t.TempDir()
	cfg, err := filepath.Abs(filepath.Join("..", "..", "configs", "frameworks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	port := agenttest.FreePort(t)
	dev, _ := startDev(t, bin, "", nil, "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--temporal-port", fmt.Sprint(port),
		"--ui-port", "0", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sessions := devSessions(t, ctx, port)
	for _, flow := range []string{"OrdersOpenAIAgents", "OrdersPydanticAI", "OrdersLangGraph", "OrdersGoogleADK", "OrdersClaudeAgentSDK", "OrdersOpenAIAgentsTS"} {
		id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: flow, InitialMessage: "refund order 7"})
		if err != nil {
			t.Fatal(err)
		}
		var snap wire.Snapshot
		wait := func(what string, ok func(wire.Snapshot) bool) {
			t.Helper()
			err := agenttest.WaitFor(ctx, flow+": "+what, 2*time.Minute, func() (bool, error) {
				s, err := sessions.GetAgentSnapshot(ctx, id)
				snap = s
				return err == nil && s.State != nil && ok(s), err
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, dev.log(t))
			}
		}
		wait("the refund's approval", func(s wire.Snapshot) bool {
			return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].ToolName == "refund_order"
		})
		if got := snap.PendingInterrupts[0].Arguments; !strings.Contains(string(got), `"amount_cents": 6250`) && !strings.Contains(string(got), `"amount_cents":6250`) {
			t.Errorf("%s: the refund's arguments are %s, want order 7's total", flow, got)
		}
		if ok, err := sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
			t.Fatalf("%s: approve: %v %v", flow, ok, err)
		}
		wait("the answer", func(s wire.Snapshot) bool {
			return s.State.Status == wire.StatusWaitingForUserMessage && s.State.ActiveTurnID == ""
		})
		if last := snap.Messages[len(snap.Messages)-1]; last.Role != "assistant" || last.Text != "Refunded $62.50 for order 7." {
			t.Errorf("%s: the last message is %+v", flow, last)
		}
	}
	if err := dev.stop(t); err != nil {
		t.Errorf("dev exited with %v", err)
	}
}

// TestDevNamesTheFlagOfABusyPort: a dev whose port another process holds
// (often another dev) fails with the flag that moves it.
func TestDevNamesTheFlagOfABusyPort(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(cfg, []byte("plugins: {p: {command: /bin/true}}\nagents: [{name: a, flow_type: A, runner: p}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--temporal-port", fmt.Sprint(port), "--ui-port", "0"}, fmt.Sprintf("or start this one with another --temporal-port (the Temporal frontend's port %d)", port)},
		{[]string{"--temporal-port", "0", "--ui-port", fmt.Sprint(port)}, fmt.Sprintf("or start this one with another --ui-port (the Temporal Web UI's port %d; 0 turns the UI off)", port)},
	} {
		_, stderr, code := runCLI(t, append([]string{"dev", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--http", "127.0.0.1:0"}, tt.flags...)...)
		if code == 0 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "often another dev") {
			t.Errorf("dev %v: exit %d\n%s", tt.flags, code, stderr)
		}
	}
	_, err = net.Listen("tcp", held.Addr().String())
	if err == nil {
		t.Fatal("the port is free")
	}
	got := explainBusyPort(fmt.Errorf("serve the HTTP API on %s: %w", held.Addr(), err), dir).Error()
	if !strings.Contains(got, "or start this one with another --http (the HTTP API's address; 127.0.0.1:0 picks a free port)") {
		t.Errorf("the HTTP API's busy port: %s", got)
	}
	if other := errors.New("no such file"); explainBusyPort(other, dir) != other {
		t.Error("an error that is not a busy port is changed")
	}
}
