package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// mcpPeer returns node and the entry script of an MCP server installed by
// internal/mcpsource/testdata/install.sh, or marks the peer missing.
func mcpPeer(t *testing.T, pkg string) (node, script string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	script, err := filepath.Abs(filepath.Join("..", "mcpsource", "testdata", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if _, serr := os.Stat(script); err != nil || serr != nil {
		testpeer.Missing(t, "@modelcontextprotocol/"+pkg+" (and node)", "bash internal/mcpsource/testdata/install.sh")
	}
	return node, script
}

// peerConfig is the test config whose agent has the MCP server name,
// declared by server (the YAML flow mapping of mcp_servers.name).
func peerConfig(t *testing.T, name, server string) string {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    mcp: ["+name+"]\n    run_model_limit:", 1)
	return cfg + "mcp_servers:\n  " + name + ": " + server + "\n"
}

// waitListening waits until a server a test started listens on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func argsToken(tool string, args any) string {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return "args:" + tool + ":" + string(b)
}

// TestMCPFilesystemServerOverStdio: the real server-filesystem over stdio.
// write_file (idempotentHint) runs without approval; move_file (no
// idempotentHint: unclassified) waits for its approval and then runs once
// in a single-attempt Step.
func TestMCPFilesystemServerOverStdio(t *testing.T) {
	t.Parallel()
	node, script := mcpPeer(t, "server-filesystem")
	dir := t.TempDir()
	s := agenttest.NewStack(t, peerConfig(t, "fs", fmt.Sprintf("{command: %q, args: [%q, %q]}", node, script, dir)))
	s.StartWorker()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	id := start(t, s, argsToken("fs__write_file", map[string]string{"path": a, "content": "hello"}))
	snap := s.WaitForSnapshot("the write's answer", id, idleWithAnswer)
	if got := lastText(snap); !strings.HasPrefix(got, "done: fs__write_file=succeeded:Successfully wrote to "+a) {
		t.Fatalf("write answer = %q", got)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, argsToken("fs__move_file", map[string]string{"source": a, "destination": b})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the move's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if in := snap.PendingInterrupts[0]; in.ToolName != "fs__move_file" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v", in)
	}
	if c := findCall(snap, "fs__move_file"); c == nil || c.Effect != wire.EffectUnclassified || c.ToolSourceReference != "mcp:fs/move_file" {
		t.Errorf("move record = %+v", c)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatalf("a.txt before the approval: %v", err)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the move's answer", id, idleAfter(2))
	if got := lastText(snap); !strings.HasPrefix(got, "done: fs__move_file=succeeded:Successfully moved "+a+" to "+b) {
		t.Errorf("move answer = %q", got)
	}
	if data, err := os.ReadFile(b); err != nil || string(data) != "hello" {
		t.Errorf("b.txt = %q, %v", data, err)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCallSingleAttemptTool); n != 1 {
		t.Errorf("CallSingleAttemptTool completed %d times, want 1 (the move)", n)
	}
	if n := countSteps(h, "completed", wire.StepCallTool); n != 1 {
		t.Errorf("CallTool completed %d times, want 1 (the write)", n)
	}
}

// TestMCPFilesystemReadKilledMidCallIsSentAgain: read_text_file of a FIFO
// blocks in the real server until a writer comes; the worker (with the
// server process, in its process group) is SIGKILLed while the read waits;
// the new worker's retry reads again and gets what the test then writes.
func TestMCPFilesystemReadKilledMidCallIsSentAgain(t *testing.T) {
	t.Parallel()
	node, script := mcpPeer(t, "server-filesystem")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "slow.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	s := agenttest.NewStack(t, peerConfig(t, "fs", fmt.Sprintf("{command: %q, args: [%q, %q]}", node, script, dir)))
	w := s.StartWorker()
	id := start(t, s, argsToken("fs__read_text_file", map[string]string{"path": fifo}))
	// A reader has the FIFO open once a non-blocking open for writing works.
	openWriter := func() *os.File {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				return os.NewFile(uintptr(fd), fifo)
			}
			if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
				t.Fatalf("wait for the server to read the FIFO: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := openWriter()
	w.Kill()
	first.Close()
	s.StartWorker()
	second := openWriter()
	if _, err := second.WriteString("the second read"); err != nil {
		t.Fatal(err)
	}
	second.Close()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: fs__read_text_file=succeeded:the second read")
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	var attempt int32
	for _, e := range h {
		if e.EventType == "completed" && e.StepType == wire.StepCallTool {
			attempt = e.Attempt
		}
	}
	if attempt != 2 {
		t.Errorf("the read completed in attempt %d, want 2: %+v", attempt, h)
	}
}

// TestMCPMemoryServerOverStdio: the real server-memory gets exactly the
// environment its config grants (MEMORY_FILE_PATH, a worker variable);
// create_entities (no hints) waits for approval, read_graph
// (readOnlyHint) does not, and sees what the first call stored.
func TestMCPMemoryServerOverStdio(t *testing.T) {
	t.Parallel()
	node, script := mcpPeer(t, "server-memory")
	file := filepath.Join(t.TempDir(), "memory.jsonl")
	s := agenttest.NewStack(t, peerConfig(t, "memory", fmt.Sprintf("{command: %q, args: [%q], env: [MEMORY_FILE_PATH]}", node, script)))
	s.Setenv("MEMORY_FILE_PATH", file)
	s.StartWorker()
	entity := map[string]any{"entities": []map[string]any{{"name": "order-7", "entityType": "order", "observations": []string{"refunded"}}}}
	id := start(t, s, argsToken("memory__create_entities", entity))
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the first answer", id, idleWithAnswer)
	if got := lastText(snap); !strings.HasPrefix(got, "done: memory__create_entities=succeeded:") || !strings.Contains(got, "order-7") {
		t.Fatalf("create answer = %q", got)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, argsToken("memory__read_graph", map[string]any{})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the second answer", id, idleAfter(2))
	if got := lastText(snap); !strings.HasPrefix(got, "done: memory__read_graph=succeeded:") || !strings.Contains(got, "refunded") {
		t.Errorf("read answer = %q", got)
	}
	if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), "order-7") {
		t.Errorf("the memory file the config granted = %q, %v", data, err)
	}
}

// TestMCPEverythingServerOverStreamableHTTP: the real server-everything
// over Streamable HTTP (a stateful server of the 2025 protocol, reached
// with the initialize fallback): a read with a result, a long-running
// operation whose progress notifications reach the SSE stream as
// mcp.tool_progress events, and a task-only tool (taskSupport "required",
// the 2025-11-25 task shape) polled on its call's connection.
func TestMCPEverythingServerOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	node, script := mcpPeer(t, "server-everything")
	port := agenttest.FreePort(t)
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", port))
	cfg, base := builtInConfig(t, "    mcp: [everything]\n")
	// The research tool has no hints: it would wait for an approval.
	cfg = withPolicy(cfg, "everything__simulate-research-query: {effect: read}")
	cfg += fmt.Sprintf("mcp_servers:\n  everything: {url: \"http://127.0.0.1:%d/mcp\"}\n", port)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, argsToken("everything__get-sum", map[string]int{"a": 2, "b": 3})+" "+
		argsToken("everything__trigger-long-running-operation", map[string]int{"duration": 1, "steps": 2})+" "+
		argsToken("everything__simulate-research-query", map[string]string{"topic": "durable"}))
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	got := lastText(snap)
	if !strings.Contains(got, "everything__get-sum=succeeded:The sum of 2 and 3 is 5") ||
		!strings.Contains(got, "everything__trigger-long-running-operation=succeeded:Long running operation completed. Duration: 1 seconds, Steps: 2.") ||
		!strings.Contains(got, "everything__simulate-research-query=succeeded:# Research Report: durable") {
		t.Errorf("answer = %q", got)
	}
	frames := eventsOf(t, base, id, func(f sseFrame) bool { return f.data["type"] == "turn_completed" })
	progress := find(frames, "mcp.tool_progress", nil, t)
	if len(progress) != 2 {
		t.Fatalf("%d mcp.tool_progress events, want 2: %+v", len(progress), frames)
	}
	p := payloadOf(t, progress[1])
	if p["tool_name"] != "everything__trigger-long-running-operation" || p["progress"] != 2.0 || p["total"] != 2.0 || p["tool_call_id"] == "" {
		t.Errorf("the last progress event: %+v", p)
	}
}

