package e2e

import (
	"bytes"
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
	pyKeyEnv = "DEX_PY_RUNNER_KEY"
	pyKey    = "sk-py-e2e-0123456789"
)

// pyExample is one of the Python framework examples: the orders agent,
// unchanged in its framework's style, on the Python SDK's adapter for it.
type pyExample struct {
	// name is the example's directory under examples/.
	name string
	// module is the adapter the example needs in the SDK's virtualenv.
	module string
	// flow is its agents' flow type in the tests.
	flow string
	// prefix starts every aimock fixture's message ("oa", "pa") and its
	// call IDs ("oa_").
	prefix string
	// endpoint is the API path (or, ending in ":", the prefix of the
	// paths) the example's model client calls on aimock.
	endpoint string
	// apiBase is the path after aimock's URL in the model's base_url.
	apiBase string
	// storage is the runner_config line of the example's data.
	storage string
	// store is the class and method in orders_agent.py that write a refund.
	store, storeMethod string
	// node: the example is a TypeScript one, built into dist/ by its
	// install.sh and run with node.
	node bool
	// harness: the framework's own harness runs reads inside the RunModel
	// Step (no tool call record; a retried Step repeats them) and names a
	// tool mcp__<server>__<name> (the session's tools are on server "dex").
	harness bool
	// fixedTools: the framework fixes the model's tools when the agent is
	// built, so a planning turn offers them all (the session rejects every
	// call but write_todos).
	fixedTools bool
	// refunds reads order id's refunds from the example's data.
	refunds func(t *testing.T, s *agenttest.Stack, id string) []pyRefund
}

// pyRefund is one refund in an example's data.
type pyRefund struct {
	Key         string `json:"idempotency_key"`
	AmountCents int64  `json:"amount_cents"`
}

