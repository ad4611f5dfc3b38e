package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/client"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

var updateHistories = flag.Bool("update-histories", false, "record the replay histories in internal/sessionflow/testdata/histories")

// TestRecordApprovalTurnHistory runs a full turn with an approval. It
// recorded approval_turn.json once; that file now stands for the sessions
// that kept their messages in the workflow and is never recorded again.
func TestRecordApprovalTurnHistory(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "call:read_gate:h call:approve_write:h")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: read_gate=succeeded:read h; approve_write=succeeded:wrote h")
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "thanks"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	s.WaitForSnapshot("the second answer", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && lastText(s) == "echo: thanks" })
}

// TestRecordStoreSessionHistory runs a session that keeps its messages in
// the store (a window of 2, chunks of 2, the newest 6 retained): a turn
// with an approval, a message sent by reference, and turns enough to roll
// chunks (and, in sessions before version 4, to delete old ones). With
// -update-histories it stores the history as store_v4_turns.json for the
// replay test of internal/sessionflow.
func TestRecordStoreSessionHistory(t *testing.T) {
	t.Parallel()
	s := storeStack(t)
	w := s.StartWorker()
	id := start(t, s, "call:read_gate:h call:approve_write:h")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	sessions := s.Sessions.WithMessages(s.MessageStore(t))
	texts := []string{strings.Repeat("long ", 20_000), "two", "three", "four", "five"}
	for i, text := range texts {
		if ok, err := sessions.SendUserMessage(ctx(t), id, text); err != nil || !ok {
			t.Fatalf("send %d: %v %v", i, ok, err)
		}
		s.WaitForSnapshot(fmt.Sprintf("turn %d", i+2), id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == i+2 })
	}
	page, err := s.Sessions.ListAgentMessages(ctx(t), id, wire.ListMessagesRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	// Without compaction nothing is deleted (session version 4,
	// RetentionVersion): the model's input is every message. The recorded
	// store_turns.json comes from a version-3 session, whose retention
	// deleted chunks without compaction; it replays as it ran.
	if page.DeletedBeforeSequence != 0 || page.FirstSequence != 1 {
		t.Fatalf("retention deleted before %d without compaction; want nothing deleted", page.DeletedBeforeSequence)
	}
	if b, err := os.ReadFile(w.LogPath); err != nil || strings.Contains(string(b), "the model input starts after messages retention deleted") {
		t.Errorf("the worker warns about deleted messages, or its log is unreadable (%v)", err)
	}
	if *updateHistories {
		// store_turns.json is the version-3 session of this test, which
		// deleted chunks without compaction; it stays, and replays as it ran.
		recordHistory(t, s, id, "store_v4_turns.json")
	}
}

// recordHistory writes a session's history to
// internal/sessionflow/testdata/histories/name.
func recordHistory(t *testing.T, s *agenttest.Stack, id, name string) {
	t.Helper()
	hist := &historypb.History{}
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "sessionflow", "testdata", "histories", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events in %s", len(hist.Events), path)
}

// TestRecordCompactionSpendHistory runs a session through compactions, a
// settings update and a spend limit that ends its last turn, and records
// its history as compaction_spend_turns.json for the replay test of
// internal/sessionflow with -update-histories.
func TestRecordCompactionSpendHistory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(compactionConfig(plugin), "context_window_tokens: 20000", "context_window_tokens: 4000", 1)
	cfg = strings.Replace(cfg, "    run_model_limit:", "    spend_limits: {per_session: {model_calls: 7}}\n    run_model_limit:", 1)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "hello")
	s.WaitForSnapshot("turn 1", id, idleWithAnswer)
	filler := strings.Repeat("abcdefgh ", 400)
	var snap wire.Snapshot
	for turn := 2; turn <= 8; turn++ {
		if turn == 4 {
			if ok, err := s.Sessions.UpdateSessionSettings(ctx(t), id, []byte(`{"model":"deep"}`)); err != nil || !ok {
				t.Fatalf("settings: %v %v", ok, err)
			}
		}
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, fmt.Sprintf("t%d %s", turn, filler)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		snap = s.WaitForSnapshot(fmt.Sprint("turn ", turn), id, idleAfter(turn))
		if strings.HasPrefix(snap.State.LastTurnError, wire.SpendLimitErrorPrefix) {
			break
		}
	}
	if snap.ContextSummary == nil || snap.Spend == nil || snap.Spend.Refused == nil {
		t.Fatalf("the session did not compact and reach its limit: summary %+v, spend %+v, error %q", snap.ContextSummary, snap.Spend, snap.State.LastTurnError)
	}
	if *updateHistories {
		recordHistory(t, s, id, "compaction_spend_turns.json")
	}
}