// TestOrdersDemoWithTheMCPConfig runs configs/mcp.yaml as it is, except
// that the memory server is the installed package run by node instead of
// npx (no download in tests) and its memory file is the test's: the orders
// demo notes an order through the memory server's write (unclassified: it
// waits for the approval) and reads it back (a read, at once).
func TestOrdersDemoWithTheMCPConfig(t *testing.T) {
	t.Parallel()
	node, script := mcpPeer(t, "server-memory")
	data, err := os.ReadFile(filepath.Join("..", "..", "configs", "mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	cfg := string(data)
	for old, repl := range map[string]string{
		"command: ../bin/dex-runner-orders": "command: " + plugin,
		"command: npx":                      "command: " + node,
		`args: [-y, "@modelcontextprotocol/server-memory@2026.8.31"]`: fmt.Sprintf("args: [%q]", script),
		"env: [PATH, HOME]":      "env: [PATH, HOME, MEMORY_FILE_PATH]",
		"${DEX_DATA_DIR:-.dex}/": "{{DIR}}/",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("configs/mcp.yaml has no %q", old)
		}
		cfg = strings.ReplaceAll(cfg, old, repl)
	}
	file := filepath.Join(t.TempDir(), "memory.jsonl")
	s := agenttest.NewStack(t, cfg)
	s.Setenv("MEMORY_FILE_PATH", file)
	s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "note order 7 is a gift"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the note's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if in := snap.PendingInterrupts[0]; in.ToolName != "memory__create_entities" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v", in)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the note", id, idleWithAnswer)
	wantAnswer(t, snap, "Noted.")
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "what do you remember"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the recall", id, idleAfter(2))
	if got := lastText(snap); got != "I remember:\norder 7: is a gift" {
		t.Errorf("recall = %q", got)
	}
	if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), "is a gift") {
		t.Errorf("memory file = %q, %v", data, err)
	}
}