// pyExamples are the Python framework examples every test here runs.
var pyExamples = []pyExample{
	{
		name: "orders-openai-agents", module: "agents, dex_runner.openai_agents", flow: "OrdersOpenAIAgents", prefix: "oa",
		endpoint: "/v1/responses", apiBase: "/v1", storage: `store_path: "{{DIR}}/orders.json"`, store: "Store", storeMethod: "refund",
		refunds: func(t *testing.T, s *agenttest.Stack, id string) []pyRefund {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(s.Dir, "orders.json"))
			if err != nil {
				t.Fatal(err)
			}
			var orders map[string]struct {
				Refunds []pyRefund `json:"refunds"`
			}
			if err := json.Unmarshal(b, &orders); err != nil {
				t.Fatal(err)
			}
			return orders[id].Refunds
		},
	},
	{
		name: "orders-pydantic-ai", module: "pydantic_ai, dex_runner.pydantic_ai", flow: "OrdersPydanticAI", prefix: "pa",
		endpoint: "/v1/chat/completions", apiBase: "/v1", storage: `db_path: "{{DIR}}/orders.db"`, store: "Orders", storeMethod: "refund",
		refunds: func(t *testing.T, s *agenttest.Stack, id string) []pyRefund {
			t.Helper()
			// The example keeps its orders in SQLite: read them with the
			// virtualenv's Python, as the example does.
			code := `import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT idempotency_key, amount_cents FROM refunds WHERE order_id = ?", (sys.argv[2],)).fetchall()
print(json.dumps([{"idempotency_key": k, "amount_cents": a} for k, a in rows]))`
			out, err := exec.Command(filepath.Join(pySDKDir(), ".venv", "bin", "python"), "-c", code, filepath.Join(s.Dir, "orders.db"), id).CombinedOutput()
			if err != nil {
				t.Fatalf("read the refunds: %v\n%s", err, out)
			}
			var refunds []pyRefund
			if err := json.Unmarshal(out, &refunds); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return refunds
		},
	},
	{
		name: "orders-langgraph", module: "langgraph, dex_runner.langgraph", flow: "OrdersLangGraph", prefix: "lg",
		endpoint: "/v1/chat/completions", apiBase: "/v1", storage: `ledger_path: "{{DIR}}/refunds.json"`, store: "Ledger", storeMethod: "add",
		fixedTools: true,
		refunds:    ledgerRefunds,
	},
	{
		name: "orders-google-adk", module: "google.adk, dex_runner.google_adk", flow: "OrdersGoogleADK", prefix: "ga",
		// The Gemini API, as ADK users reach their model.
		endpoint: "/v1beta/models/gpt-py-e2e:", storage: `refunds_path: "{{DIR}}/refunds.jsonl"`,
		store: "RefundLog", storeMethod: "write",
		refunds: func(t *testing.T, s *agenttest.Stack, id string) []pyRefund {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(s.Dir, "refunds.jsonl"))
			if os.IsNotExist(err) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			var out []pyRefund
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var r struct {
					pyRefund
					OrderID string `json:"order_id"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				if r.OrderID == id {
					out = append(out, r.pyRefund)
				}
			}
			return out
		},
	},
	{
		name: "orders-claude-agent-sdk", module: "claude_agent_sdk, dex_runner.claude_agent_sdk", flow: "OrdersClaudeAgentSDK", prefix: "cl",
		// Anthropic's Messages API, which the Claude Code harness calls.
		endpoint: "/v1/messages", storage: `ledger_path: "{{DIR}}/refunds.json"`, store: "Ledger", storeMethod: "add",
		harness: true,
		refunds: ledgerRefunds,
	},
	{
		name: "orders-openai-agents-ts", flow: "OrdersOpenAIAgentsTS", prefix: "ot", node: true,
		endpoint: "/v1/responses", apiBase: "/v1", storage: `ledger_path: "{{DIR}}/refunds.json"`, store: "Ledger", storeMethod: "add",
		refunds: ledgerRefunds,
	},
}

// ledgerRefunds reads order id's refunds from refunds.json, a ledger keyed
// by idempotency key.
func ledgerRefunds(t *testing.T, s *agenttest.Stack, id string) []pyRefund {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "refunds.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ledger map[string]struct {
		OrderID     string `json:"order_id"`
		AmountCents int64  `json:"amount_cents"`
	}
	if err := json.Unmarshal(b, &ledger); err != nil {
		t.Fatal(err)
	}
	var out []pyRefund
	for key, r := range ledger {
		if r.OrderID == id {
			out = append(out, pyRefund{Key: key, AmountCents: r.AmountCents})
		}
	}
	return out
}

// forEachPyExample runs test as a parallel subtest for each Python
// framework example.
func forEachPyExample(t *testing.T, test func(t *testing.T, ex pyExample)) {
	for _, ex := range pyExamples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			test(t, ex)
		})
	}
}

// tool is the name the model sees for the agent's tool (or the session's
// ask_user or write_todos), as it appears in a request: "name":"<tool>".
func (ex pyExample) tool(name string) string {
	switch {
	case !ex.harness:
	case name == "ask_user" || name == "write_todos":
		name = "mcp__dex__" + name
	default:
		name = "mcp__orders__" + name
	}
	return `"name":"` + name + `"`
}

// dir is the example's directory.
func (ex pyExample) dir() string {
	return filepath.Join(pySDKDir(), "..", "..", "examples", ex.name)
}

// msg is a fixture's message: "[<prefix>] text" or "[<prefix>-kind] text".
func (ex pyExample) msg(kind, text string) string {
	if kind == "" {
		return "[" + ex.prefix + "] " + text
	}
	return "[" + ex.prefix + "-" + kind + "] " + text
}

// stack starts a stack whose orders agent is the example on the Python
// SDK, against aimock, with extra agent keys.
func (ex pyExample) stack(t *testing.T, extra ...string) (*agenttest.Stack, *aimock.Server) {
	t.Helper()
	if ex.node {
		return ex.stackRunning(t, []string{filepath.Join(ex.dir(), "dist", "main.js")}, extra...)
	}
	return ex.stackRunning(t, []string{filepath.Join(ex.dir(), "main.py")}, extra...)
}

// stackRunning is stack with the plugin's args (a Python file and its
// arguments; {{DIR}} is the stack's directory).
func (ex pyExample) stackRunning(t *testing.T, args []string, extra ...string) (*agenttest.Stack, *aimock.Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	sdk, err := filepath.Abs(pySDKDir())
	if err != nil {
		t.Fatal(err)
	}
	plugin := fmt.Sprintf("command: python\n    venv: %s", filepath.Join(sdk, ".venv"))
	if ex.node {
		plugin = "command: node"
		if _, err := os.Stat(filepath.Join(ex.dir(), "dist", "main.js")); err != nil {
			testpeer.Missing(t, "the build of examples/"+ex.name, "bash examples/"+ex.name+"/install.sh (make test-peers)")
		}
	} else if out, err := exec.Command(filepath.Join(sdk, ".venv", "bin", "python"), "-c", "import "+ex.module).CombinedOutput(); err != nil {
		testpeer.Missing(t, "the Python SDK's virtualenv with "+ex.module+" ("+strings.TrimSpace(string(out))+")", "bash sdk/python/install.sh (make test-peers)")
	}
	mock := aimock.Start(t, filepath.Join(ex.dir(), "testdata", "aimock"))
	s := agenttest.NewStack(t, fmt.Sprintf(`
logging: {level: debug}
plugins:
  py:
    %s
    args: ["%s"]
    env: [%s]
agents:
  - name: orders
    flow_type: %s
    runner: py
    runner_config:
      %s
      model: {base_url: "%s%s", name: gpt-py-e2e, api_key_env: %s}
    tool_policies:
      refund_order: {effect: non_idempotent_write, requires_approval: true}
    run_model_limit: {start_to_close_timeout: 2m, heartbeat_timeout: 5s, maximum_attempts: 3, schedule_to_close_timeout: 5m}
    tool_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 5s, maximum_attempts: 3}
%s`, plugin, strings.Join(absAll(t, args), `", "`), pyKeyEnv, ex.flow, ex.storage, mock.URL, ex.apiBase, pyKeyEnv, strings.Join(extra, "")))
	s.Setenv(pyKeyEnv, pyKey)
	return s, mock
}

// requests are the model requests aimock got on the example's endpoint,
// each body compacted (no spaces between JSON tokens).
func (ex pyExample) requests(mock *aimock.Server) []aimock.Request {
	var out []aimock.Request
	for _, r := range mock.Requests("") {
		if r.Path == ex.endpoint || strings.HasSuffix(ex.endpoint, ":") && strings.HasPrefix(r.Path, ex.endpoint) {
			var b bytes.Buffer
			if json.Compact(&b, r.Body) == nil {
				r.Body = b.Bytes()
			}
			out = append(out, r)
		}
	}
	return out
}

// refundAwaitingApproval starts "[<prefix>] refund order 7" and returns the
// session once the refund waits for its approval.
func (ex pyExample) refundAwaitingApproval(t *testing.T, s *agenttest.Stack) (string, wire.Snapshot) {
	t.Helper()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: ex.flow, InitialMessage: ex.msg("", "refund order 7")})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the refund's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if in := snap.PendingInterrupts[0]; in.ToolName != "refund_order" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v, want refund_order's approval", in)
	}
	return id, snap
}

// TestFrameworkAgentsOrdersTurnWithAnApproval: the orders agent written with
// each Python framework, unchanged, runs as a durable session. The model
// looks order 7 up (the runner's own read: no approval), asks to refund it
// (a non-idempotent write that waits for approval), and once approved the
// refund runs once, with the session's idempotency key, and the model
// answers.
func TestFrameworkAgentsOrdersTurnWithAnApproval(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		s, mock := ex.stack(t)
		s.StartWorker()
		id, snap := ex.refundAwaitingApproval(t, s)
		in := snap.PendingInterrupts[0]
		if ex.harness {
			// The read ran inside the harness: its result is stored, with no
			// record.
			var results []string
			for _, m := range snap.Messages {
				if m.ToolName == "lookup_order" {
					results = append(results, string(m.ToolStatus)+": "+m.Text)
				}
			}
			if c := findCall(snap, "lookup_order"); c != nil || len(results) != 1 || !strings.HasPrefix(results[0], "succeeded: Order 7: office chair") {
				t.Errorf("lookup_order record = %+v, results %q, want one result of a read run inside the harness", c, results)
			}
		} else if c := findCall(snap, "lookup_order"); c == nil || c.Effect != wire.EffectRead || c.RequiresApproval || c.Status != wire.ToolCallSucceeded {
			t.Errorf("lookup_order record = %+v, want a read that ran without approval", c)
		}
		if n := len(ex.refunds(t, s, "7")); n != 0 {
			t.Fatalf("%d refunds before the approval", n)
		}
		if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
			t.Fatalf("approve: %v %v", ok, err)
		}
		snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
		wantAnswer(t, snap, "Refunded $62.50 for order 7 (office chair). Anything else?")
		refunds := ex.refunds(t, s, "7")
		key := id + "/turn-1/" + ex.prefix + "_refund_7"
		if len(refunds) != 1 || refunds[0].Key != key || refunds[0].AmountCents != 6250 {
			t.Errorf("refunds = %v, want one of 6250 with key %s", refunds, key)
		}
		if n := len(ex.requests(mock)); n != 3 {
			t.Errorf("aimock got %d model requests, want 3 (one per model call)", n)
		}
		if snap.Usage.ModelCalls != 3 || snap.Usage.InputTokens != 450 {
			t.Errorf("usage = %+v, want 3 model calls and 450 input tokens", snap.Usage)
		}
	})
}

// TestFrameworkAgentsRunnerKilledMidModelCall SIGKILLs the Python plugin while
// its model call waits for aimock's answer; the worker starts the plugin
// again, the Step retries the call, and the turn completes with the
// retry's answer; the killed call's answer is never stored.
func TestFrameworkAgentsRunnerKilledMidModelCall(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		s, mock := ex.stack(t)
		w := s.StartWorker()
		id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: ex.flow, InitialMessage: ex.msg("kill", "look up order 3")})
		if err != nil {
			t.Fatal(err)
		}
		err = agenttest.WaitFor(ctx(t), "the slow model call", time.Minute, func() (bool, error) {
			return len(ex.requests(mock)) >= 2, nil
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
		want := 3 // lookup, the killed call, its retry
		if ex.harness {
			// The lookup ran inside the killed Step: its retry makes that
			// model call again.
			want = 4
		}
		if n := len(ex.requests(mock)); n != want {
			t.Errorf("aimock got %d requests, want %d", n, want)
		}
	})
}

// TestFrameworkAgentsApprovalSurvivesAWorkerKill SIGKILLs the worker (and so
// its Python plugin) while the refund waits for approval; a new worker
// takes the session over, the approval runs the refund once, and the model
// answers.
func TestFrameworkAgentsApprovalSurvivesAWorkerKill(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		s, mock := ex.stack(t)
		s.StartWorker()
		id, snap := ex.refundAwaitingApproval(t, s)
		s.KillWorkers()
		s.StartWorker()
		in := snap.PendingInterrupts[0]
		if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
			t.Fatalf("approve after the restart: %v %v", ok, err)
		}
		snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
		wantAnswer(t, snap, "Refunded $62.50 for order 7 (office chair). Anything else?")
		if refunds := ex.refunds(t, s, "7"); len(refunds) != 1 {
			t.Errorf("refunds = %v, want exactly one", refunds)
		}
		if n := len(ex.requests(mock)); n != 3 {
			t.Errorf("aimock got %d requests, want 3: the kill repeated no model call", n)
		}
	})
}

// TestFrameworkAgentsAskTheUser: the agent is offered the session's ask_user
// built-in beside its own tools; its call becomes the session's question,
// and the answer goes back to the model as the call's output.
func TestFrameworkAgentsAskTheUser(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		s, mock := ex.stack(t, "    built_in_tools: [ask_user]\n")
		s.StartWorker()
		id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: ex.flow, InitialMessage: ex.msg("ask", "refund an order")})
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
		reqs := ex.requests(mock)
		if len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), ex.tool("ask_user")) || !strings.Contains(string(reqs[1].Body), `\"answer\":\"7\"`) {
			t.Errorf("the model requests did not offer ask_user and carry the answer: %d requests", len(reqs))
			for _, r := range reqs {
				t.Logf("%s", r.Body)
			}
		}
	})
}

