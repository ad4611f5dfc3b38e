package e2e

import (
	"encoding/json"
	"fmt"
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
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/wire"
)

const (
	oaFlowType = "OrdersOpenAIAgents"
	oaKeyEnv   = "DEX_OA_RUNNER_KEY"
	oaKey      = "sk-oa-e2e-0123456789"
)

// oaExampleDir is examples/orders-openai-agents.
func oaExampleDir() string {
	return filepath.Join(pySDKDir(), "..", "..", "examples", "orders-openai-agents")
}

// oaStack starts a stack whose orders agent is the OpenAI Agents SDK
// example on the Python SDK, against aimock's OpenAI Responses API, with
// extra agent keys.
func oaStack(t *testing.T, extra ...string) (*agenttest.Stack, *aimock.Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	sdk, err := filepath.Abs(pySDKDir())
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs(oaExampleDir())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(sdk, ".venv", "bin", "python"), "-c", "import agents, dex_runner.openai_agents").CombinedOutput(); err != nil {
		testpeer.Missing(t, "the Python SDK's virtualenv with openai-agents ("+strings.TrimSpace(string(out))+")", "bash sdk/python/install.sh (make test-peers)")
	}
	mock := aimock.Start(t, filepath.Join(example, "testdata", "aimock"))
	s := agenttest.NewStack(t, fmt.Sprintf(`
logging: {level: debug}
plugins:
  oa:
    command: python
    venv: %s
    args: [%s]
    env: [%s]
agents:
  - name: orders
    flow_type: %s
    runner: oa
    runner_config:
      store_path: "{{DIR}}/orders.json"
      model: {base_url: "%s/v1", name: gpt-oa-e2e, api_key_env: %s}
    tool_policies:
      refund_order: {effect: non_idempotent_write, requires_approval: true}
    run_model_limit: {start_to_close_timeout: 2m, heartbeat_timeout: 5s, maximum_attempts: 3, schedule_to_close_timeout: 5m}
    tool_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 5s, maximum_attempts: 3}
%s`, filepath.Join(sdk, ".venv"), filepath.Join(example, "main.py"), oaKeyEnv, oaFlowType, mock.URL, oaKeyEnv, strings.Join(extra, "")))
	s.Setenv(oaKeyEnv, oaKey)
	return s, mock
}

// oaRefundAwaitingApproval starts "[oa] refund order 7" and returns the
// session once the refund waits for its approval.
func oaRefundAwaitingApproval(t *testing.T, s *agenttest.Stack) (string, wire.Snapshot) {
	t.Helper()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: oaFlowType, InitialMessage: "[oa] refund order 7"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the refund's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if in := snap.PendingInterrupts[0]; in.ToolName != "refund_order" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v, want refund_order's approval", in)
	}
	return id, snap
}

// oaRefunds reads order id's refunds from the example's store.
func oaRefunds(t *testing.T, s *agenttest.Stack, id string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	var orders map[string]struct {
		Refunds []map[string]any `json:"refunds"`
	}
	if err := json.Unmarshal(b, &orders); err != nil {
		t.Fatal(err)
	}
	return orders[id].Refunds
}

// TestOpenAIAgentsOrdersTurnWithAnApproval: the orders agent written with
// the OpenAI Agents SDK, unchanged, runs as a durable session. The model
// looks order 7 up (the runner's own read: no approval), asks to refund it
// (a non-idempotent write that waits for approval), and once approved the
// refund runs once, with the session's idempotency key, and the model
// answers.
func TestOpenAIAgentsOrdersTurnWithAnApproval(t *testing.T) {
	t.Parallel()
	s, mock := oaStack(t)
	s.StartWorker()
	id, snap := oaRefundAwaitingApproval(t, s)
	in := snap.PendingInterrupts[0]
	if c := findCall(snap, "lookup_order"); c == nil || c.Effect != wire.EffectRead || c.RequiresApproval || c.Status != wire.ToolCallSucceeded {
		t.Errorf("lookup_order record = %+v, want a read that ran without approval", c)
	}
	if n := len(oaRefunds(t, s, "7")); n != 0 {
		t.Fatalf("%d refunds before the approval", n)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "Refunded $62.50 for order 7 (office chair). Anything else?")
	refunds := oaRefunds(t, s, "7")
	if len(refunds) != 1 || refunds[0]["idempotency_key"] != id+"/turn-1/oa_refund_7" || refunds[0]["amount_cents"] != float64(6250) {
		t.Errorf("refunds = %v, want one of 6250 with key %s/turn-1/oa_refund_7", refunds, id)
	}
	if n := len(mock.Requests("/v1/responses")); n != 3 {
		t.Errorf("aimock got %d Responses requests, want 3 (one per RunModel Step)", n)
	}
	if snap.Usage.ModelCalls != 3 || snap.Usage.InputTokens != 450 {
		t.Errorf("usage = %+v, want 3 model calls and 450 input tokens", snap.Usage)
	}
}

