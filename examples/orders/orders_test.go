package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

func TestRefundIsAppliedOncePerIdempotencyKey(t *testing.T) {
	t.Parallel()
	s, err := OpenStore(filepath.Join(t.TempDir(), "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.Refund("7", 500, "s/turn-1/call"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	o, err := s.Get("7")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Refunds) != 1 || o.RefundedCents != 500 || o.Status != "partially_refunded" {
		t.Fatalf("order after 8 refunds with one key: %+v", o)
	}
	if _, _, err := s.Refund("7", 1_000_000, "other"); err == nil || !strings.Contains(err.Error(), "remain refundable") {
		t.Errorf("over-refund: %v", err)
	}
	if _, err := s.Get("nope"); err == nil {
		t.Errorf("unknown order found")
	}
}

// TestStoreModes checks that the store keeps its orders to the user: a
// directory it creates is 0700, its files 0600.
func TestStoreModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := OpenStore(filepath.Join(dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Refund("7", 500, "s/turn-1/call"); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "orders.json"): 0o600, filepath.Join(dir, "orders.json.lock"): 0o600}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s mode = %v, want %v", path, got, mode)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("the store's directory holds %d files, want orders.json and its lock", len(entries))
	}
}

type nopWriter struct{}

func (nopWriter) WriteTextDelta(string)          {}
func (nopWriter) WriteReasoningDelta(string)     {}
func (nopWriter) WriteEvent(string, any) error   { return nil }
func (nopWriter) Heartbeat()                     {}
func (nopWriter) SaveHeartbeatCheckpoint(string) {}

// TestRefundConversation drives the scripted model through the runner the
// way the session does: lookup, approval-gated refund, final answer.
func TestRefundConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	r := stepwise.NewRunner("orders", "test", buildAgent)
	cfg, _ := json.Marshal(Config{StorePath: filepath.Join(dir, "orders.json")})
	resp, err := r.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(resp.Tools, ","); got != "lookup_order,refund_order,request_return_label" {
		t.Errorf("Configure reported tools %q, want lookup_order,refund_order,request_return_label", got)
	}
	var msgs []pluginapi.Message
	store := func(ms []pluginapi.FrameworkMessage) {
		for _, m := range ms {
			msgs = append(msgs, pluginapi.Message{Sequence: int64(len(msgs) + 1), Role: m.Role, Text: m.Text, Item: m.Item})
		}
	}
	u, _ := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "orders", Text: "please refund order 7"})
	store([]pluginapi.FrameworkMessage{u.Message})
	turn := pluginapi.TurnContext{Agent: "orders", SessionID: "s", TurnID: "turn-1"}
	var records []pluginapi.ToolCall
	wantTools := []string{"lookup_order", "refund_order"}
	for i := 0; ; i++ {
		turn.Messages = msgs
		turn.ToolCalls = records
		resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: nopWriter{}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.TurnCompleted != nil {
			store(resp.TurnCompleted.NewMessages)
			break
		}
		req := resp.ToolCallsRequested
		if i >= len(wantTools) || len(req.ToolCalls) != 1 || req.ToolCalls[0].ToolName != wantTools[i] {
			t.Fatalf("model call %d asked for %+v", i, req.ToolCalls)
		}
		c := req.ToolCalls[0]
		if c.ToolName == "refund_order" && !c.Policy.ApprovalRequired() {
			t.Errorf("refund_order does not require approval: %+v", c.Policy)
		}
		store(req.NewMessages)
		turn.RunState = req.RunState
		out, err := r.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "orders", IdempotencyKey: "s/turn-1/" + c.ToolCallID,
			ToolCall: pluginapi.ToolCall{ToolCallID: c.ToolCallID, ToolName: c.ToolName, Arguments: c.Arguments}, Events: nopWriter{}})
		if err != nil || out.Result == nil {
			t.Fatalf("%s: %+v %v", c.ToolName, out, err)
		}
		records = append(records, pluginapi.ToolCall{ToolCallID: c.ToolCallID, ToolName: c.ToolName, Status: pluginapi.ToolCallSucceeded, Output: out.Result.Output})
	}
	final := msgs[len(msgs)-1].Text
	if !strings.HasPrefix(final, "Done. Refunded $62.50 of order 7") {
		t.Errorf("final answer = %q", final)
	}
}

