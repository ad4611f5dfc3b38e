package agenttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/devserver"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Stack is a private engine for one test, and the worker processes that
// serve it. The engine runs in the test process on a SQLite file in Dir; each
// worker runs in a child process in its own process group, so the test can
// SIGKILL it (and its runner plugins) at an exact moment.
type Stack struct {
	t          testing.TB
	Dir        string
	ConfigPath string
	server     *devserver.Server
	port       int
	Client     temporalclient.Client
	Sessions   *client.AgentSessionClient
	mu         sync.Mutex
	workers    []*Worker
	env        []string // Setenv's, for worker children
}

// NewStack starts a private engine and writes configYAML to Dir/config.yaml.
// In configYAML, {{DIR}} stands for Dir. The stack stops at test cleanup.
func NewStack(t testing.TB, configYAML string) *Stack {
	t.Helper()
	dir := t.TempDir()
	s := &Stack{t: t, Dir: dir, ConfigPath: filepath.Join(dir, "config.yaml")}
	if err := os.WriteFile(s.ConfigPath, []byte(strings.ReplaceAll(configYAML, "{{DIR}}", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	s.StartEngine()
	t.Cleanup(s.close)
	return s
}

// StartEngine starts (or restarts, on the same file and port) the engine.
func (s *Stack) StartEngine() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir:                     filepath.Join(s.Dir, "engine"),
		FrontendPort:                s.port,
		KeywordListSearchAttributes: []string{wire.SearchAttributeActiveStepTypes},
		Logger:                      slog.New(slog.NewTextHandler(s.logFile("engine.log"), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		s.t.Fatalf("start the engine: %v", err)
	}
	s.server = srv
	s.port = srv.FrontendPort()
	if s.Client == nil {
		c, err := temporalclient.DialContext(ctx, temporalclient.Options{
			HostPort:      srv.FrontendAddress(),
			DataConverter: client.DataConverter(),
			Logger:        log.NewStructuredLogger(slog.New(slog.NewTextHandler(s.logFile("client.log"), nil))),
		})
		if err != nil {
			s.t.Fatalf("connect to the engine: %v", err)
		}
		s.Client = c
		s.Sessions = client.New(c, "default", wire.DefaultTaskQueue)
	}
}

// StopEngine stops the engine; StartEngine brings it back.
func (s *Stack) StopEngine() {
	s.t.Helper()
	if err := s.server.Stop(); err != nil {
		s.t.Fatalf("stop the engine: %v", err)
	}
}

// Setenv sets an environment variable for the worker children the stack
// starts from now on (and so for the plugins their config lets see it),
// not for the test process: tests that run in parallel each give their own
// workers their own values.
func (s *Stack) Setenv(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.env = append(s.env, key+"="+value)
}

// Address is the engine's frontend address.
func (s *Stack) Address() string { return s.server.FrontendAddress() }

func (s *Stack) logFile(name string) *os.File {
	f, err := os.OpenFile(filepath.Join(s.Dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { f.Close() })
	return f
}

func (s *Stack) close() {
	s.mu.Lock()
	workers := s.workers
	s.mu.Unlock()
	for _, w := range workers {
		w.Kill()
	}
	if s.Client != nil {
		s.Client.Close()
	}
	if s.server != nil {
		_ = s.server.Stop()
	}
	if s.t.Failed() {
		for _, name := range []string{"worker-1.log", "worker-2.log", "worker-3.log", "engine.log"} {
			if b, err := os.ReadFile(filepath.Join(s.Dir, name)); err == nil && len(b) > 0 {
				s.t.Logf("--- %s (last 4 KiB) ---\n%s", name, tail(b, 4096))
			}
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Gate returns the FileGate of that name in the stack's directory. Worker
// children and the test plugin use the same directory.
func (s *Stack) Gate(name string) FileGate { return FileGate{Dir: s.Dir, Name: name} }

// Log returns the stack's InvocationLog.
func (s *Stack) Log() *InvocationLog {
	return &InvocationLog{Path: filepath.Join(s.Dir, "invocations.log")}
}

// Worker is a worker child process.
type Worker struct {
	// LogPath is the file that holds the worker's output.
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	once    sync.Once
}

// Environment of a worker child.
const (
	envChild   = "DEX_AGENTTEST_CHILD"
	envConfig  = "DEX_AGENTTEST_CONFIG"
	envAddress = "DEX_AGENTTEST_ADDRESS"
	envDir     = "DEX_AGENTTEST_DIR"
	envReady   = "DEX_AGENTTEST_READY"
	// envModelQueues is WorkerOptions.ModelQueues.
	envModelQueues = "DEX_AGENTTEST_MODEL_QUEUES"
)

// WorkerOptions are a worker child's own settings, which differ between the
// workers of one stack.
type WorkerOptions struct {
	// ModelQueues is the worker's --model-queues: "" polls them all.
	ModelQueues string
}

// StartWorker starts a worker child: the test binary itself, which runs the
// worker when TestMain calls RunWorkerIfChild. It returns once the worker
// polls its task queue.
func (s *Stack) StartWorker() *Worker {
	s.t.Helper()
	return s.StartWorkerWith(WorkerOptions{})
}

// StartWorkerWith starts a worker child with its own options.
func (s *Stack) StartWorkerWith(o WorkerOptions) *Worker {
	s.t.Helper()
	s.mu.Lock()
	n := len(s.workers) + 1
	env := append([]string(nil), s.env...)
	s.mu.Unlock()
	ready := filepath.Join(s.Dir, fmt.Sprintf("worker-%d.ready", n))
	logf := s.logFile(fmt.Sprintf("worker-%d.log", n))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"=worker",
		envConfig+"="+s.ConfigPath,
		envAddress+"="+s.Address(),
		envDir+"="+s.Dir,
		envReady+"="+ready,
		envModelQueues+"="+o.ModelQueues,
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start a worker: %v", err)
	}
	w := &Worker{LogPath: logf.Name(), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(w.done) }()
	s.mu.Lock()
	s.workers = append(s.workers, w)
	s.mu.Unlock()
	err := WaitFor(context.Background(), "worker start", time.Minute, func() (bool, error) {
		select {
		case <-w.done:
			b, _ := os.ReadFile(logf.Name())
			return false, fmt.Errorf("the worker exited: %s", tail(b, 2048))
		default:
		}
		_, err := os.Stat(ready)
		return err == nil, nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return w
}

// PID is the worker's process ID; the Temporal identity it polls with
// starts with it and "@".
func (w *Worker) PID() int { return w.cmd.Process.Pid }

// KillWorkers SIGKILLs every worker the stack started.
func (s *Stack) KillWorkers() {
	s.mu.Lock()
	workers := append([]*Worker(nil), s.workers...)
	s.mu.Unlock()
	for _, w := range workers {
		w.Kill()
	}
}

// Kill SIGKILLs the worker's process group (the worker and its plugins) and
// waits for the worker to exit.
func (w *Worker) Kill() {
	w.once.Do(func() {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.done
	})
}

// Signal sends sig to the worker process alone, as a container runtime
// stops its main process (the worker's plugins run in process groups of
// their own). Wait for the exit with Wait.
func (w *Worker) Signal(sig syscall.Signal) error { return w.cmd.Process.Signal(sig) }

// Wait waits until the worker exited, or timeout passed, and returns its
// exit code.
func (w *Worker) Wait(timeout time.Duration) (int, error) {
	select {
	case <-w.done:
		return w.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("the worker did not exit within %s", timeout)
	}
}

// Exited reports whether the worker process has exited.
func (w *Worker) Exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Stop asks the worker to stop (SIGTERM) and waits.
func (w *Worker) Stop() {
	w.once.Do(func() {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			<-w.done
		}
	})
}

// WaitFor polls probe until it reports true, returns an error, or timeout
// passes. It never sleeps longer than 20 ms between probes.
func WaitFor(ctx context.Context, description string, timeout time.Duration, probe func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := probe()
		if ok {
			return nil
		}
		if err != nil {
			var perm permanent
			if errors.As(err, &perm) {
				return fmt.Errorf("waiting for %s: %w", description, err)
			}
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: timed out after %s; last error: %w", description, timeout, last)
			}
			return fmt.Errorf("waiting for %s: timed out after %s", description, timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type permanent struct{ error }

// Permanent marks a probe error that WaitFor returns at once.
func Permanent(err error) error { return permanent{err} }

// WaitForSnapshot waits until cond holds for the session's snapshot.
func (s *Stack) WaitForSnapshot(description, sessionID string, cond func(wire.Snapshot) bool) wire.Snapshot {
	s.t.Helper()
	var snap wire.Snapshot
	err := WaitFor(context.Background(), description, 90*time.Second, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := s.Sessions.GetAgentSnapshot(ctx, sessionID)
		if err != nil {
			return false, err
		}
		snap = got
		return cond(got), nil
	})
	if err != nil {
		s.t.Fatalf("%v\nlast snapshot: %s", err, describeSnapshot(snap))
	}
	return snap
}

// StepHistoryEntry is one finished activity (Step) of a session.
type StepHistoryEntry struct {
	// EventType is "completed", "failed", "timed_out" or "canceled".
	EventType  string
	StepType   string
	ActivityID string
	// Attempt is the attempt that ended the Step (1 for a Step that
	// succeeded at once).
	Attempt int32
}

// StepHistory lists the finished Steps of a session from its workflow
// history (every run of it), oldest first.
func (s *Stack) StepHistory(sessionID string) ([]StepHistoryEntry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := s.Client.GetWorkflowHistory(ctx, sessionID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64][2]string{}
	started := map[int64]int32{} // started event ID -> attempt
	var out []StepHistoryEntry
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[e.GetEventId()] = [2]string{a.GetActivityType().GetName(), a.GetActivityId()}
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			started[e.GetEventId()] = a.GetAttempt()
		}
		// The engine writes the started event of a retried activity only
		// with its last attempt, so the attempt is that of the attempt that
		// ended the Step (0 when it never started, such as a Step cancelled
		// while scheduled).
		add := func(kind string, schedID, startedID int64) {
			sc := scheduled[schedID]
			out = append(out, StepHistoryEntry{EventType: kind, StepType: sc[0], ActivityID: sc[1], Attempt: started[startedID]})
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
			add("completed", a.GetScheduledEventId(), a.GetStartedEventId())
		}
		if a := e.GetActivityTaskFailedEventAttributes(); a != nil {
			add("failed", a.GetScheduledEventId(), a.GetStartedEventId())
		}
		if a := e.GetActivityTaskTimedOutEventAttributes(); a != nil {
			add("timed_out", a.GetScheduledEventId(), a.GetStartedEventId())
		}
		if a := e.GetActivityTaskCanceledEventAttributes(); a != nil {
			add("canceled", a.GetScheduledEventId(), a.GetStartedEventId())
		}
	}
	return out, nil
}

// BuildBinary builds a main package of this module into a directory shared
// by the test process and returns the binary's path. Builds are cached per
// process. When the environment variable DEX_TEST_BIN_DIR names a
// directory (make test sets it to bin/, which make build filled just
// before), the binaries make build makes are taken from there instead of
// being linked again by every test process.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	if dir := os.Getenv(EnvTestBinDir); dir != "" {
		if name, ok := madeByMakeBuild[pkg]; ok {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("%s=%s, but %s is not there: run make build (%v)", EnvTestBinDir, dir, name, err)
			}
			return path
		}
	}
	return BuildBinaryWithTags(t, pkg, "")
}

// EnvTestBinDir names the directory of the binaries make build made, which
// BuildBinary uses when it is set.
const EnvTestBinDir = "DEX_TEST_BIN_DIR"

// madeByMakeBuild maps the main packages make build builds to the names of
// their binaries.
var madeByMakeBuild = map[string]string{
	"github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker":                     "dex-agent-worker",
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise/cmd/dex-runner-stepwise": "dex-runner-stepwise",
	"github.com/dex-agents/dex-agent-worker/examples/orders":                          "dex-runner-orders",
}

// BuildBinaryWithTags is BuildBinary with the build tags tags (a
// comma-separated list): a second build of one package, such as a worker
// with other workflow code.
func BuildBinaryWithTags(t testing.TB, pkg, tags string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := pkg
	if tags != "" {
		key += " -tags " + tags
	}
	if p, ok := built[key]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "agenttest-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, filepath.Base(pkg))
	args := []string{"build", "-o", out}
	if tags != "" {
		out += "-" + strings.ReplaceAll(tags, ",", "-")
		args = []string{"build", "-tags", tags, "-o", out}
	}
	cmd := exec.Command("go", append(args, pkg)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, stderr.String())
	}
	built[key] = out
	return out
}

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
)

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server a test configures by port (devserver.FreePort): below the
// kernel's ephemeral range where it can be read, so an outgoing
// connection cannot take it first (seen in CI: "bind: address already in
// use"), and never one this process handed out before, also to the
// engines it starts, so tests that run in parallel never share one.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := devserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// StoredMessages returns a session's messages as its worker stored them
// (with their framework items): the chunks before the snapshot's window and
// the window rows, from the SQLite message store the worker children share
// in the stack's directory.
func (s *Stack) StoredMessages(sessionID string) ([]pluginapi.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := s.Sessions.GetAgentSnapshot(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if len(snap.Messages) == 0 {
		return nil, nil
	}
	st, err := s.openMessageStore(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	first, last := snap.Messages[0].Sequence, snap.Messages[len(snap.Messages)-1].Sequence
	return transcript.Read(ctx, st, sessionID, 1, first, last)
}

func (s *Stack) openMessageStore(ctx context.Context) (transcript.Store, error) {
	return transcript.Open(ctx, transcript.Options{Driver: transcript.DriverSQLite, Path: filepath.Join(s.Dir, "messages.db")})
}

// MessageStore opens the message store the stack's workers share, for a
// client that reads older pages (client.AgentSessionClient.WithMessages).
// It is closed at the test's cleanup.
func (s *Stack) MessageStore(t testing.TB) client.MessageReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s.openMessageStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return transcript.Reader{Store: st}
}

// describeSnapshot renders a snapshot for a failure message: the state in
// full, and each message with its text cut to 200 bytes.
func describeSnapshot(snap wire.Snapshot) string {
	var b strings.Builder
	if snap.State != nil {
		fmt.Fprintf(&b, "state %+v\n", *snap.State)
	}
	for _, m := range snap.Messages {
		text := m.Text
		if len(text) > 200 {
			text = fmt.Sprintf("%s... (%d bytes)", text[:200], len(text))
		}
		fmt.Fprintf(&b, "  #%d %s %s %q\n", m.Sequence, m.Role, m.ToolStatus, text)
	}
	fmt.Fprintf(&b, "pending interrupts %+v\ntool calls %+v\nqueued %d", snap.PendingInterrupts, snap.ToolCalls, snap.QueuedCount)
	return b.String()
}
