package devserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/log/tag"
)

const (
	testTaskQueue   = "devserver-test"
	activeStepTypes = "ActiveStepTypes"
)

// ---- workflows and activities used by the tests ----

func greetActivity(_ context.Context, name string) (string, error) {
	return "hello, " + name, nil
}

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greetActivity, name).Get(ctx, &out)
	return out, err
}

var activeStepTypesKey = temporal.NewSearchAttributeKeyKeywordList(activeStepTypes)

// approvalWorkflow marks itself as waiting for a tool approval, waits for the
// "approve" signal, then runs one activity.
func approvalWorkflow(ctx workflow.Context, name string) (string, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, activeStepTypesKey.ValueSet([]string{"AwaitToolApproval"})); err != nil {
		return "", err
	}
	var approver string
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.UpsertTypedSearchAttributes(ctx, activeStepTypesKey.ValueUnset()); err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greetActivity, name+" (approved by "+approver+")").Get(ctx, &out)
	return out, err
}

// ---- helpers ----

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func startTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (frontend %s, ui %q)", time.Since(began).Round(time.Millisecond), s.FrontendAddress(), s.UIAddress())
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func dial(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendAddress(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(testLogger()),
	})
	if err != nil {
		t.Fatalf("client.Dial: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// startWorker starts a worker for the test workflows; the returned function
// stops it (also run at cleanup; calling it more than once is fine).
func startWorker(t *testing.T, c client.Client) (stop func()) {
	t.Helper()
	w := worker.New(c, testTaskQueue, worker.Options{})
	w.RegisterWorkflow(greetWorkflow)
	w.RegisterWorkflow(approvalWorkflow)
	w.RegisterActivity(greetActivity)
	if err := w.Start(); err != nil {
		t.Fatalf("worker start: %v", err)
	}
	stop = sync.OnceFunc(w.Stop)
	t.Cleanup(stop)
	return stop
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
}

// ---- tests ----

func TestWorkflowAndSearchAttribute(t *testing.T) {
	t.Parallel()
	s := startTestServer(t, Options{
		DataDir:                     t.TempDir(),
		KeywordListSearchAttributes: []string{activeStepTypes},
	})
	if s.FrontendPort() == 0 || s.FrontendAddress() != "127.0.0.1:"+strconv.Itoa(s.FrontendPort()) {
		t.Fatalf("bad frontend address %q / port %d", s.FrontendAddress(), s.FrontendPort())
	}
	if s.Namespace() != "default" || s.UIAddress() != "" {
		t.Fatalf("namespace %q, ui %q", s.Namespace(), s.UIAddress())
	}
	c := dial(t, s)
	startWorker(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A tiny workflow with one activity.
	began := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-1", TaskQueue: testTaskQueue}, greetWorkflow, "dex")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "hello, dex" {
		t.Fatalf("result %q", got)
	}
	t.Logf("workflow with one activity completed in %v", time.Since(began).Round(time.Millisecond))

	// Retention as configured (default 72h).
	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	if r := ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); r != 72*time.Hour {
		t.Fatalf("retention %v, want 72h", r)
	}

	// The custom search attribute exists as KeywordList.
	sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	if typ := sas.GetCustomAttributes()[activeStepTypes]; typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST {
		t.Fatalf("%s has type %v; custom attributes: %v", activeStepTypes, typ, sas.GetCustomAttributes())
	}

	// A workflow that upserts it is found by a visibility query.
	run2, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approval-1", TaskQueue: testTaskQueue}, approvalWorkflow, "tool")
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	query := activeStepTypes + ` = "AwaitToolApproval"`
	waitFor(t, 10*time.Second, "ListWorkflow "+query, func() (bool, error) {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.Namespace(), Query: query})
		if err != nil {
			return false, err
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == "approval-1" {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("upserted search attribute visible to ListWorkflow after %v", time.Since(began).Round(time.Millisecond))

	if err := c.SignalWorkflow(ctx, "approval-1", "", "approve", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := run2.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "hello, tool (approved by alice)" {
		t.Fatalf("result %q", got)
	}
}

func TestRestartKeepsStateWithoutStall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := Options{DataDir: dir, Namespace: "dex-dev", KeywordListSearchAttributes: []string{activeStepTypes}}
	s1, err := Start(context.Background(), withLogger(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s1.Stop() })
	port := s1.FrontendPort()

	// Phase 1: one workflow is waiting for a signal after its first workflow
	// task ran on a worker; another was started with no worker at all.
	c1, err := client.Dial(client.Options{HostPort: s1.FrontendAddress(), Namespace: s1.Namespace(), Logger: sdklog.NewStructuredLogger(testLogger())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	w1 := worker.New(c1, testTaskQueue, worker.Options{})
	w1.RegisterWorkflow(approvalWorkflow)
	w1.RegisterActivity(greetActivity)
	if err := w1.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "waiting", TaskQueue: testTaskQueue}, approvalWorkflow, "restart"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "first workflow task of 'waiting'", func() (bool, error) {
		d, err := c1.DescribeWorkflowExecution(ctx, "waiting", "")
		if err != nil {
			return false, err
		}
		return d.GetWorkflowExecutionInfo().GetHistoryLength() >= 4, nil // started, WT scheduled/started/completed
	})
	w1.Stop()
	if _, err := c1.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pending", TaskQueue: testTaskQueue}, greetWorkflow, "pending"); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	began := time.Now()
	if err := s1.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(began).Round(time.Millisecond))

	// Phase 2: restart on the same dir and port.
	opts.FrontendPort = port
	restartBegan := time.Now()
	s2, err := Start(context.Background(), withLogger(opts))
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { _ = s2.Stop() })
	t.Logf("restart Start took %v", time.Since(restartBegan).Round(time.Millisecond))
	if s2.FrontendPort() != port {
		t.Fatalf("port %d after restart, want %d", s2.FrontendPort(), port)
	}
	c2 := dial(t, s2)
	if _, err := c2.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "dex-dev"}); err != nil {
		t.Fatalf("namespace gone after restart: %v", err)
	}
	d, err := c2.DescribeWorkflowExecution(ctx, "waiting", "")
	if err != nil {
		t.Fatalf("workflow gone after restart: %v", err)
	}
	if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("status %v after restart", st)
	}

	workerBegan := time.Now()
	startWorker(t, c2)
	var got string
	if err := c2.GetWorkflow(ctx, "pending", "").Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	firstTask := time.Since(workerBegan)
	t.Logf("after restart: workflow started before the stop completed %v after the new worker started (%v after restart began)",
		firstTask.Round(time.Millisecond), time.Since(restartBegan).Round(time.Millisecond))

	signalled := time.Now()
	if err := c2.SignalWorkflow(ctx, "waiting", "", "approve", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := c2.GetWorkflow(ctx, "waiting", "").Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	afterSignal := time.Since(signalled)
	t.Logf("after restart: signalled workflow (sticky on the old worker) completed %v after the signal", afterSignal.Round(time.Millisecond))
	if got != "hello, restart (approved by bob)" {
		t.Fatalf("result %q", got)
	}
	if firstTask > 10*time.Second || afterSignal > 10*time.Second {
		t.Fatalf("restart stalled workflow tasks: %v / %v", firstTask, afterSignal)
	}
}