func TestBadRunnerConfig(t *testing.T) {
	t.Parallel()
	r := stepwise.NewRunner("orders", "test", buildAgent)
	for _, cfg := range []string{`{"store_pth":"x"}`, `{}`, `null`} {
		_, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: []byte(cfg)})
		if err == nil {
			t.Errorf("config %s accepted", cfg)
		}
	}
}

// TestRefundWithoutAnOrderAsks: "refund my order" asks which order with
// ask_user (offered by the session as a host tool), the orders with money
// left as choices; the answer picks the order, and the refund goes on as
// for "refund order N". Without ask_user offered, the model asks in text.
func TestRefundWithoutAnOrderAsks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := stepwise.NewRunner("orders", "test", buildAgent)
	cfg, _ := json.Marshal(Config{StorePath: filepath.Join(t.TempDir(), "orders.json")})
	if _, err := r.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: cfg}); err != nil {
		t.Fatal(err)
	}
	u, _ := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "orders", Text: "please refund my order"})
	msgs := []pluginapi.Message{{Sequence: 1, Role: u.Message.Role, Text: u.Message.Text, Item: u.Message.Item}}
	run := func(turn pluginapi.TurnContext) *pluginapi.RunModelStepResponse {
		t.Helper()
		resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: nopWriter{}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	turn := pluginapi.TurnContext{Agent: "orders", SessionID: "s", TurnID: "turn-1", Messages: msgs}
	if resp := run(turn); resp.TurnCompleted == nil || !strings.Contains(resp.TurnCompleted.NewMessages[0].Text, "Which order should I refund?") {
		t.Fatalf("without ask_user: %+v", resp)
	}
	turn.HostTools = []pluginapi.ToolDefinition{{Name: "ask_user", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	resp := run(turn)
	if resp.ToolCallsRequested == nil || len(resp.ToolCallsRequested.ToolCalls) != 1 {
		t.Fatalf("with ask_user: %+v", resp)
	}
	ask := resp.ToolCallsRequested.ToolCalls[0]
	var args struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	if err := json.Unmarshal([]byte(ask.Arguments), &args); err != nil || ask.ToolName != "ask_user" || args.Question != whichOrder || len(args.Choices) != 9 || args.Choices[6] != "order 7: office chair ($62.50 left)" {
		t.Fatalf("the question: %s %s (%v)", ask.ToolName, ask.Arguments, err)
	}
	for _, m := range resp.ToolCallsRequested.NewMessages {
		msgs = append(msgs, pluginapi.Message{Sequence: int64(len(msgs) + 1), Role: m.Role, Text: m.Text, Item: m.Item})
	}
	turn.Messages, turn.RunState = msgs, resp.ToolCallsRequested.RunState
	turn.ToolCalls = []pluginapi.ToolCall{{ToolCallID: ask.ToolCallID, ToolName: "ask_user", Status: pluginapi.ToolCallSucceeded,
		Output: `{"status":"answered","answer":"order 7: office chair ($62.50 left)"}`}}
	resp = run(turn)
	if resp.ToolCallsRequested == nil || resp.ToolCallsRequested.ToolCalls[0].ToolName != "lookup_order" || resp.ToolCallsRequested.ToolCalls[0].Arguments != `{"order_id":"7"}` {
		t.Fatalf("after the answer: %+v", resp)
	}
	turn.ToolCalls[0] = pluginapi.ToolCall{ToolCallID: ask.ToolCallID, ToolName: "ask_user", Status: pluginapi.ToolCallRejected, RejectionMessage: "The user declined to answer."}
	turn.ToolCalls[0].Output = ""
	if resp = run(turn); resp.TurnCompleted == nil || !strings.HasPrefix(lastNew(resp.TurnCompleted.NewMessages), "OK, I will not refund anything.") {
		t.Fatalf("after a decline: %+v", resp.TurnCompleted.NewMessages)
	}
}

func lastNew(ms []pluginapi.FrameworkMessage) string {
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1].Text
}

// TestReturnLabelIsAToolTask: request_return_label starts a tool task (the
// label prints after two polls), returns the same task when a retried
// attempt finds its checkpoint, and refuses to start one for a runner host
// that does not poll tasks.
func TestReturnLabelIsAToolTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := stepwise.NewRunner("orders", "test", buildAgent)
	cfg, _ := json.Marshal(Config{StorePath: filepath.Join(t.TempDir(), "orders.json")})
	if _, err := r.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: cfg}); err != nil {
		t.Fatal(err)
	}
	call := pluginapi.ToolCall{ToolCallID: "c1", ToolName: "request_return_label", Arguments: `{"order_id":"5"}`}
	req := &pluginapi.ExecuteToolRequest{Agent: "orders", ToolCall: call, IdempotencyKey: "s/turn-1/c1", SupportsToolTasks: true, Events: nopWriter{}}
	out, err := r.ExecuteDeferredToolCall(ctx, req)
	if err != nil || out.TaskStarted == nil || out.TaskStarted.TaskID != "label-1" {
		t.Fatalf("start: %+v %v", out, err)
	}
	// The same key (a retried attempt without its checkpoint) finds the same label.
	if again, err := r.ExecuteDeferredToolCall(ctx, req); err != nil || again.TaskStarted == nil || again.TaskStarted.TaskID != "label-1" {
		t.Fatalf("retry: %+v %v", again, err)
	}
	poll := &pluginapi.PollToolTaskRequest{Agent: "orders", ToolCall: call, TaskID: "label-1", Attempt: 1, Events: nopWriter{}}
	if p, err := r.PollToolTask(ctx, poll); err != nil || p.TaskPending == nil {
		t.Fatalf("first poll: %+v %v", p, err)
	}
	p, err := r.PollToolTask(ctx, poll)
	if err != nil || p.Result == nil || !strings.HasPrefix(p.Result.Output, "Return label RET-5-") || !strings.HasSuffix(p.Result.Output, " for order 5 is ready.") {
		t.Fatalf("second poll: %+v %v", p, err)
	}
	req.SupportsToolTasks = false
	req.IdempotencyKey = "s/turn-2/c1"
	var toolErr *pluginapi.ToolExecutionError
	if _, err := r.ExecuteDeferredToolCall(ctx, req); !errors.As(err, &toolErr) || !strings.Contains(toolErr.Message, "need a worker that polls tool tasks") {
		t.Errorf("without task support: %v", err)
	}
}