// absAll makes each path (an argument with a "/") absolute; {{DIR}} is
// left for the stack.
func absAll(t *testing.T, paths []string) []string {
	t.Helper()
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if strings.Contains(p, "/") && !strings.HasPrefix(p, "{{DIR}}") {
			abs, err := filepath.Abs(p)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = abs
		}
	}
	return out
}

// TestFrameworkAgentsRunnerKilledMidWrite SIGKILLs the Python plugin while the
// approved refund runs inside it (the example's store stops at a gate after
// the refund started). The refund is a non-idempotent write, so the worker
// never runs it again: its record is outcome_unknown, the model is told so
// and answers, and the refund started exactly once.
func TestFrameworkAgentsRunnerKilledMidWrite(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		gated := filepath.Join("testdata", "py_gated_refund.py")
		if ex.node {
			gated = filepath.Join("testdata", "ts_gated_refund.js")
		}
		s, mock := ex.stackRunning(t, []string{gated, ex.dir(), "{{DIR}}", ex.store, ex.storeMethod})
		gate := s.Gate("refund")
		if err := gate.Arm(); err != nil {
			t.Fatal(err)
		}
		w := s.StartWorker()
		id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: ex.flow, InitialMessage: ex.msg("write", "refund order 3")})
		if err != nil {
			t.Fatal(err)
		}
		snap := s.WaitForSnapshot("the refund's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
		if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
			t.Fatalf("approve: %v %v", ok, err)
		}
		pid, err := gate.WaitUntilReached(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if pids := tsPluginPIDs(t, w); len(pids) != 1 || pids[0] != pid {
			t.Fatalf("the refund stopped in process %d; the worker's plugins are %v", pid, pids)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the plugin %d: %v", pid, err)
		}
		snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
		wantAnswer(t, snap, "I could not confirm the refund of order 3: please check it before trying again.")
		var status []string
		for _, m := range snap.Messages {
			if m.ToolName == "refund_order" {
				status = append(status, string(m.ToolStatus))
			}
		}
		if len(status) != 1 || status[0] != string(wire.ToolCallOutcomeUnknown) {
			t.Errorf("refund_order results stored: %v, want one outcome_unknown", status)
		}
		started, err := os.ReadFile(filepath.Join(s.Dir, "refunds-started.log"))
		if err != nil {
			t.Fatal(err)
		}
		if keys := strings.Fields(string(started)); len(keys) != 1 || keys[0] != id+"/turn-1/"+ex.prefix+"_wrefund_3" {
			t.Errorf("refunds started: %q, want exactly one, with the call's idempotency key", keys)
		}
		if refunds := ex.refunds(t, s, "3"); len(refunds) != 0 {
			t.Errorf("refunds = %v: the killed refund never reached the store", refunds)
		}
		reqs := ex.requests(mock)
		if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "The outcome of this tool call is unknown") {
			t.Errorf("aimock got %d requests; the second should tell the model the outcome is unknown", len(reqs))
		}
	})
}