// TestOpenAIAgentsRunnerKilledMidModelCall SIGKILLs the Python plugin while
// its model call waits for aimock's answer; the worker starts the plugin
// again, the Step retries the call, and the turn completes with the
// retry's answer; the killed call's answer is never stored.
func TestOpenAIAgentsRunnerKilledMidModelCall(t *testing.T) {
	t.Parallel()
	s, mock := oaStack(t)
	w := s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: oaFlowType, InitialMessage: "[oa-kill] look up order 3"})
	if err != nil {
		t.Fatal(err)
	}
	err = agenttest.WaitFor(ctx(t), "the slow model call", time.Minute, func() (bool, error) {
		return len(mock.Requests("/v1/responses")) >= 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pids := tsPluginPIDs(t, w)
	if len(pids) != 1 {
		t.Fatalf("the worker started %d plugin processes (%v), want 1", len(pids), pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatalf("kill the plugin %d: %v", pids[0], err)
	}
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "Order 3 is a monitor arm for customer-3, delivered, $0.00 refunded.")
	for _, m := range snap.Messages {
		if strings.Contains(m.Text, "KILLED-ATTEMPT") {
			t.Errorf("the killed call's answer was stored: %q", m.Text)
		}
	}
	if pids := tsPluginPIDs(t, w); len(pids) != 2 || pids[0] == pids[1] {
		t.Errorf("plugin processes started: %v, want the first and its relaunch", pids)
	}
	if n := len(mock.Requests("/v1/responses")); n != 3 {
		t.Errorf("aimock got %d requests, want 3 (lookup, the killed call, its retry)", n)
	}
}

// TestOpenAIAgentsApprovalSurvivesAWorkerKill SIGKILLs the worker (and so
// its Python plugin) while the refund waits for approval; a new worker
// takes the session over, the approval runs the refund once, and the model
// answers.
func TestOpenAIAgentsApprovalSurvivesAWorkerKill(t *testing.T) {
	t.Parallel()
	s, mock := oaStack(t)
	s.StartWorker()
	id, snap := oaRefundAwaitingApproval(t, s)
	s.KillWorkers()
	s.StartWorker()
	in := snap.PendingInterrupts[0]
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve after the restart: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "Refunded $62.50 for order 7 (office chair). Anything else?")
	if refunds := oaRefunds(t, s, "7"); len(refunds) != 1 {
		t.Errorf("refunds = %v, want exactly one", refunds)
	}
	if n := len(mock.Requests("/v1/responses")); n != 3 {
		t.Errorf("aimock got %d requests, want 3: the kill repeated no model call", n)
	}
}

// TestOpenAIAgentsAsksTheUser: the agent is offered the session's ask_user
// built-in beside its own tools; its call becomes the session's question,
// and the answer goes back to the model as the call's output.
func TestOpenAIAgentsAsksTheUser(t *testing.T) {
	t.Parallel()
	s, mock := oaStack(t, "    built_in_tools: [ask_user]\n")
	s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: oaFlowType, InitialMessage: "[oa-ask] refund an order"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the question", id, func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind == wire.InterruptKindQuestion
	})
	in := snap.PendingInterrupts[0]
	if in.Question != "Which order?" || strings.Join(in.Choices, ",") != "7,8" {
		t.Fatalf("question = %+v", in)
	}
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "7"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "Thanks: order 7 it is.")
	reqs := mock.Requests("/v1/responses")
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `"name":"ask_user"`) || !strings.Contains(string(reqs[1].Body), `\"answer\":\"7\"`) {
		t.Errorf("the model requests did not offer ask_user and carry the answer: %d requests", len(reqs))
		for _, r := range reqs {
			t.Logf("%s", r.Body)
		}
	}
}