// TestStopCancelsAPrintingLabel: cancelling the turn while the carrier
// prints cancels the label (twice is harmless), so later polls fail; a
// ready label stays ready.
func TestStopCancelsAPrintingLabel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := stepwise.NewRunner("orders", "test", buildAgent)
	cfg, _ := json.Marshal(Config{StorePath: filepath.Join(t.TempDir(), "orders.json")})
	if _, err := r.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: cfg}); err != nil {
		t.Fatal(err)
	}
	if !pluginapi.CapabilitiesOf(r).ToolTaskCancelling {
		t.Fatal("the demo runner does not cancel tool tasks")
	}
	start := func(key string) string {
		call := pluginapi.ToolCall{ToolCallID: "c1", ToolName: "request_return_label", Arguments: `{"order_id":"5"}`}
		out, err := r.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "orders", ToolCall: call, IdempotencyKey: key, SupportsToolTasks: true, Events: nopWriter{}})
		if err != nil || out.TaskStarted == nil {
			t.Fatalf("start: %+v %v", out, err)
		}
		return out.TaskStarted.TaskID
	}
	call := pluginapi.ToolCall{ToolCallID: "c1", ToolName: "request_return_label"}
	id := start("s/turn-1/c1")
	for range 2 {
		if _, err := r.CancelToolTask(ctx, &pluginapi.CancelToolTaskRequest{Agent: "orders", ToolCall: call, TaskID: id}); err != nil {
			t.Fatalf("cancel %s: %v", id, err)
		}
	}
	if p, err := r.PollToolTask(ctx, &pluginapi.PollToolTaskRequest{Agent: "orders", ToolCall: call, TaskID: id, Events: nopWriter{}}); err == nil || !strings.Contains(err.Error(), "was cancelled") {
		t.Errorf("a poll of the cancelled label: %+v %v", p, err)
	}
	ready := start("s/turn-2/c1")
	poll := &pluginapi.PollToolTaskRequest{Agent: "orders", ToolCall: call, TaskID: ready, Events: nopWriter{}}
	for range 2 {
		if _, err := r.PollToolTask(ctx, poll); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.CancelToolTask(ctx, &pluginapi.CancelToolTaskRequest{Agent: "orders", ToolCall: call, TaskID: ready}); err != nil {
		t.Fatal(err)
	}
	if p, err := r.PollToolTask(ctx, poll); err != nil || p.Result == nil {
		t.Errorf("a ready label after a cancel: %+v %v", p, err)
	}
}