// TestFrameworkAgentsPlanMode: a planning turn offers the agent only the
// session's write_todos, with the plan-mode note; the draft it writes is
// the session's plan; execute_plan starts an executing turn that offers
// the agent's own tools again and shows the model the active plan.
func TestFrameworkAgentsPlanMode(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		s, mock := ex.stack(t, "    built_in_tools: [write_todos]\n    plan_mode_enabled: true\n")
		s.StartWorker()
		id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: ex.flow})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Sessions.SendUserMessageWithOptions(ctx(t), id, ex.msg("plan", "refund orders 3 and 7"), client.SendOptions{PlanMode: true}); err != nil || !ok {
			t.Fatalf("plan-mode message: %v %v", ok, err)
		}
		snap := s.WaitForSnapshot("the draft", id, idleAfter(1))
		wantAnswer(t, snap, "Here is the plan: look order 3 up, then refund it.")
		if p := snap.Plan; p == nil || p.Status != "draft" || p.Revision != 1 || len(p.Tasks) != 2 || p.Tasks[1].Content != "Refund order 3" {
			t.Fatalf("plan after the planning turn: %+v", p)
		}
		if ok, err := s.Sessions.ExecutePlan(ctx(t), id, 1); err != nil || !ok {
			t.Fatalf("execute_plan: %v %v", ok, err)
		}
		snap = s.WaitForSnapshot("the executing turn", id, idleAfter(2))
		wantAnswer(t, snap, "Starting on the plan with order 3.")
		reqs := ex.requests(mock)
		if len(reqs) != 3 {
			t.Fatalf("aimock got %d requests, want 3", len(reqs))
		}
		planning, executing := string(reqs[0].Body), string(reqs[2].Body)
		offersOthers := strings.Contains(planning, ex.tool("lookup_order")) && !ex.fixedTools
		if !strings.Contains(planning, "[Dex] Plan mode: do not act yet.") || !strings.Contains(planning, ex.tool("write_todos")) || offersOthers {
			t.Errorf("the planning call should offer only write_todos, with the plan-mode note: %s", planning)
		}
		if !strings.Contains(executing, "[Dex] The current plan (revision 1, active):") || !strings.Contains(executing, ex.tool("lookup_order")) {
			t.Errorf("the executing call should show the active plan and offer the agent's tools: %s", executing)
		}
	})
}