// taskServerStack runs the tasks extension's test server over Streamable
// HTTP (-polls working polls per task) and a worker whose agent has it.
func taskServerStack(t *testing.T, polls int, extra ...string) (*agenttest.Stack, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	bin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/mcpsource/testdata/taskserver")
	port := agenttest.FreePort(t)
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	cmd := exec.Command(bin, append([]string{"-http", fmt.Sprintf("127.0.0.1:%d", port), "-log", logPath, "-polls", fmt.Sprint(polls)}, extra...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", port))
	s := agenttest.NewStack(t, peerConfig(t, "ts", fmt.Sprintf("{url: \"http://127.0.0.1:%d/mcp\"}", port)))
	return s, logPath
}

// requestLog reads the task server's log of requests by method.
func requestLog(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m struct{ Method string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out[m.Method]++
	}
	return out
}

// TestMCPTaskIsPolledOnDurableTimers: a Streamable HTTP server answers the
// tools/call with a task (the tasks extension); the call waits for its
// task, and PollToolTask Steps on durable timers read it with tasks/get
// until it completes. The worker is SIGKILLed before the first poll (the
// server suggests 3 s between polls, so the kill lands in the timer's
// wait). The tool was called once; its result ends the turn.
func TestMCPTaskIsPolledOnDurableTimers(t *testing.T) {
	t.Parallel()
	s, logPath := taskServerStack(t, 1, "-interval", "3000")
	w := s.StartWorker()
	id := start(t, s, `args:ts__job:{"name":"a"}`)
	s.WaitForSnapshot("a waiting task", id, func(s wire.Snapshot) bool {
		c := findCall(s, "ts__job")
		return c != nil && c.Status == wire.ToolCallWaitingForTask && strings.HasPrefix(c.TaskID, "task-")
	})
	w.Kill()
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: ts__job=succeeded:job a done")
	reqs := requestLog(t, logPath)
	if reqs["tools/call"] != 1 || reqs["tasks/get"] != 2 {
		t.Errorf("requests at the server = %v, want one tools/call and 2 tasks/get", reqs)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepPollToolTask); n != 2 {
		t.Errorf("PollToolTask completed %d times, want 2", n)
	}
}

// TestMCPTaskCancelledWithTheTurn: cancel_turn abandons the waiting MCP
// task: CancelToolTask sends tasks/cancel, and the call records
// outcome_unknown.
func TestMCPTaskCancelledWithTheTurn(t *testing.T) {
	t.Parallel()
	s, logPath := taskServerStack(t, 1000)
	s.StartWorker()
	id := start(t, s, `args:ts__job:{"name":"long"}`)
	s.WaitForSnapshot("a waiting task", id, func(s wire.Snapshot) bool {
		c := findCall(s, "ts__job")
		return c != nil && c.Status == wire.ToolCallWaitingForTask
	})
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, "turn-1"); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	s.WaitForSnapshot("the cancelled turn", id, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 1
	})
	if reqs := requestLog(t, logPath); reqs["tasks/cancel"] != 1 || reqs["tools/call"] != 1 {
		t.Errorf("requests at the server = %v, want one tools/call and one tasks/cancel", reqs)
	}
}

