package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient/sse"
	"github.com/dex-agents/dex-agent-worker/internal/events/redistest"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/pgtest"
)

const clusterToken = "cluster-token-0123456789abcdef"

// deployConfig is the config of the recipes in deploy/.
const deployConfig = "../../deploy/config.yaml"

// clusterConfig is the config of every worker and API process of the
// cluster test: deploy/config.yaml, whose events, message_store, http and
// shutdown_timeout sections it keeps, with the test's engine, runner and
// agent.
func clusterConfig(t testing.TB, plugin, stateDir string, temporalPort int) string {
	t.Helper()
	raw, err := os.ReadFile(deployConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["temporal"] = map[string]any{"address": fmt.Sprintf("127.0.0.1:%d", temporalPort), "namespace": "default", "task_queue": "dex-agents"}
	doc["logging"] = map[string]any{"level": "debug", "format": "json"}
	// Four processes on one machine cannot share the metrics port.
	delete(doc, "telemetry")
	doc["http"].(map[string]any)["web_ui"] = false
	doc["plugins"] = map[string]any{"testrunner": map[string]any{"command": plugin}}
	doc["agents"] = []any{map[string]any{
		"name": "test", "flow_type": flowType, "runner": "testrunner",
		"runner_config":       map[string]any{"state_dir": stateDir},
		"default_tool_effect": "read",
		"run_model_limit":     map[string]any{"start_to_close_timeout": "1m", "heartbeat_timeout": "5s", "maximum_attempts": 3, "schedule_to_close_timeout": "5m"},
	}}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// roleArgs are the arguments of a worker or API process: the same in the
// cluster test, the compose file and the Kubernetes manifests.
func roleArgs(configPath, role, listen string) []string {
	return []string{"run", "--config", configPath, "--role", role, "--http", listen}
}

// proc is one process of the cluster.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	addr string // its HTTP address, if any
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// cluster is the process topology of deploy/: an engine, workers and API
// processes, with real Redis and PostgreSQL.
type cluster struct {
	t      testing.TB
	bin    string
	dir    string
	config string
	env    []string
	redis  *redistest.Server
	dsn    string
	procs  []*proc
}

func (c *cluster) start(name string, args ...string) *proc {
	c.t.Helper()
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return p
}

// startEngine runs `engine` on a port and waits until it says it runs.
func (c *cluster) startEngine(port int) {
	c.t.Helper()
	engine := c.start("engine", "engine", "--data-dir", filepath.Join(c.dir, "engine"), "--port", strconv.Itoa(port), "--ui-port", "0")
	err := agenttest.WaitFor(context.Background(), "the engine", time.Minute, func() (bool, error) {
		if !engine.alive() {
			return false, agenttest.Permanent(errors.New("the engine exited"))
		}
		out, _ := os.ReadFile(engine.log)
		return strings.Contains(string(out), "engine is running"), nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// run starts `run --role ROLE` serving HTTP on a free port and waits until
// its /readyz answers 200.
func (c *cluster) run(name, role string) *proc {
	c.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", agenttest.FreePort(c.t))
	p := c.start(name, roleArgs(c.config, role, addr)...)
	p.addr = addr
	waitOK(c.t, name+" ready", "http://"+addr+"/readyz", time.Minute, func() bool { return !p.alive() })
	return p
}

func (c *cluster) tail(p *proc) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return fmt.Sprintf("--- %s log (tail) ---\n%s", p.name, b)
}

func (c *cluster) dumpLogs() {
	for _, p := range c.procs {
		c.t.Log(c.tail(p))
	}
}

// api sends one request to an API process.
func (c *cluster) api(p *proc, method, path, body string) (int, []byte) {
	c.t.Helper()
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s on %s: %v", method, path, p.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// frame is one event a browser-like client received.
type frame struct {
	ID       string
	Type     string `json:"type"`
	TurnID   string `json:"turn_id"`
	Attempt  int    `json:"attempt"`
	Sequence uint64 `json:"sequence"`
	Payload  string `json:"payload"`
}

// follower is a browser-like event stream client: it follows one API
// process, and on a dropped stream reconnects with Last-Event-ID (to
// whichever API process the test names), or reloads the snapshot when the
// token is refused.
type follower struct {
	t   testing.TB
	c   *cluster
	sid string

	mu      sync.Mutex
	frames  []frame
	resets  int      // snapshot reloads after a refused token
	streams []string // the API process of each stream it opened
	target  *proc
	lastID  string
	stop    chan struct{}
	stopped chan struct{}
}

func (c *cluster) follow(sid string, on *proc) *follower {
	f := &follower{t: c.t, c: c, sid: sid, target: on, stop: make(chan struct{}), stopped: make(chan struct{})}
	f.lastID = f.snapshotToken()
	go f.loop()
	return f
}

// snapshotToken loads the snapshot from the current target and returns its
// resume token.
func (f *follower) snapshotToken() string {
	for {
		f.mu.Lock()
		target := f.target
		f.mu.Unlock()
		code, body := f.c.api(target, "GET", "/v1/sessions/"+f.sid+"/snapshot", "")
		if code == 200 {
			var snap struct {
				ResumeToken string `json:"resume_token"`
			}
			if err := json.Unmarshal(body, &snap); err != nil {
				f.t.Errorf("snapshot: %v", err)
			}
			return snap.ResumeToken
		}
		select {
		case <-f.stop:
			return ""
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (f *follower) setTarget(p *proc) {
	f.mu.Lock()
	f.target = p
	f.mu.Unlock()
}

func (f *follower) loop() {
	defer close(f.stopped)
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		f.mu.Lock()
		target, last := f.target, f.lastID
		f.mu.Unlock()
		status := f.stream(target, last)
		switch status {
		case http.StatusBadRequest:
			// The token is refused: reload the snapshot, start again.
			tok := f.snapshotToken()
			f.mu.Lock()
			f.resets++
			f.lastID = tok
			f.mu.Unlock()
		default:
			select {
			case <-f.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// stream reads one event stream until it ends; it returns the HTTP status.
func (f *follower) stream(p *proc, last string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/v1/sessions/"+f.sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return resp.StatusCode
	}
	f.mu.Lock()
	f.streams = append(f.streams, p.name)
	f.mu.Unlock()
	r := sse.NewReader(bufio.NewReader(resp.Body))
	for {
		ev, err := r.Next()
		if err != nil {
			return 200
		}
		var fr frame
		if err := json.Unmarshal([]byte(ev.Data), &fr); err != nil {
			f.t.Errorf("event data %q: %v", ev.Data, err)
			return 200
		}
		fr.ID = ev.ID
		f.mu.Lock()
		f.frames = append(f.frames, fr)
		f.lastID = ev.ID
		f.mu.Unlock()
	}
}

func (f *follower) close() {
	close(f.stop)
	<-f.stopped
}

func (f *follower) snapshot() ([]frame, int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frame(nil), f.frames...), f.resets, append([]string(nil), f.streams...)
}

// waitFrames waits until a frame satisfies cond.
func (f *follower) waitFrames(what string, cond func(frame) bool) {
	f.t.Helper()
	err := agenttest.WaitFor(context.Background(), what, 90*time.Second, func() (bool, error) {
		frames, _, _ := f.snapshot()
		for _, fr := range frames {
			if cond(fr) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		frames, resets, streams := f.snapshot()
		f.c.dumpLogs()
		f.t.Fatalf("%v; %d frames, %d resets, streams %v: %s", err, len(frames), resets, streams, describeFrames(frames))
	}
}

func describeFrames(frames []frame) string {
	var b strings.Builder
	for _, fr := range frames {
		fmt.Fprintf(&b, "\n  #%d %s turn=%s attempt=%d", fr.Sequence, fr.Type, fr.TurnID, fr.Attempt)
	}
	return b.String()
}

// checkSequence fails unless the frames' sequences run from first, one by
// one, with no gap and no repeat.
func checkSequence(t *testing.T, frames []frame, first uint64) {
	t.Helper()
	for i, fr := range frames {
		if fr.Sequence != first+uint64(i) {
			t.Fatalf("frame %d has sequence %d, want %d (a gap or a repeat): %s", i, fr.Sequence, first+uint64(i), describeFrames(frames))
		}
	}
}

// startCluster starts the engine of a cluster of the testrunner agent on
// real Redis and PostgreSQL (the processes are the test's to run) and
// returns it with the runner's state directory. Everything stops at
// cleanup; a failed test's process logs are dumped.
func startCluster(t *testing.T) (*cluster, string) {
	t.Helper()
	redisSrv := redistest.Start(t)
	pg := pgtest.Start(t)
	dsn := pg.CreateDatabase(t, "")
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	temporalPort := agenttest.FreePort(t)
	cfgPath := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfgPath, []byte(clusterConfig(t, plugin, state, temporalPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	names := readDeployEnv(t)
	c := &cluster{t: t, bin: bin, dir: dir, config: cfgPath, redis: redisSrv, dsn: dsn, env: []string{
		names.RedisURL + "=" + redisSrv.URL(),
		names.TokenKey + "=cluster-test-events-key-0123456789",
		names.DSN + "=" + dsn,
		names.APIToken + "=" + clusterToken,
	}}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
		for _, p := range c.procs {
			if p.alive() {
				p.kill()
			}
		}
	})
	c.startEngine(temporalPort)
	return c, state
}

// TestClusterFollowsASessionAcrossProcesses runs the production topology
// as processes: the engine, two worker processes and two API processes on
// real Redis and PostgreSQL. A browser-like client on API 2 follows a
// session started on API 1 through a worker kill, its own API process's
// kill and a Redis restart.
func TestClusterFollowsASessionAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	c, state := startCluster(t)
	dsn := c.dsn
	w1 := c.run("worker-1", "worker")
	w2 := c.run("worker-2", "worker")
	a1 := c.run("api-1", "api")
	a2 := c.run("api-2", "api")

	// The first turn's model call waits at a gate, so a worker is killed
	// mid-turn.
	gate := agenttest.FileGate{Dir: state, Name: "model-k1"}
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	code, body := c.api(a1, "POST", "/v1/sessions", `{"agent":"test","session_id":"cluster-1","initial_message":"modelgate:k1 first"}`)
	if code != 201 {
		t.Fatalf("start on api-1: %d %s", code, body)
	}
	f := c.follow("cluster-1", a2)
	defer f.close()
	f.waitFrames("turn_started on api-2", func(fr frame) bool { return fr.Type == "turn_started" })

	pid1, err := gate.WaitUntilReached(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	first, second := w1, w2
	if parentOf(t, pid1) == w2.cmd.Process.Pid {
		first, second = w2, w1
	} else if parentOf(t, pid1) != w1.cmd.Process.Pid {
		t.Fatalf("the model call runs in process %d, whose parent is neither worker", pid1)
	}
	first.kill()
	// The Step's heartbeat times out and its next attempt runs on the
	// other worker, which reaches the same gate.
	err = agenttest.WaitFor(context.Background(), "the retried model call on the other worker", 90*time.Second, func() (bool, error) {
		pid, ok := gate.Reached()
		return ok && pid != pid1 && parentOf(t, pid) == second.cmd.Process.Pid, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	f.waitFrames("turn 1 completed on api-2", func(fr frame) bool { return fr.Type == "turn_completed" })
	frames, _, _ := f.snapshot()
	checkSequence(t, frames, frames[0].Sequence)
	if frames[0].Type != "turn_started" {
		t.Fatalf("the stream from the snapshot's token starts with %s, want the turn's turn_started", frames[0].Type)
	}
	if text := deltas(frames, "turn_completed"); !strings.Contains(text, "echo: modelgate:k1 first") {
		t.Fatalf("the text deltas of the last attempt are %q", text)
	}
	turn1 := len(frames)

	// API 2 dies; the client resumes on API 1 with its last ID, and gets
	// the second turn (sent meanwhile) from the backfill, then live.
	f.setTarget(a1)
	a2.kill()
	code, body = c.api(a1, "POST", "/v1/sessions/cluster-1/messages", `{"text":"second"}`)
	if code != 200 {
		t.Fatalf("send on api-1: %d %s", code, body)
	}
	f.waitFrames("turn 2 completed on api-1", func(fr frame) bool { return fr.Type == "turn_completed" && fr.TurnID != frames[turn1-1].TurnID })
	frames, resets, streams := f.snapshot()
	checkSequence(t, frames, frames[0].Sequence)
	if resets != 0 {
		t.Fatalf("the client reloaded the snapshot %d times; a token of api-2 must resume on api-1", resets)
	}
	if streams[len(streams)-1] != "api-1" {
		t.Fatalf("streams %v, want the last on api-1", streams)
	}

	// Redis restarts without its data: the client's token is refused, it
	// reloads the snapshot and follows the new stream, which starts again
	// at sequence 1.
	before := len(frames)
	c.redis.Restart(t)
	err = agenttest.WaitFor(context.Background(), "the client to reset to the snapshot", 90*time.Second, func() (bool, error) {
		_, resets, _ := f.snapshot()
		return resets >= 1, nil
	})
	if err != nil {
		c.dumpLogs()
		t.Fatal(err)
	}
	code, body = c.api(a1, "POST", "/v1/sessions/cluster-1/messages", `{"text":"third"}`)
	if code != 200 {
		t.Fatalf("send after the Redis restart: %d %s", code, body)
	}
	earlier := map[string]bool{}
	for _, fr := range frames {
		earlier[fr.TurnID] = true
	}
	f.waitFrames("turn 3 completed after the Redis restart", func(fr frame) bool {
		return fr.Type == "turn_completed" && !earlier[fr.TurnID]
	})
	frames, _, _ = f.snapshot()
	after := frames[before:]
	checkSequence(t, after, 1)
	if after[0].Type != "turn_started" {
		t.Fatalf("the new stream starts with %s", after[0].Type)
	}

	// The message store holds each message once.
	code, body = c.api(a1, "GET", "/v1/sessions/cluster-1/snapshot", "")
	var snap struct {
		Snapshot struct {
			Messages []struct {
				Sequence int64 `json:"sequence"`
			} `json:"messages"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(body, &snap); code != 200 || err != nil || len(snap.Snapshot.Messages) == 0 {
		t.Fatalf("snapshot: %d %v %s", code, err, body)
	}
	window := snap.Snapshot.Messages
	msgs := storedMessages(t, dsn, "cluster-1", window[0].Sequence, window[len(window)-1].Sequence)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, string(m.Role)+":"+m.Text)
	}
	want := []string{"user:modelgate:k1 first", "assistant:echo: modelgate:k1 first", "user:second", "assistant:echo: second", "user:third", "assistant:echo: third"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("stored messages:\n  %s\nwant\n  %s", strings.Join(texts, "\n  "), strings.Join(want, "\n  "))
	}
}

// deltas joins the text_delta payloads of the attempt that ended the turn
// (the last attempt seen before the event type end).
func deltas(frames []frame, end string) string {
	byAttempt := map[int]*strings.Builder{}
	last := 0
	for _, fr := range frames {
		if fr.Type == end {
			break
		}
		if fr.Type == "text_delta" {
			var p struct{ Text string }
			_ = json.Unmarshal([]byte(fr.Payload), &p)
			if byAttempt[fr.Attempt] == nil {
				byAttempt[fr.Attempt] = &strings.Builder{}
			}
			byAttempt[fr.Attempt].WriteString(p.Text)
			last = fr.Attempt
		}
	}
	if byAttempt[last] == nil {
		return ""
	}
	return byAttempt[last].String()
}

// parentOf returns a process's parent PID (0 when it is gone).
func parentOf(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(fields[1])
	return n
}

// storedMessages reads every stored message of a session from the
// PostgreSQL message store.
func storedMessages(t *testing.T, dsn, sid string, windowFirst, last int64) []transcript.Message {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := transcript.Open(c, transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, err := transcript.Read(c, st, sid, 1, windowFirst, last)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}
