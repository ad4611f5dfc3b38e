package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestApprovalSurvivesAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.StartWorker()
	id := start(t, s, "call:approve_write:a")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if in.ToolName != "approve_write" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v", in)
	}
	w.Kill() // SIGKILL while the session waits for approval
	s.StartWorker()
	ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true})
	if err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: approve_write=succeeded:wrote a")
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times, want 1", n)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCallSingleAttemptTool); n != 1 {
		t.Errorf("CallSingleAttemptTool completed %d times, want 1: %+v", n, h)
	}
	if n := countSteps(h, "completed", wire.StepRunModel); n != 2 {
		t.Errorf("RunModel completed %d times, want 2", n)
	}
	// A second resolve of the same interrupt is refused.
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || ok {
		t.Errorf("second approve = %v, %v; want false", ok, err)
	}
}

func TestWriteKilledMidCallIsOutcomeUnknownAndRanOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("tool-w")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:write_gate:w")
	reached(t, gate)
	w.Kill()
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: write_gate=outcome_unknown:"+pluginapi.OutcomeUnknownToolResult)
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("write_gate ran %d times, want 1", n)
	}

	// A fork right after the unknown outcome (before the answer) holds
	// the call's outcome-unknown result, which its next model call sees;
	// the write is not run again.
	sessions := s.Sessions.WithMessages(s.MessageStore(t))
	fork, err := sessions.ForkSession(ctx(t), id, client.ForkOptions{AtSequence: 3, InitialMessage: "items"})
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, s.WaitForSnapshot("the fork's turn", fork, idleWithAnswer), "items=4 users=call:write_gate:w|items")
	stored, err := s.StoredMessages(fork)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) < 3 || stored[2].ToolStatus != pluginapi.ToolCallOutcomeUnknown || !strings.Contains(stored[2].Text, pluginapi.OutcomeUnknownToolResult) {
		t.Fatalf("the fork's third message: %+v", stored[min(2, len(stored)-1)])
	}
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("after the fork write_gate ran %d times, want 1", n)
	}
}

func TestReadKilledMidCallRunsAgain(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("tool-r")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:read_gate:r")
	reached(t, gate)
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: read_gate=succeeded:read r")
	if n := s.Log().Count("tool", "read_gate"); n != 2 {
		t.Errorf("read_gate ran %d times, want 2", n)
	}
}

func TestToolStepsOfOneResponseRunInParallel(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	g1, g2 := s.Gate("tool-p1"), s.Gate("tool-p2")
	for _, g := range []interface{ Arm() error }{g1, g2} {
		if err := g.Arm(); err != nil {
			t.Fatal(err)
		}
	}
	s.StartWorker()
	id := start(t, s, "call:read_gate:p1 call:idem_gate:p2")
	// Both tools stand at their gates at once: neither waits for the other.
	reached(t, g1)
	reached(t, g2)
	snap, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.ToolCalls) != 2 || snap.State.Status != wire.StatusRunningTools {
		t.Fatalf("snapshot while both run: %+v", snap)
	}
	_ = g1.Release()
	_ = g2.Release()
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: read_gate=succeeded:read p1; idem_gate=succeeded:wrote p2")
}

func TestPluginKilledMidRunModelIsRetried(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("model-m")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	id := start(t, s, "modelgate:m")
	pid := reached(t, gate)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the plugin %d: %v", pid, err)
	}
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "echo: modelgate:m")
	if n := s.Log().Count("model", "test"); n != 2 {
		t.Errorf("model called %d times, want 2 (the killed call and its retry)", n)
	}
	if snap.Usage.ModelCalls != 1 {
		t.Errorf("usage counts %d model calls, want 1 (only the call that returned)", snap.Usage.ModelCalls)
	}
}

func TestToolStepThatNeverStartedIsNotRun(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("before-start-write_gate")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:write_gate:n")
	reached(t, gate)
	w.Kill() // before the tool Step recorded that the tool started
	_ = gate.Release()
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	answer := lastText(snap)
	if !contains(answer, "write_gate=failed:The tool call failed: "+session.ToolCallNotRunErrorPrefix+": ") {
		t.Errorf("answer = %q, want a failure with the not-run prefix", answer)
	}
	if n := s.Log().Count("tool", "write_gate"); n != 0 {
		t.Errorf("write_gate ran %d times, want 0", n)
	}
}

func TestFailedTurnRecordsErrorAndNextTurnWorks(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "fail")
	snap := s.WaitForSnapshot("the failed turn", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.LastTurnError != "" && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if !contains(snap.State.LastTurnError, "scripted model failure") {
		t.Errorf("last_turn_error = %q", snap.State.LastTurnError)
	}
	if n := s.Log().Count("model", "test"); n != 3 {
		t.Errorf("model called %d times, want 3 attempts", n)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "hello again"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the next answer", id, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && s.State.LastTurnError == ""
	})
	wantAnswer(t, snap, "echo: hello again")
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "   "); err != nil || ok {
		t.Errorf("blank message = %v, %v; want false", ok, err)
	}
}

func TestEngineRestartMidSession(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "call:approve_write:e")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	s.StopEngine()
	s.StartEngine()
	ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true})
	if err != nil || !ok {
		t.Fatalf("approve after the restart: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: approve_write=succeeded:wrote e")
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times, want 1", n)
	}
}

// TestPluginDiedWhileIdleIsRelaunchedForTheApprovedWrite kills the runner
// plugin while the session waits for approval: the approved write runs once
// on a relaunched plugin instead of failing as outcome unknown.
func TestPluginDiedWhileIdleIsRelaunchedForTheApprovedWrite(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "call:approve_write:idle")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	b, err := os.ReadFile(filepath.Join(s.Dir, "plugin.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the plugin %d: %v", pid, err)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: approve_write=succeeded:wrote idle")
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times, want 1", n)
	}
}

// TestPermanentModelErrorFailsTheTurnWithoutRetries: a runner that marks
// its failure permanent (a provider's 400) gets one attempt, not three.
func TestPermanentModelErrorFailsTheTurnWithoutRetries(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "permfail")
	snap := s.WaitForSnapshot("the failed turn", id, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.LastTurnError != "" && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if !strings.Contains(snap.State.LastTurnError, "scripted permanent failure (HTTP 400)") {
		t.Errorf("last_turn_error = %q", snap.State.LastTurnError)
	}
	if n := s.Log().Count("model", "test"); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
}

// TestARestartedPluginGetsTheWholeTranscript: the worker sends a model call
// only the messages the plugin was not sent before; a plugin that restarted
// has none, answers so, and gets the whole transcript: the model sees every
// message either way.
func TestARestartedPluginGetsTheWholeTranscript(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "one")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	turn := func(n int, text string) string {
		t.Helper()
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, text); err != nil || !ok {
			t.Fatalf("send %q: %v %v", text, ok, err)
		}
		return lastText(s.WaitForSnapshot(fmt.Sprint("turn ", n), id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == n }))
	}
	if got, want := turn(2, "items"), "items=3 users=one|items"; got != want {
		t.Errorf("turn 2 answer = %q, want %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, "plugin.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the plugin %d: %v", pid, err)
	}
	if got, want := turn(3, "items"), "items=5 users=one|items|items"; got != want {
		t.Errorf("turn 3 answer after the plugin restarted = %q, want %q", got, want)
	}
	if got, want := turn(4, "items"), "items=7 users=one|items|items|items"; got != want {
		t.Errorf("turn 4 answer = %q, want %q", got, want)
	}
}