// TestMCPTaskQuestionIsASessionQuestion: an MCP task asks which queue (an
// enum elicitation in input_required); the session raises the question
// <call>-input-1 and no Step runs while it waits; the worker is SIGKILLed
// during the wait; the answer goes to the task with tasks/update (once),
// and the task's result ends the turn.
func TestMCPTaskQuestionIsASessionQuestion(t *testing.T) {
	t.Parallel()
	s, logPath := taskServerStack(t, 1)
	s.StartWorker()
	id := start(t, s, `args:ts__job:{"name":"choose"}`)
	snap := s.WaitForSnapshot("the task's question", id, pendingQuestion)
	in := snap.PendingInterrupts[0]
	if in.InterruptID != in.ToolCallID+"-input-1" || in.Question != "Which queue?" || strings.Join(in.Choices, ",") != "fast,slow" {
		t.Fatalf("question = %+v", in)
	}
	waitingIn(t, s, id, wire.StepAwaitQuestionAnswer)
	s.KillWorkers()
	s.StartWorker()
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "slow"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: ts__job=succeeded:job choose: slow")
	if reqs := requestLog(t, logPath); reqs["tools/call"] != 1 || reqs["tasks/update"] != 1 {
		t.Errorf("requests at the server = %v, want one tools/call and one tasks/update", reqs)
	}
}

// TestRecordMCPTaskHistory records a session whose MCP calls ran as
// tasks on the tasks extension's test server: one polled on durable
// timers to its result, one whose question was answered with
// tasks/update, and one cancel_turn abandoned (tasks/cancel through
// CancelToolTask). internal/session replays it under changed settings.
func TestRecordMCPTaskHistory(t *testing.T) {
	t.Parallel()
	s, logPath := taskServerStack(t, 1)
	s.StartWorker()
	id := start(t, s, `args:ts__job:{"name":"a"}`)
	s.WaitForSnapshot("the first answer", id, idleWithAnswer)
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, `args:ts__job:{"name":"choose"}`); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap := s.WaitForSnapshot("the task's question", id, pendingQuestion)
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Answer: "fast"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the second answer", id, idleAfter(2))
	if got := lastText(snap); got != "done: ts__job=succeeded:job choose: fast" {
		t.Fatalf("second answer = %q", got)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, `args:ts__job:{"name":"ask"}`); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s.WaitForSnapshot("the third answer", id, idleAfter(3))
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, `args:ts__job:{"name":"fail"}`); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s.WaitForSnapshot("a waiting task", id, func(s wire.Snapshot) bool {
		c := findCall(s, "ts__job")
		return s.State.TurnCount == 4 && c != nil && c.Status == wire.ToolCallWaitingForTask
	})
	if ok, err := s.Sessions.CancelTurn(ctx(t), id, "turn-4"); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	s.WaitForSnapshot("the cancelled turn", id, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount == 4
	})
	if ok, err := s.Sessions.CloseSession(ctx(t), id); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	waitCompleted(t, s, id)
	if reqs := requestLog(t, logPath); reqs["tasks/update"] != 1 || reqs["tasks/cancel"] < 2 {
		t.Errorf("requests at the server = %v, want one tasks/update and the cancels of the ask and fail tasks", reqs)
	}
	if *updateHistories {
		recordHistory(t, s, id, "mcp_task_turns.json")
	}
}