// pyLongTurns is how many turns TestFrameworkAgentsLongSessionCompacts runs.
const pyLongTurns = 200

// TestFrameworkAgentsLongSessionCompacts runs 200 turns of ~1 KiB messages
// through each Python framework adapter with a 3,000-token window: the
// session compacts again and again (the adapter's cutoff and summary
// call), and no model request carries more than the window, however long
// the session grows.
func TestFrameworkAgentsLongSessionCompacts(t *testing.T) {
	forEachPyExample(t, func(t *testing.T, ex pyExample) {
		const window = 3000
		s, mock := ex.stack(t, fmt.Sprintf("    compaction: {context_window_tokens: %d, trigger_ratio: 0.85, keep_ratio: 0.3}\n", window))
		s.StartWorker()
		id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: ex.flow})
		if err != nil {
			t.Fatal(err)
		}
		filler := strings.Repeat("the order arrived late and the box was dented; ", 22)
		for i := 1; i <= pyLongTurns; i++ {
			if ok, err := s.Sessions.SendUserMessage(ctx(t), id, ex.msg("long", fmt.Sprintf("note %d: %s", i, filler))); err != nil || !ok {
				t.Fatalf("turn %d: send: %v %v", i, ok, err)
			}
			s.WaitForSnapshot(fmt.Sprintf("turn %d", i), id, idleAfter(i))
		}
		snap, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if snap.State.LastTurnError != "" {
			t.Fatalf("last turn error: %s", snap.State.LastTurnError)
		}
		wantAnswer(t, snap, "Noted.")
		var largest, summaries, turns int
		for _, r := range ex.requests(mock) {
			var body struct {
				Instructions string          `json:"instructions"`
				Input        json.RawMessage `json:"input"`    // Responses
				Messages     json.RawMessage `json:"messages"` // Chat Completions
				Contents     json.RawMessage `json:"contents"` // Gemini
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(r.Body), "Summarize the conversation so far") {
				summaries++
			} else {
				turns++
			}
			// The input the framework state makes, at the contract's 3 bytes
			// per token.
			largest = max(largest, (len(body.Input)+len(body.Messages)+len(body.Contents)+len(body.Instructions))/3)
		}
		t.Logf("%d turns: %d model calls, %d summaries, largest input ~%d tokens (window %d)", pyLongTurns, turns, summaries, largest, window)
		if turns != pyLongTurns {
			t.Errorf("%d model calls for %d turns", turns, pyLongTurns)
		}
		if largest > window {
			t.Errorf("a model request's input was ~%d tokens, over the %d-token window", largest, window)
		}
		if summaries < pyLongTurns/10 {
			t.Errorf("%d summaries in %d turns; with ~400-token turns and a 3,000-token window it should compact every few turns", summaries, pyLongTurns)
		}
		if cs := snap.ContextSummary; cs == nil || cs.Generation != summaries || !strings.HasPrefix(cs.Text, "Summary: the customer sent long notes") {
			t.Errorf("the snapshot's summary = %+v, want generation %d", cs, summaries)
		}
		if snap.Usage.ModelCalls != int64(turns+summaries) {
			t.Errorf("usage counts %d model calls, aimock saw %d", snap.Usage.ModelCalls, turns+summaries)
		}
	})
}
