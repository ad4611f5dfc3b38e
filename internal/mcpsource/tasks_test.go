package mcpsource

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	taskServerOnce sync.Once
	taskServerBin  string
	taskServerErr  error
)

// taskServer builds testdata/taskserver, the tasks extension's test
// server, once per test binary.
func taskServer(t *testing.T) string {
	t.Helper()
	taskServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "taskserver")
		if err != nil {
			taskServerErr = err
			return
		}
		taskServerBin = filepath.Join(dir, "taskserver")
		out, err := exec.Command("go", "build", "-o", taskServerBin, "./testdata/taskserver").CombinedOutput()
		if err != nil {
			taskServerErr = fmt.Errorf("build the task server: %v\n%s", err, out)
		}
	})
	if taskServerErr != nil {
		t.Fatal(taskServerErr)
	}
	return taskServerBin
}

// taskLog reads the server's request log.
func taskLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func countMethod(log []map[string]any, method string) int {
	n := 0
	for _, m := range log {
		if m["method"] == method {
			n++
		}
	}
	return n
}

// httpTaskServer runs the task server over Streamable HTTP.
func httpTaskServer(t *testing.T, polls int) (url, logPath string) {
	t.Helper()
	bin := taskServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath = filepath.Join(t.TempDir(), "requests.jsonl")
	cmd := exec.Command(bin, "-http", addr, "-log", logPath, "-polls", fmt.Sprint(polls))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task server does not listen: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/mcp", logPath
}

// TestTasksOverStreamableHTTP: a server of the tasks extension answers a
// tools/call with a task handle; the call returns TaskStarted and the
// task is polled with tasks/get on new connections (with the Mcp-Name
// routing header) until it ends: completed is the tool's result, failed
// and cancelled are tool errors, an unknown task cannot be read, and a
// task that asks for input fails and is cancelled.
func TestTasksOverStreamableHTTP(t *testing.T) {
	url, logPath := httpTaskServer(t, 2)
	s := newSource(t, []Server{{Name: "ts", URL: url}}, Options{})
	ctx := context.Background()
	start := func(name string) *Task {
		t.Helper()
		out := s.Call(ctx, "mcp:ts/job", json.RawMessage(`{"name":"`+name+`"}`), "k-"+name, nil)
		if out.Kind != TaskStarted || out.Task == nil || !strings.HasPrefix(out.Task.ID, "task-") || out.Task.PollInterval != 100*time.Millisecond {
			t.Fatalf("Call(%s) = %+v, want a started task", name, out)
		}
		return out.Task
	}
	poll := func(task *Task) (Outcome, int) {
		t.Helper()
		for i := 1; i <= 10; i++ {
			p := s.PollTask(ctx, "mcp:ts/job", task.ID)
			if p.Outcome != nil {
				return *p.Outcome, i
			}
			if p.Task.Status != TaskWorking || p.Task.StatusMessage != fmt.Sprintf("poll %d", i) {
				t.Fatalf("poll %d = %+v", i, p.Task)
			}
		}
		t.Fatal("the task never ended")
		return Outcome{}, 0
	}
	if out, n := poll(start("a")); out.Kind != Succeeded || out.Text != "job a done" || n != 3 {
		t.Errorf("task a = %+v after %d polls", out, n)
	}
	if out, _ := poll(start("fail")); out.Kind != ToolFailed || out.Text != "MCP error -32001: the job broke" {
		t.Errorf("task fail = %+v", out)
	}
	c := start("c")
	if err := s.CancelTask(ctx, "mcp:ts/job", c.ID); err != nil {
		t.Fatal(err)
	}
	if out, _ := poll(c); out.Kind != ToolFailed || out.Text != "the MCP task was cancelled: cancelled by the client" {
		t.Errorf("task c = %+v", out)
	}
	if out, _ := poll(start("ask")); out.Kind != ToolFailed || !strings.Contains(out.Text, `cannot provide yet (an answer to "Which queue?")`) {
		t.Errorf("task ask = %+v", out)
	}
	if p := s.PollTask(ctx, "mcp:ts/job", "task-nope"); p.Outcome == nil || p.Outcome.Kind != OutcomeUnknown || !strings.Contains(p.Outcome.Err.Error(), "unknown task task-nope") {
		t.Errorf("an unknown task = %+v", p)
	}
	log := taskLog(t, logPath)
	if n := countMethod(log, "tasks/cancel"); n != 2 {
		t.Errorf("%d tasks/cancel, want 2 (task c, and task ask)", n)
	}
	var named int
	for _, m := range log {
		if m["method"] == "header" && strings.HasPrefix(m["mcp_name"].(string), "task-") {
			named++
		}
	}
	if want := countMethod(log, "tasks/get") + countMethod(log, "tasks/cancel"); named != want {
		t.Errorf("%d requests carried Mcp-Name, want %d (every tasks/* request)", named, want)
	}
	for _, m := range log {
		if m["method"] == "tools/call" && m["tasks"] != true {
			t.Errorf("a tools/call without the tasks extension: %v", m)
		}
	}
}

