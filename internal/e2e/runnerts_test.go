package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// The TypeScript runner plugin of examples/runner-ts: the orders demo on
// the AI SDK, speaking the runner protocol and the go-plugin handshake
// without go-plugin. aimock plays its model provider (OpenAI Chat
// Completions).

const (
	tsFlowType  = "OrdersTS"
	tsKeyEnv    = "DEX_TS_RUNNER_KEY"
	tsKey       = "sk-ts-e2e-0123456789"
	tsChatPath  = "/v1/chat/completions"
	tsInstallTS = "bash examples/runner-ts/install.sh (make test-peers)"
)

// tsRunnerDir is examples/runner-ts.
func tsRunnerDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "runner-ts")
}

// tsRunner returns node's path and the plugin's dist/main.js, or records
// the missing peer (a failure in CI).
func tsRunner(t testing.TB) (node, main string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testpeer.Missing(t, "node (for the TypeScript runner)", tsInstallTS)
	}
	dir, err := filepath.Abs(tsRunnerDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"node_modules/@dex-agents/runner/dist/src/index.js", "node_modules/ai/package.json", "dist/main.js"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			testpeer.Missing(t, "the TypeScript runner's "+p, tsInstallTS)
		}
	}
	return node, filepath.Join(dir, "dist", "main.js")
}

// tsStack starts a stack whose orders agent runs on the TypeScript runner
// against aimock, through the OpenAI API api ("chat" or "responses").
func tsStack(t *testing.T, api string) (*agenttest.Stack, *aimock.Server) {
	t.Helper()
	node, main := tsRunner(t)
	mock := aimock.Start(t, filepath.Join(tsRunnerDir(), "testdata", "aimock"))
	s := agenttest.NewStack(t, fmt.Sprintf(`
logging: {level: debug}
plugins:
  ts:
    command: %s
    args: [%s]
    env: [%s]
agents:
  - name: orders
    flow_type: %s
    runner: ts
    runner_config:
      store_path: "{{DIR}}/orders.json"
      model: {base_url: "%s/v1", name: gpt-ts-e2e, api_key_env: %s, api: %s}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
    run_model_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 5s, maximum_attempts: 3, schedule_to_close_timeout: 5m}
    tool_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 5s, maximum_attempts: 3}
`, node, main, tsKeyEnv, tsFlowType, mock.URL, tsKeyEnv, api))
	// The plugin sees only what plugins.ts.env grants: the key's variable.
	s.Setenv(tsKeyEnv, tsKey)
	return s, mock
}

// tsOrder is an order of the plugin's store file.
type tsOrder struct {
	ID            string `json:"id"`
	Item          string `json:"item"`
	TotalCents    int64  `json:"total_cents"`
	RefundedCents int64  `json:"refunded_cents"`
	Status        string `json:"status"`
	Refunds       []struct {
		IdempotencyKey string `json:"idempotency_key"`
		AmountCents    int64  `json:"amount_cents"`
	} `json:"refunds"`
}

