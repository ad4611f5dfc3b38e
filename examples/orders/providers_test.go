package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestMain(m *testing.M) {
	agenttest.RunWorkerIfChild()
	os.Exit(m.Run())
}

// providerAgents are the orders agents of the full-turn test, one per
// provider, all pointed at aimock.
var providerAgents = []struct {
	provider, flowType, modelName, settings string
	base                                    func(url string) string
	keyEnv                                  string
}{
	{"openai", "OrdersOpenAI", "gpt-5-mini", "{reasoning_effort: low}", func(u string) string { return u + "/v1" }, "OPENAI_API_KEY"},
	{"openai-chat", "OrdersOpenAIChat", "gpt-5-mini", "{max_output_tokens: 2000}", func(u string) string { return u + "/v1" }, "OPENAI_API_KEY"},
	{"openai-compatible", "OrdersCompatible", "qwen3-8b", "{temperature: 0.2}", func(u string) string { return u + "/v1" }, ""},
	{"anthropic", "OrdersAnthropic", "claude-sonnet-4-5", "{thinking_budget: 1024}", func(u string) string { return u }, "ANTHROPIC_API_KEY"},
}

const testModelKey = "sk-aimock-orders-test-key"

func providersConfig(plugin, aimockURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
temporal: {namespace: default, task_queue: dex-agents}
logging: {level: debug}
plugins:
  orders:
    command: %s
    env: [OPENAI_API_KEY, ANTHROPIC_API_KEY]
agents:
`, plugin)
	for _, a := range providerAgents {
		keyEnv := ""
		if a.keyEnv != "" {
			keyEnv = ", api_key_env: " + a.keyEnv
		}
		fmt.Fprintf(&b, `  - name: orders-%[1]s
    flow_type: %[2]s
    runner: orders
    runner_config:
      store_path: "{{DIR}}/orders-%[1]s.json"
      model: {provider: %[1]s, name: %[3]s, api_base: "%[4]s"%[5]s, settings: %[6]s}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
    run_model_limit: {start_to_close_timeout: 1m, heartbeat_timeout: 10s, maximum_attempts: 3, schedule_to_close_timeout: 5m}
`, a.provider, a.flowType, a.modelName, a.base(aimockURL), keyEnv, a.settings)
	}
	return b.String()
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func idle(s wire.Snapshot) bool {
	return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && s.State.TurnCount > 0
}

// TestOrdersAgentAgainstEachProvider runs a whole session turn through the
// worker with the orders agent switched by config to each provider, all
// served by aimock over the real wire formats: the model looks order 7 up,
// asks to refund it (approved here), and answers. The first final answer's
// stream breaks mid-answer; RunModel retries it and only the second
// attempt's text is stored. Then, on the OpenAI agent: a 500 is retried and
// the turn completes; a 400 fails the turn at once with a clear error.
func TestOrdersAgentAgainstEachProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	srv := aimock.Start(t, filepath.Join("testdata", "aimock"))
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	t.Setenv("OPENAI_API_KEY", testModelKey)
	t.Setenv("ANTHROPIC_API_KEY", testModelKey)
	stack := agenttest.NewStack(t, providersConfig(plugin, srv.URL))
	worker := stack.StartWorker()

	for _, a := range providerAgents {
		t.Run(a.provider, func(t *testing.T) {
			ctx := testCtx(t)
			id, err := stack.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: a.flowType, InitialMessage: "Please refund order 7 [" + a.provider + "]"})
			if err != nil {
				t.Fatal(err)
			}
			snap := stack.WaitForSnapshot("the refund approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
			in := snap.PendingInterrupts[0]
			if in.ToolName != "refund_order" || in.Kind != wire.InterruptKindApproval || !strings.Contains(in.Arguments, `"7"`) {
				t.Fatalf("interrupt = %+v", in)
			}
			ok, err := stack.Sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true})
			if err != nil || !ok {
				t.Fatalf("approve: %v %v", ok, err)
			}
			snap = stack.WaitForSnapshot("the final answer", id, idle)
			if snap.State.LastTurnError != "" {
				t.Fatalf("the turn failed: %s", snap.State.LastTurnError)
			}
			last := snap.Messages[len(snap.Messages)-1]
			if last.Role != wire.RoleAssistant || last.Text != "Refunded $62.50 for order 7 (office chair). Anything else?" {
				t.Fatalf("final answer = %+v", last)
			}
			// The stored messages, with their framework items.
			stored, err := stack.StoredMessages(id)
			if err != nil || len(stored) != len(snap.Messages) {
				t.Fatalf("stored messages: %d, %v; the snapshot has %d", len(stored), err, len(snap.Messages))
			}
			for _, m := range stored {
				if strings.Contains(m.Text, "CUT-ATTEMPT") || strings.Contains(m.Item, "CUT-ATTEMPT") {
					t.Errorf("the broken attempt's text was stored: %+v", m)
				}
				if strings.Contains(m.Item, testModelKey) || strings.Contains(m.Text, testModelKey) {
					t.Errorf("the API key is in a stored message")
				}
			}
			// The reasoning of the responses before the answer (encrypted
			// reasoning, thinking with its signature, reasoning_content) went
			// back byte for byte in the next request.
			replayed := 0
			for _, m := range stored[:len(stored)-1] {
				var it stepwise.ModelItem
				if m.Role != pluginapi.RoleAssistant || json.Unmarshal([]byte(m.Item), &it) != nil || it.Output == nil {
					continue
				}
				for _, raw := range it.Output.Items {
					if !strings.Contains(raw, "encrypted_content") && !strings.Contains(raw, `"signature"`) && !strings.Contains(raw, "reasoning_content") {
						continue
					}
					found := false
					for _, r := range srv.Requests("") {
						found = found || bytes.Contains(r.Body, []byte(raw))
					}
					if !found {
						t.Errorf("stored reasoning never replayed byte for byte: %s", raw)
					}
					replayed++
				}
			}
			if replayed == 0 {
				t.Errorf("no stored reasoning item in %+v", snap.Messages)
			}
			// Three model calls: 100+150+200 input and 20+15+12 output tokens;
			// the broken attempt reports no usage.
			want := wire.Usage{InputTokens: 450, OutputTokens: 47, TotalTokens: 497, ModelCalls: 3}
			if snap.Usage != want {
				t.Errorf("usage = %+v, want %+v", snap.Usage, want)
			}
			store, err := OpenStore(filepath.Join(stack.Dir, "orders-"+a.provider+".json"))
			if err != nil {
				t.Fatal(err)
			}
			o, err := store.Get("7")
			if err != nil || o.Status != "refunded" || len(o.Refunds) != 1 || o.RefundedCents != 6250 {
				t.Errorf("order 7 = %+v, %v", o, err)
			}
			// The server saw the cut stream, then the retry.
			cuts := 0
			for _, e := range srv.Journal(t) {
				if e.Response.Interrupted && strings.Contains(fmt.Sprint(e.Body.Messages), "["+a.provider+"]") {
					cuts++
				}
			}
			if cuts != 1 {
				t.Errorf("%d interrupted requests for this agent, want 1", cuts)
			}
		})
	}

	t.Run("a 500 is retried", func(t *testing.T) {
		ctx := testCtx(t)
		id, err := stack.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersOpenAI", InitialMessage: "flaky server, please answer"})
		if err != nil {
			t.Fatal(err)
		}
		snap := stack.WaitForSnapshot("the answer after a retry", id, idle)
		if snap.State.LastTurnError != "" || snap.Messages[len(snap.Messages)-1].Text != "Recovered after a server error." {
			t.Fatalf("snapshot = %+v", snap)
		}
		var statuses []int
		for _, e := range srv.Journal(t) {
			if strings.Contains(fmt.Sprint(e.Body.Messages), "flaky server") {
				statuses = append(statuses, e.Response.Status)
			}
		}
		if fmt.Sprint(statuses) != "[500 200]" {
			t.Errorf("statuses = %v, want [500 200]", statuses)
		}
	})

	t.Run("a 400 fails the turn at once", func(t *testing.T) {
		ctx := testCtx(t)
		id, err := stack.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersOpenAI", InitialMessage: "context overflow, please answer"})
		if err != nil {
			t.Fatal(err)
		}
		snap := stack.WaitForSnapshot("the failed turn", id, func(s wire.Snapshot) bool { return idle(s) && s.State.LastTurnError != "" })
		msg := snap.State.LastTurnError
		if !strings.Contains(msg, "openai responses: HTTP 400: context length exceeded") || strings.Contains(msg, testModelKey) {
			t.Errorf("last_turn_error = %q", msg)
		}
		n := 0
		for _, e := range srv.Journal(t) {
			if strings.Contains(fmt.Sprint(e.Body.Messages), "context overflow") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d requests for the 400, want 1 (no retry)", n)
		}
		t.Logf("last_turn_error: %s", msg)
	})

	// Last, as it restarts the worker: a session's first turn runs on OpenAI
	// (Responses, with encrypted reasoning); the config then points the same
	// agent at Anthropic, and the second turn gets the first turn's text and
	// tool calls, without the OpenAI reasoning.
	t.Run("switching the model mid-session", func(t *testing.T) {
		ctx := testCtx(t)
		id, err := stack.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersOpenAI", InitialMessage: "[switch] look up order 3"})
		if err != nil {
			t.Fatal(err)
		}
		snap := stack.WaitForSnapshot("the first answer", id, idle)
		if got := snap.Messages[len(snap.Messages)-1].Text; got != "Order 3 is a monitor arm." {
			t.Fatalf("first answer = %q", got)
		}
		switched := strings.Replace(providersConfig(plugin, srv.URL),
			"model: {provider: openai, name: gpt-5-mini, api_base: \""+srv.URL+"/v1\", api_key_env: OPENAI_API_KEY, settings: {reasoning_effort: low}}",
			"model: {provider: anthropic, name: claude-sonnet-4-5, api_base: \""+srv.URL+"\", api_key_env: ANTHROPIC_API_KEY}", 1)
		if switched == providersConfig(plugin, srv.URL) {
			t.Fatal("the config was not switched")
		}
		if err := os.WriteFile(stack.ConfigPath, []byte(strings.ReplaceAll(switched, "{{DIR}}", stack.Dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		worker.Stop()
		stack.StartWorker()
		before := len(srv.Requests("/v1/messages"))
		if ok, err := stack.Sessions.SendUserMessage(ctx, id, "[switch] and order 4?"); err != nil || !ok {
			t.Fatalf("send: %v %v", ok, err)
		}
		snap = stack.WaitForSnapshot("the second answer", id, func(s wire.Snapshot) bool { return idle(s) && s.State.TurnCount == 2 })
		if got := snap.Messages[len(snap.Messages)-1].Text; got != "Order 4 is headphones." || snap.State.LastTurnError != "" {
			t.Fatalf("second answer = %q (%s)", got, snap.State.LastTurnError)
		}
		reqs := srv.Requests("/v1/messages")[before:]
		if len(reqs) != 2 {
			t.Fatalf("%d Anthropic requests, want 2", len(reqs))
		}
		body := string(reqs[0].Body)
		for _, want := range []string{`"text":"Order 3 is a monitor arm."`, `"id":"lookup_switch_3"`, `"tool_use_id":"lookup_switch_3"`, `"text":"[switch] look up order 3"`} {
			if !strings.Contains(body, want) {
				t.Errorf("the Anthropic request lacks %s: %s", want, body)
			}
		}
		if strings.Contains(body, "encrypted_content") || strings.Contains(body, "A lookup answers this.") {
			t.Errorf("OpenAI reasoning reached Anthropic: %s", body)
		}
	})
}