func withLogger(o Options) Options {
	o.Logger = testLogger()
	return o
}

func TestStopTwiceAndDataDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startTestServer(t, Options{DataDir: dir})
	port := s.FrontendPort()

	// A second server on the same data dir is refused while the first runs.
	_, err := Start(context.Background(), Options{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Start on the same dir: %v", err)
	}

	began := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("first Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(began).Round(time.Millisecond))
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// The frontend port is released.
	l, err := net.Listen("tcp", s.FrontendAddress())
	if err != nil {
		t.Fatalf("port %d still busy after Stop: %v", port, err)
	}
	_ = l.Close()
}

func TestBadDataDir(t *testing.T) {
	t.Parallel()
	t.Run("file instead of dir", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Start(context.Background(), Options{DataDir: path})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("got %v", err)
		}
		t.Logf("error: %v", err)
	})
	t.Run("parent is a file", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(parent, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(parent, "data")
		_, err := Start(context.Background(), Options{DataDir: path})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("got %v", err)
		}
		t.Logf("error: %v", err)
	})
	t.Run("corrupt database", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "temporal.db")
		if err := os.WriteFile(db, []byte("this is not a sqlite database, just some text"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Start(context.Background(), Options{DataDir: dir})
		if err == nil || !strings.Contains(err.Error(), db) {
			t.Fatalf("got %v", err)
		}
		t.Logf("error: %v", err)
	})
	t.Run("frontend port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		port := l.Addr().(*net.TCPAddr).Port
		_, err = Start(context.Background(), Options{DataDir: t.TempDir(), FrontendPort: port})
		if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) {
			t.Fatalf("got %v", err)
		}
		t.Logf("error: %v", err)
	})
}

func TestWebUI(t *testing.T) {
	t.Parallel()
	s := startTestServer(t, Options{DataDir: t.TempDir(), UIPort: freePort(t)})
	if !strings.HasPrefix(s.UIAddress(), "http://127.0.0.1:") {
		t.Fatalf("UIAddress %q", s.UIAddress())
	}
	resp, err := http.Get(s.UIAddress() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("content type %q", ct)
	}
	if !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Fatalf("body is not HTML: %.200q", body)
	}
	t.Logf("GET %s/ -> %s, %d bytes of HTML", s.UIAddress(), resp.Status, len(body))

	// The UI's API proxy reaches the frontend.
	resp, err = http.Get(s.UIAddress() + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/namespaces/default: %s", resp.Status)
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(s.UIAddress() + "/"); err == nil {
		t.Fatal("UI still serving after Stop")
	}
}