// TestTasksOverStdioArePolledInsideTheCall: a stdio server's task lives
// in its process, so the call polls it on its own connection until it
// ends; one that outlasts the task wait timeout is cancelled and its
// outcome is unknown.
func TestTasksOverStdioArePolledInsideTheCall(t *testing.T) {
	bin := taskServer(t)
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	s := newSource(t, []Server{
		{Name: "quick", Command: bin, Args: []string{"-polls", "2", "-log", logPath}},
		{Name: "slow", Command: bin, Args: []string{"-polls", "1000", "-log", logPath}, TaskWaitTimeout: 1500 * time.Millisecond},
	}, Options{})
	ctx := context.Background()
	if out := s.Call(ctx, "mcp:quick/job", json.RawMessage(`{"name":"b"}`), "k-b", nil); out.Kind != Succeeded || out.Text != "job b done" {
		t.Errorf("quick = %+v", out)
	}
	out := s.Call(ctx, "mcp:slow/job", json.RawMessage(`{"name":"z"}`), "k-z", nil)
	if out.Kind != OutcomeUnknown || !strings.Contains(out.Err.Error(), "did not end within 1.5s") {
		t.Errorf("slow = %+v", out)
	}
	log := taskLog(t, logPath)
	if n := countMethod(log, "tasks/cancel"); n != 1 {
		t.Errorf("%d tasks/cancel, want 1 (the slow task)", n)
	}
	if n := countMethod(log, "tasks/get"); n < 4 {
		t.Errorf("%d tasks/get, want the quick task's 3 and the slow task's", n)
	}
}

func TestNextPollInterval(t *testing.T) {
	for _, tt := range []struct{ server, previous, want time.Duration }{
		{0, 0, time.Second},
		{100 * time.Millisecond, 0, time.Second},
		{1500 * time.Millisecond, 0, 2 * time.Second},
		{time.Second, time.Second, 2 * time.Second},
		{time.Second, 40 * time.Second, time.Minute},
		{5 * time.Minute, time.Minute, 5 * time.Minute},
		{3 * time.Second, time.Second, 3 * time.Second},
	} {
		if got := NextPollInterval(tt.server, tt.previous); got != tt.want {
			t.Errorf("NextPollInterval(%s, %s) = %s, want %s", tt.server, tt.previous, got, tt.want)
		}
	}
}

// TestTaskQuestionsAreAnsweredWithTasksUpdate: a task in input_required
// with one enum elicitation is a question; AnswerTask sends the answer
// (or a decline) with tasks/update, only while the task still lists that
// request, and the task then ends with it.
func TestTaskQuestionsAreAnsweredWithTasksUpdate(t *testing.T) {
	url, logPath := httpTaskServer(t, 1)
	s := newSource(t, []Server{{Name: "ts", URL: url}}, Options{})
	ctx := context.Background()
	ask := func(name string) (*Task, *InputRequest) {
		t.Helper()
		out := s.Call(ctx, "mcp:ts/job", json.RawMessage(`{"name":"choose"}`), "k-"+name, nil)
		if out.Kind != TaskStarted {
			t.Fatalf("Call = %+v", out)
		}
		for i := 0; i < 5; i++ {
			p := s.PollTask(ctx, "mcp:ts/job", out.Task.ID)
			if p.Outcome != nil {
				t.Fatalf("poll = %+v", p.Outcome)
			}
			if p.Input != nil {
				if p.Task.Status != TaskInputRequired || p.Input.Question != "Which queue?" || strings.Join(p.Input.Choices, ",") != "fast,slow" ||
					QuestionKey(p.Input.Continuation) != "queue-"+out.Task.ID {
					t.Fatalf("question = %+v (task %+v)", p.Input, p.Task)
				}
				return out.Task, p.Input
			}
		}
		t.Fatal("the task never asked")
		return nil, nil
	}
	task, in := ask("a")
	sent, p := s.AnswerTask(ctx, "mcp:ts/job", task.ID, in.Continuation, ResolutionAnswered, "slow")
	if !sent || p.Outcome != nil {
		t.Fatalf("AnswerTask = %v, %+v", sent, p)
	}
	if p := s.PollTask(ctx, "mcp:ts/job", task.ID); p.Outcome == nil || p.Outcome.Kind != Succeeded || p.Outcome.Text != "job choose: slow" {
		t.Errorf("after the answer: %+v", p)
	}
	// The task took the answer: a second one is never sent.
	if sent, p := s.AnswerTask(ctx, "mcp:ts/job", task.ID, in.Continuation, ResolutionAnswered, "fast"); sent || p.Outcome == nil || p.Outcome.Kind != Succeeded {
		t.Errorf("a second answer: sent %v, %+v", sent, p)
	}
	task, in = ask("b")
	if sent, _ := s.AnswerTask(ctx, "mcp:ts/job", task.ID, in.Continuation, ResolutionDeclined, ""); !sent {
		t.Fatal("the decline was not sent")
	}
	if p := s.PollTask(ctx, "mcp:ts/job", task.ID); p.Outcome == nil || p.Outcome.Text != "job choose: decline" {
		t.Errorf("after the decline: %+v", p)
	}
	if n := countMethod(taskLog(t, logPath), "tasks/update"); n != 2 {
		t.Errorf("%d tasks/update, want 2", n)
	}
}