func tsReadOrder(t *testing.T, s *agenttest.Stack, id string) tsOrder {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "orders.json"))
	if err != nil {
		t.Fatalf("the store: %v", err)
	}
	var f struct {
		Orders map[string]tsOrder `json:"orders"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("the store is not JSON: %v\n%s", err, b)
	}
	o, ok := f.Orders[id]
	if !ok {
		t.Fatalf("the store has no order %s:\n%s", id, b)
	}
	return o
}

type tsChatRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	// The messages have the shape aimock's journal normalizes them to.
	Messages []aimock.JournalMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func tsChatRequests(t *testing.T, mock *aimock.Server) []tsChatRequest {
	t.Helper()
	var out []tsChatRequest
	for _, r := range mock.Requests(tsChatPath) {
		var req tsChatRequest
		if err := json.Unmarshal(r.Body, &req); err != nil {
			t.Fatalf("a model request is not JSON: %v\n%s", err, r.Body)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+tsKey {
			t.Errorf("a model request's Authorization is %q, want the key from %s", got, tsKeyEnv)
		}
		out = append(out, req)
	}
	return out
}

// toolResult returns the content of the request's tool message for the call.
func (r tsChatRequest) toolResult(callID string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			s, _ := m.Content.(string)
			return s, true
		}
	}
	return "", false
}

// tsPluginPIDs are the PIDs of the runner plugin processes the worker
// started, from its log ("runner plugin started ... pid=N"), oldest first.
func tsPluginPIDs(t *testing.T, w *agenttest.Worker) []int {
	t.Helper()
	b, err := os.ReadFile(w.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`msg="runner plugin started".* pid=(\d+)`)
	var pids []int
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// TestTSRunnerOrdersTurnWithAnApproval runs a whole orders turn on the
// TypeScript runner: the model looks order 7 up (a read, run at once), asks
// to refund it (a non-idempotent write that waits for approval), and once
// approved answers with the refund. The model's requests carry both tool
// results, and the store holds exactly one refund.
func TestTSRunnerOrdersTurnWithAnApproval(t *testing.T) {
	t.Parallel()
	s, mock := tsStack(t, "chat")
	w := s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: tsFlowType, InitialMessage: "[ts] refund order 7"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if in.Kind != wire.InterruptKindApproval || in.ToolName != "refund_order" || in.ToolCallID != "ts_refund_7" || !strings.Contains(in.Arguments, "6250") {
		t.Fatalf("interrupt = %+v, want the approval of refund_order ts_refund_7 for 6250 cents", in)
	}
	var lookup *string
	for _, c := range snap.ToolCalls {
		if c.ToolName == "lookup_order" {
			st := string(c.Status)
			lookup = &st
			if c.Effect != "read" || c.RequiresApproval || c.Status != "succeeded" || !strings.Contains(c.Output, `"office chair"`) {
				t.Errorf("lookup_order record = %+v, want a read that succeeded with the order", c)
			}
		}
		if c.ToolName == "refund_order" && (c.Effect != "non_idempotent_write" || !c.RequiresApproval) {
			t.Errorf("refund_order record = %+v, want a non_idempotent_write that needs approval", c)
		}
	}
	if lookup == nil {
		t.Fatalf("no lookup_order record before the approval: %+v", snap.ToolCalls)
	}
	if o := tsReadOrder(t, s, "7"); len(o.Refunds) != 0 {
		t.Fatalf("order 7 was refunded before the approval: %+v", o)
	}

	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the answer", id, idleWithAnswer)
	wantAnswer(t, snap, "Refunded $62.50 for order 7 (office chair). Anything else?")
	// The plugin's stderr lines are go-hclog JSON: the worker logs them
	// with their level and fields.
	if b, err := os.ReadFile(w.LogPath); err != nil || !regexp.MustCompile(`level=INFO msg="tool call" .*plugin=ts .*tool=refund_order`).Match(b) {
		t.Errorf("the worker log has no INFO line of the plugin's refund_order call (%v)", err)
	}

	// The refund ran exactly once, with the call's idempotency key.
	o := tsReadOrder(t, s, "7")
	if len(o.Refunds) != 1 || o.Refunds[0].AmountCents != 6250 || o.RefundedCents != 6250 || o.Status != "refunded" ||
		o.Refunds[0].IdempotencyKey != id+"/turn-1/ts_refund_7" {
		t.Errorf("order 7 = %+v, want one refund of 6250 cents keyed %s/turn-1/ts_refund_7", o, id)
	}

	// Three model calls; the second carries the lookup's result, the third
	// both results, as the model's tool messages.
	reqs := tsChatRequests(t, mock)
	if len(reqs) != 3 {
		t.Fatalf("aimock got %d model requests, want 3", len(reqs))
	}
	var offered []string
	for _, tool := range reqs[0].Tools {
		offered = append(offered, tool.Function.Name)
	}
	if strings.Join(offered, ",") != "lookup_order,refund_order" || !reqs[0].Stream || reqs[0].Model != "gpt-ts-e2e" {
		t.Errorf("first request: model %q, stream %v, tools %v", reqs[0].Model, reqs[0].Stream, offered)
	}
	if _, ok := reqs[0].toolResult("ts_lookup_7"); ok {
		t.Errorf("the first request already has a tool result")
	}
	for i, r := range reqs[1:] {
		got, ok := r.toolResult("ts_lookup_7")
		if !ok || !strings.Contains(got, `"item":"office chair"`) || !strings.Contains(got, `"total_cents":6250`) {
			t.Errorf("request %d: lookup result %q (present %v), want order 7's JSON", i+2, got, ok)
		}
	}
	if got, ok := reqs[2].toolResult("ts_refund_7"); !ok || got != "Refunded $62.50 of order 7 (office chair); order status: refunded." {
		t.Errorf("request 3: refund result %q (present %v)", got, ok)
	}
	// The model's own tool calls come back in the assistant messages.
	var calls []string
	for _, m := range reqs[2].Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+":"+c.Function.Name+":"+c.Function.Arguments)
		}
	}
	if want := `ts_lookup_7:lookup_order:{"order_id":"7"},ts_refund_7:refund_order:{"order_id":"7","amount_cents":6250}`; strings.Join(calls, ",") != want {
		t.Errorf("request 3's assistant tool calls = %v\nwant %s", calls, want)
	}

	// The stored messages: each with an AI SDK ModelMessage of its role as
	// its framework item.
	msgs, err := s.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
		var item struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal([]byte(m.Item), &item); err != nil || item.Role != string(m.Role) {
			t.Errorf("message %d (%s): framework item %q is not a ModelMessage of its role", m.Sequence, m.Role, m.Item)
		}
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant,tool,assistant" {
		t.Errorf("stored roles = %s", got)
	}
	if msgs[0].Item != `{"role":"user","content":"[ts] refund order 7"}` {
		t.Errorf("user item = %s", msgs[0].Item)
	}
	if snap.Usage.ModelCalls != 3 || snap.Usage.InputTokens != 450 || snap.Usage.OutputTokens != 47 {
		t.Errorf("usage = %+v, want 3 calls, 450 in, 47 out", snap.Usage)
	}
}

// TestTSRunnerOrdersTurnOnTheResponsesAPI runs the same turn through the
// OpenAI Responses API: the runner sends every earlier item whole (store
// false), never an item_reference that only OpenAI could resolve.
func TestTSRunnerOrdersTurnOnTheResponsesAPI(t *testing.T) {
	t.Parallel()
	s, mock := tsStack(t, "responses")
	s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: tsFlowType, InitialMessage: "[ts] refund order 7"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if in.ToolName != "refund_order" || in.ToolCallID != "ts_refund_7" {
		t.Fatalf("interrupt = %+v", in)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the answer", id, idleWithAnswer)
	wantAnswer(t, snap, "Refunded $62.50 for order 7 (office chair). Anything else?")
	if o := tsReadOrder(t, s, "7"); len(o.Refunds) != 1 || o.RefundedCents != 6250 {
		t.Errorf("order 7 = %+v, want one refund of 6250 cents", o)
	}
	reqs := mock.Requests("/v1/responses")
	if len(reqs) != 3 || len(mock.Requests(tsChatPath)) != 0 {
		t.Fatalf("aimock got %d Responses requests and %d Chat Completions requests, want 3 and 0", len(reqs), len(mock.Requests(tsChatPath)))
	}
	type item struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}
	var last struct {
		Store *bool  `json:"store"`
		Input []item `json:"input"`
	}
	if err := json.Unmarshal(reqs[2].Body, &last); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range last.Input {
		if it.Type == "item_reference" {
			t.Errorf("the request refers to an item by ID: %s", reqs[2].Body)
		}
		if it.Type == "function_call" || it.Type == "function_call_output" {
			got = append(got, it.Type+":"+it.CallID)
		}
	}
	if want := "function_call:ts_lookup_7,function_call_output:ts_lookup_7,function_call:ts_refund_7,function_call_output:ts_refund_7"; strings.Join(got, ",") != want {
		t.Errorf("the last request's items = %v\nwant %s\n%s", got, want, reqs[2].Body)
	}
	if last.Store == nil || *last.Store {
		t.Errorf("the last request does not set store false: %s", reqs[2].Body)
	}
}

// TestTSRunnerPluginKilledMidModelCallIsRetried SIGKILLs the node plugin
// while its model call streams; the worker starts the plugin again, the
// session's Step retries the call, and the turn completes with the retry's
// answer. The killed call's text is never stored.
func TestTSRunnerPluginKilledMidModelCallIsRetried(t *testing.T) {
	t.Parallel()
	s, mock := tsStack(t, "chat")
	w := s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: tsFlowType, InitialMessage: "[ts-kill] look up order 3"})
	if err != nil {
		t.Fatal(err)
	}
	// The second model request (after the lookup) streams its answer two
	// characters every 250 ms: the call is in flight for half a minute.
	err = agenttest.WaitFor(ctx(t), "the slow model call", time.Minute, func() (bool, error) {
		return len(mock.Requests(tsChatPath)) >= 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a few chunks in
	snap, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State == nil || idleWithAnswer(snap) {
		t.Fatalf("the turn is not in its model call: %+v", snap.State)
	}
	pids := tsPluginPIDs(t, w)
	if len(pids) != 1 {
		t.Fatalf("the worker started %d plugin processes (%v), want 1", len(pids), pids)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
	if err != nil || !strings.Contains(string(cmdline), "dist/main.js") {
		t.Fatalf("process %d is not the node plugin: %q %v", pids[0], cmdline, err)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatalf("kill the plugin %d: %v", pids[0], err)
	}
	killed := time.Now()

	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	t.Logf("killed plugin %d mid-stream; the turn completed %s later", pids[0], time.Since(killed).Round(time.Millisecond))
	wantAnswer(t, snap, "Order 3 is a monitor arm for customer-3, delivered, $0.00 refunded.")
	for _, m := range snap.Messages {
		if strings.Contains(m.Text, "KILLED-ATTEMPT") {
			t.Errorf("the killed call's text was stored: %q", m.Text)
		}
	}
	if pids := tsPluginPIDs(t, w); len(pids) != 2 || pids[0] == pids[1] {
		t.Errorf("plugin processes started: %v, want the first and its relaunch", pids)
	}
	// The killed call was made again, with the same transcript.
	reqs := tsChatRequests(t, mock)
	if len(reqs) != 3 {
		t.Fatalf("aimock got %d model requests, want 3 (lookup, the killed call, its retry)", len(reqs))
	}
	for _, i := range []int{1, 2} {
		if got, ok := reqs[i].toolResult("ts_kill_lookup_3"); !ok || !strings.Contains(got, `"item":"monitor arm"`) {
			t.Errorf("request %d: lookup result %q (present %v)", i+1, got, ok)
		}
	}
	if a, b := mock.Requests(tsChatPath)[1].Body, mock.Requests(tsChatPath)[2].Body; string(a) != string(b) {
		t.Errorf("the retry's request differs from the killed call's:\n%s\n%s", a, b)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	retried := false
	for _, e := range h {
		if e.StepType == "RunModel" && e.EventType == "completed" && e.Attempt == 2 {
			retried = true
		}
	}
	if !retried {
		t.Errorf("no RunModel Step completed on its second attempt: %+v", h)
	}
	t.Logf("plugin processes %v; %d model requests; steps %+v", tsPluginPIDs(t, w), len(reqs), h)
	if snap.Usage.ModelCalls != 2 {
		t.Errorf("usage counts %d model calls, want 2 (the killed call returned nothing)", snap.Usage.ModelCalls)
	}
}

// TestTSRunnerUnitTests runs the plugin's own tests (node:test) on the
// built dist/: the conversation encoding, the store and the handshake
// certificate.
func TestTSRunnerUnitTests(t *testing.T) {
	t.Parallel()
	node, _ := tsRunner(t)
	cmd := exec.Command(node, "--test", "dist/test/")
	cmd.Dir = tsRunnerDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^# pass [1-9]`).Match(out) || !regexp.MustCompile(`(?m)^# fail 0$`).Match(out) {
		t.Fatalf("node --test ran no test or failed:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestTypeScriptSDKTests runs the TypeScript runner SDK's own tests
// (sdk/typescript, node:test) on its build: the shared test vectors, the
// contract's texts and event types against the Go SDK's, the handshake
// certificate, and a runner served over mutual TLS.
func TestTypeScriptSDKTests(t *testing.T) {
	t.Parallel()
	node, _ := tsRunner(t)
	dir := filepath.Join(tsRunnerDir(), "..", "..", "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(dir, "dist", "test", "vectors.test.js")); err != nil {
		testpeer.Missing(t, "the TypeScript runner SDK's build", "bash sdk/typescript/install.sh (make test-peers)")
	}
	cmd := exec.Command(node, "--test", "dist/test/")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^# pass [1-9]`).Match(out) || !regexp.MustCompile(`(?m)^# fail 0$`).Match(out) ||
		!regexp.MustCompile(`(?m)^ok \d+ - vector tool_task$`).Match(out) {
		t.Fatalf("node --test ran no test, no vector, or failed:\n%s", out)
	}
	t.Logf("%s", out)
}