func TestSearchAttributeAddedToExistingNamespace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1 := startTestServer(t, Options{DataDir: dir})
	port := s1.FrontendPort()
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}

	// The namespace exists without the attribute; this start adds it through
	// the OperatorService and changes the retention.
	s2 := startTestServer(t, Options{DataDir: dir, FrontendPort: port, KeywordListSearchAttributes: []string{activeStepTypes}, Retention: 24 * time.Hour})
	c := dial(t, s2)
	stopWorker := startWorker(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s2.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	if typ := sas.GetCustomAttributes()[activeStepTypes]; typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST {
		t.Fatalf("%s has type %v", activeStepTypes, typ)
	}
	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s2.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	if r := ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); r != 24*time.Hour {
		t.Fatalf("retention %v, want 24h", r)
	}

	// A workflow upserting it works right away (no failed workflow task).
	began := time.Now()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approval-2", TaskQueue: testTaskQueue}, approvalWorkflow, "x"); err != nil {
		t.Fatal(err)
	}
	query := activeStepTypes + ` = "AwaitToolApproval"`
	waitFor(t, 10*time.Second, "ListWorkflow "+query, func() (bool, error) {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s2.Namespace(), Query: query})
		return err == nil && len(resp.GetExecutions()) == 1, err
	})
	t.Logf("workflow found by %s %v after start", query, time.Since(began).Round(time.Millisecond))

	// A third start is a no-op for the attribute.
	stopWorker()
	c.Close()
	if err := s2.Stop(); err != nil {
		t.Fatal(err)
	}
	startTestServer(t, Options{DataDir: dir, FrontendPort: port, KeywordListSearchAttributes: []string{activeStepTypes}, Retention: 24 * time.Hour})
}

// TestRestartAfterKill runs the first server in a child process, kills it
// with SIGKILL while a workflow waits for a worker, and restarts here.
func TestRestartAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DEVSERVER_HELPER_DIR="+dir, "DEVSERVER_HELPER_PORT="+strconv.Itoa(port))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "HELPER READY" {
				ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("helper exited without READY: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("helper did not get ready")
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	restartBegan := time.Now()
	s := startTestServer(t, Options{DataDir: dir, FrontendPort: port})
	c := dial(t, s)
	startWorker(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got string
	if err := c.GetWorkflow(ctx, "started-before-kill", "").Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(restartBegan)
	t.Logf("after kill -9 and restart: workflow completed %v after restart began", elapsed.Round(time.Millisecond))
	if got != "hello, killed" {
		t.Fatalf("result %q", got)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("restart after kill stalled: %v", elapsed)
	}
}

// TestMain runs the child of TestRestartAfterKill when the environment
// names its data dir, and the tests otherwise.
func TestMain(m *testing.M) {
	if dir := os.Getenv("DEVSERVER_HELPER_DIR"); dir != "" {
		if err := serveUntilKilled(dir); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// serveUntilKilled is the child of TestRestartAfterKill: it starts a server
// on dir, starts a workflow that no worker serves, says so, and waits for
// its SIGKILL.
func serveUntilKilled(dir string) error {
	port, _ := strconv.Atoi(os.Getenv("DEVSERVER_HELPER_PORT"))
	s, err := Start(context.Background(), Options{DataDir: dir, FrontendPort: port, Logger: testLogger()})
	if err != nil {
		return err
	}
	c, err := client.Dial(client.Options{HostPort: s.FrontendAddress(), Namespace: s.Namespace(), Logger: sdklog.NewStructuredLogger(testLogger())})
	if err != nil {
		return err
	}
	if _, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "started-before-kill", TaskQueue: testTaskQueue}, "greetWorkflow", "killed"); err != nil {
		return err
	}
	fmt.Println("HELPER READY")
	select {} // wait for SIGKILL
}

func TestOptionValidation(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{}, // no DataDir
		{DataDir: t.TempDir(), KeywordListSearchAttributes: []string{"Bad Name"}},
		{DataDir: t.TempDir(), KeywordListSearchAttributes: []string{"WorkflowType"}},
		{DataDir: t.TempDir(), KeywordListSearchAttributes: []string{"A", "B", "C", "D"}},
		{DataDir: t.TempDir(), Retention: time.Minute},
		{DataDir: t.TempDir(), FrontendPort: 70000},
	} {
		if _, err := Start(context.Background(), o); err == nil {
			t.Errorf("Start(%+v) succeeded", o)
		} else {
			t.Logf("%v", err)
		}
	}
}

func TestServerLoggerFilters(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	l := newServerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), slog.LevelWarn)
	l.Info("chatty info")
	l.Warn("HTTP API port has not been set. Nexus HTTP endpoints will not be available.")
	l.With(tag.NewStringTag("service", "history")).Warn("real warning", tag.NewInt("shard", 1))
	l.Fatal("fatal but no exit", tag.Error(errors.New("boom")))
	l.beginStop()
	l.Error("error while stopping")
	out := buf.String()
	for _, want := range []string{"real warning", "service=history", "shard=1", "fatal but no exit", "severity=fatal", "error=boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"chatty info", "HTTP API port", "error while stopping"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("unexpected %q in:\n%s", unwanted, out)
		}
	}
}