// TestRecordRecoveryHistory runs a session with a recovery budget
// (max_attempts 1): a write killed mid-call on its one attempt is its
// call's outcome, unknown, and the turn answers; a model call that keeps
// failing runs out of the budget on attempt 2 (its own limit is 3) and
// fails the turn with the budget's last_turn_error; the next turn answers.
// With -update-histories it records recovery_turns.json for the replay
// test of internal/session.
func TestRecordRecoveryHistory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    recovery: {max_attempts: 1}\n    run_model_limit:", 1)
	s := agenttest.NewStack(t, cfg)
	gate := s.Gate("tool-w")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "call:write_gate:w")
	reached(t, gate)
	w.Kill()
	s.StartWorker()
	snap := s.WaitForSnapshot("turn 1", id, idleAfter(1))
	wantAnswer(t, snap, "done: write_gate=outcome_unknown:"+pluginapi.OutcomeUnknownToolResult)
	if snap.State.LastTurnError != "" {
		t.Fatalf("turn 1 failed: %s", snap.State.LastTurnError)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "fail"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("turn 2", id, idleAfter(2))
	const want = "the turn ran out of its recovery budget: its Steps were retried 1 times (recovery.max_attempts 1), and RunModel failed on attempt 2: "
	if !strings.HasPrefix(snap.State.LastTurnError, want) {
		t.Fatalf("turn 2: last_turn_error %q, want it to start with %q", snap.State.LastTurnError, want)
	}
	if n := s.Log().Count("model", "test"); n != 4 {
		t.Errorf("%d model calls, want 4 (two in turn 1, two attempts in turn 2)", n)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "hello"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("turn 3", id, idleAfter(3))
	wantAnswer(t, snap, "echo: hello")
	if n := s.Log().Count("tool", "write_gate"); n != 1 {
		t.Errorf("write_gate ran %d times, want 1", n)
	}
	if *updateHistories {
		recordHistory(t, s, id, "recovery_turns.json")
	}
}

// TestRecordSessionMetadataHistory runs a session started with a title
// (the memo the client sets), renamed and archived with
// set_session_metadata between two turns, then closed. With
// -update-histories it records metadata_turns.json for the replay test of
// internal/sessionflow.
func TestRecordSessionMetadataHistory(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "hello")
	s.WaitForSnapshot("the first answer", id, idleWithAnswer)
	title, archived := "Renamed session", true
	if ok, err := s.Sessions.SetSessionMetadata(ctx(t), id, wire.SessionMetadataRequest{Title: &title, Archived: &archived}); err != nil || !ok {
		t.Fatalf("set the metadata: %v %v", ok, err)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "again"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	s.WaitForSnapshot("the second answer", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && lastText(s) == "echo: again" })
	d, err := s.Client.DescribeWorkflowExecution(ctx(t), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if memo := d.GetWorkflowExecutionInfo().GetMemo().GetFields(); memo[wire.MemoTitle] == nil || memo[wire.MemoArchived] == nil {
		t.Errorf("the memo after set_session_metadata: %v", memo)
	}
	if ok, err := s.Sessions.CloseSession(ctx(t), id); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	waitCompleted(t, s, id)
	if *updateHistories {
		recordHistory(t, s, id, "metadata_turns.json")
	}
}

// TestRecordForkHistory forks a store session (a window of 2, chunks of 2)
// after a turn with an approved write and two more turns, with a first
// message, and runs the fork's turns: one that answers, one with a tool
// call. With -update-histories it records the fork's history as
// fork_turns.json for the replay test of internal/sessionflow.
func TestRecordForkHistory(t *testing.T) {
	t.Parallel()
	s := storeStack(t)
	s.StartWorker()
	sessions := s.Sessions.WithMessages(s.MessageStore(t))
	id := start(t, s, "call:read_gate:h call:approve_write:h")
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	for i, text := range []string{"two", "three"} {
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, text); err != nil || !ok {
			t.Fatalf("send %d: %v %v", i, ok, err)
		}
		s.WaitForSnapshot(fmt.Sprintf("turn %d", i+2), id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == i+2 })
	}
	last := s.WaitForSnapshot("the parent", id, idleWithAnswer)
	at := last.Messages[len(last.Messages)-1].Sequence
	fork, err := sessions.ForkSession(ctx(t), id, client.ForkOptions{AtSequence: at, InitialMessage: "items"})
	if err != nil {
		t.Fatal(err)
	}
	fs := s.WaitForSnapshot("the fork's first turn", fork, idleWithAnswer)
	if got := lastText(fs); !strings.HasPrefix(got, "items=") {
		t.Fatalf("the fork's first answer = %q", got)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), fork, "call:read_gate:f"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	fs = s.WaitForSnapshot("the fork's second turn", fork, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 2 })
	wantAnswer(t, fs, "done: read_gate=succeeded:read f")
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times across the session and its fork, want 1", n)
	}
	if *updateHistories {
		recordHistory(t, s, fork, "fork_turns.json")
	}
}

// TestRecordSubAgentHistory records a parent session's delegations and
// one child's history: a waiting child whose approval came through the
// parent, one the parent's cancel_turn stopped, and a background child
// whose answer started the parent's next turn.
func TestRecordSubAgentHistory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := subAgentConfig(plugin)
	cfg = strings.Replace(cfg, "      - {agent: helper, description: Runs the task it is given., max_turns: 4}\n",
		"      - {agent: helper, description: Runs the task it is given., max_turns: 4}\n      - {agent: bghelper, mode: background}\n", 1)
	i := strings.Index(cfg, "  - name: helper\n")
	bg := strings.Replace(cfg[i:], "  - name: helper\n", "  - name: bghelper\n", 1)
	bg = strings.Replace(bg, "flow_type: "+flowType+"Helper", "flow_type: "+flowType+"Background", 1)
	s := agenttest.NewStack(t, cfg+bg)
	s.StartWorker()
	parent := start(t, s, delegate("call:approve_write:r1"))
	snap := s.WaitForSnapshot("the child's approval", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, SessionID: in.SessionID}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	s.WaitForSnapshot("the first answer", parent, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 1 })
	if ok, err := s.Sessions.SendUserMessage(ctx(t), parent, delegate("call:approve_write:r2")); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	s.WaitForSnapshot("the second child's approval", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 && s.State.TurnCount == 2 })
	if ok, err := s.Sessions.CancelTurn(ctx(t), parent, "turn-2"); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	s.WaitForSnapshot("the cancelled turn", parent, func(s wire.Snapshot) bool { return s.State.ActiveTurnID == "" && s.State.TurnCount == 2 })
	b, _ := json.Marshal(map[string]string{"task": "call:noop:r3"})
	if ok, err := s.Sessions.SendUserMessage(ctx(t), parent, "args:delegate_to_bghelper:"+string(b)); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the background answer's turn", parent, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 4 })
	if !strings.Contains(lastText(snap), "noop=succeeded") {
		t.Fatalf("the last answer: %q", lastText(snap))
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
	waitClosed(t, s, parent+".sub-1", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	if *updateHistories {
		recordHistory(t, s, parent, "subagent_turns.json")
		recordHistory(t, s, parent+".sub-1", "subagent_child_turns.json")
	}
}

// TestRecordNotifyHistory records a session whose approval was notified
// (a SendNotification Step), escalated on a timer, warned of at
// interrupt_expiring and then answered, and whose notice to a refusing
// channel failed.
func TestRecordNotifyHistory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	rc, hooks := newReceiver(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    default_tool_effect: unclassified\n", `    default_tool_effect: unclassified
    interrupt_deadline: 1m
    interrupt_expiring_lead: 55s
    notify:
      - {kinds: [approval], channel: ops, escalate_after: 2s, escalate_to: oncall}
      - {channel: broken}
`, 1)
	s := agenttest.NewStack(t, cfg+fmt.Sprintf(`notifications:
  channels:
    ops: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET}
    oncall: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET}
    broken: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET}
`, hooks+"/ops", hooks+"/oncall", hooks+"/refuse"))
	s.Setenv("DEX_E2E_HOOK_SECRET", hookSecret)
	s.StartWorker()
	id := start(t, s, "call:approve_write:H1")
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	// The first notice, the escalation (2 s), the expiring notice (5 s).
	if err := agenttest.WaitFor(ctx(t), "three notices", 60*time.Second, func() (bool, error) {
		return len(rc.got("/ops")) == 2 && len(rc.got("/oncall")) == 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	if ops := rc.got("/ops"); !ops[1].Expiring || ops[0].Expiring {
		t.Fatalf("ops notices: %+v", ops)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	if *updateHistories {
		recordHistory(t, s, id, "notify_turns.json")
	}
}
