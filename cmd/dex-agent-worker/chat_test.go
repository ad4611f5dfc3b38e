package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// runChat runs the CLI with input as the chat's standard input.
func runChat(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(input), &out, &errb)
	return out.String(), errb.String(), code
}

func TestChatFlags(t *testing.T) {
	t.Setenv("DEX_API_TOKEN", "")
	t.Setenv("DEX_HTTP_ADDRESS", "")
	tests := []struct {
		args []string
		want string
	}{
		{args: []string{"chat", "--agent", "orders"}, want: "error: no API token: pass --token or set DEX_API_TOKEN\n"},
		{args: []string{"chat", "--token", "t"}, want: "error: pass --agent NAME to start a session, or --session ID to resume one\n"},
		{args: []string{"chat", "--agent", "orders", "--token", "t", "--http-address", "ftp://x"},
			want: "error: HTTP API address \"ftp://x\": want http://host:port or https://host:port\n"},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != 1 || stderr != tt.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, stderr, tt.want)
		}
	}
	// Nothing listens on port 1: the error says where the API was expected.
	_, stderr, code := runCLI(t, "chat", "--agent", "orders", "--token", "t", "--http-address", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "is the worker running with http.listen set?") || !strings.Contains(stderr, "http://127.0.0.1:1") {
		t.Errorf("no API: exit %d, stderr %q", code, stderr)
	}
}

// TestChatOrdersDemo is the orders demo through `chat` with piped input:
// "refund order 7", then "y" for the approval, then the end of input.
func TestChatOrdersDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	stack, addr, token := ordersChatStack(t)

	stdout, stderr, code := runChat(t, "refund order 7\ny\n", "chat", "--agent", "orders", "--http-address", addr, "--token", token)
	if code != 0 {
		t.Fatalf("chat: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`(?m)^session (\S+); resume with: dex-agent-worker chat --session (\S+) --http-address `).FindStringSubmatch(stderr)
	if m == nil || m[1] != m[2] {
		t.Fatalf("stderr does not name the session:\n%s", stderr)
	}
	id := m[1]
	for _, want := range []string{
		"you> refund order 7\n",
		"→ lookup_order {\"order_id\":\"7\"}\n✓ lookup_order succeeded\n",
		"→ refund_order {\"order_id\":\"7\",\"amount_cents\":6250}\n" +
			"Approve refund_order {\"order_id\":\"7\",\"amount_cents\":6250}? [y/N/r=reject with reason] y\n",
		"✓ refund_order succeeded\nDone. Refunded $62.50 of order 7",
		"· usage: 3 model calls, ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the chat lacks %q", want)
		}
	}
	if strings.Count(stdout, "Done. Refunded $62.50 of order 7") != 1 || strings.Count(stdout, "Approve ") != 1 {
		t.Errorf("the answer or the approval appears more than once")
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"idempotency_key"`); n != 1 {
		t.Errorf("the store holds %d refunds, want 1", n)
	}

	// Resuming shows the stored conversation and, at the end of input, exits.
	stdout, stderr, code = runCLI(t, "chat", "--session", id, "--http-address", addr, "--token", token)
	if code != 0 || !strings.Contains(stdout, "you> refund order 7\n") || !strings.Contains(stdout, "Done. Refunded $62.50 of order 7") {
		t.Errorf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stderr, code = runCLI(t, "chat", "--session", id, "--agent", "other", "--http-address", addr, "--token", token)
	if code != 1 || !strings.Contains(stderr, `is a session of agent "orders", not "other"`) {
		t.Errorf("resume as another agent: exit %d, stderr %q", code, stderr)
	}

	// `session start` needs no worker config: it asks the API for the
	// agent's flow type.
	stdout, stderr, code = runCLI(t, "session", "start", "--agent", "orders", "--message", "look up order 3",
		"--http-address", addr, "--token", token, "--address", stack.Address())
	if code != 0 {
		t.Fatalf("session start through the API: exit %d\n%s", code, stderr)
	}
	final := stack.WaitForSnapshot("the lookup's answer", strings.TrimSpace(stdout), func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && len(s.Messages) > 0 && s.Messages[len(s.Messages)-1].Role == "assistant"
	})
	if got := final.Messages[len(final.Messages)-1].Text; !strings.HasPrefix(got, "Order 3: ") {
		t.Errorf("answer = %q", got)
	}

	// A closed session opens read-only: its conversation, the reason, and
	// no prompt: the lines on stdin are never sent.
	if _, stderr, code := runCLI(t, "session", "close", id, "--address", stack.Address()); code != 0 {
		t.Fatalf("close: exit %d %s", code, stderr)
	}
	err = agenttest.WaitFor(t.Context(), "the closed workflow", time.Minute, func() (bool, error) {
		d, err := stack.Client.DescribeWorkflowExecution(t.Context(), id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runChat(t, "refund order 3\n", "chat", "--session", id, "--http-address", addr, "--token", token)
	if code != 0 || !strings.Contains(stdout, "you> refund order 7\n") || !strings.Contains(stderr+stdout, "(session "+id+" was closed: it is read-only)") ||
		strings.Contains(stdout, "you> refund order 3") {
		t.Errorf("chat on the closed session: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

const chatToken = "5f0c2a9d41e8b7366c1d0e2fa93b8c47"

// ordersChatStack runs the orders demo agent (with ask_user) behind the
// HTTP API and returns the API's address and token.
func ordersChatStack(t *testing.T) (*agenttest.Stack, string, string) {
	t.Helper()
	return ordersChatStackWith(t, "    built_in_tools: [ask_user]\n")
}

// ordersChatStackWith is ordersChatStack with agentYAML (lines of the
// orders agent, indented by four spaces) instead of its built_in_tools.
func ordersChatStackWith(t *testing.T, agentYAML string) (*agenttest.Stack, string, string) {
	t.Helper()
	return ordersChatStackAgents(t, agentYAML, "")
}

// ordersChatStackAgents is ordersChatStackWith with more agents after the
// orders agent (moreYAML: list items indented two spaces).
func ordersChatStackAgents(t *testing.T, agentYAML, moreYAML string) (*agenttest.Stack, string, string) {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	port := agenttest.FreePort(t)
	token := chatToken
	stack := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
%s    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
%shttp:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{token: "%s"}]
`, plugin, agentYAML, moreYAML, port, token))
	stack.StartWorker()
	addr := fmt.Sprintf("http://127.0.0.1:%d", port)
	err := agenttest.WaitFor(context.Background(), "the worker's HTTP API", 30*time.Second, func() (bool, error) {
		resp, err := http.Get(addr + "/readyz")
		if err != nil {
			return false, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/readyz: %s", resp.Status)
	})
	if err != nil {
		t.Fatal(err)
	}

	return stack, addr, token
}

// TestChatAsksWhichOrder: "refund my order" asks which order with
// numbered choices; a number outside them is not taken and asks again,
// a choice's number answers, and the refund goes on to its approval.
func TestChatAsksWhichOrder(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	stack, addr, token := ordersChatStack(t)
	stdout, stderr, code := runChat(t, "refund my order\n12\n7\ny\n", "chat", "--agent", "orders", "--http-address", addr, "--token", token)
	if code != 0 {
		t.Fatalf("chat: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"you> refund my order\n? Which order should I refund?\n  1. order 1: desk lamp ($17.50 left)\n",
		"  7. order 7: office chair ($62.50 left)\n",
		"answer (1-9, - to decline)> 12\n",
		"answer (1-9, - to decline)> 7\n✓ ask_user succeeded\n",
		"→ lookup_order {\"order_id\":\"7\"}\n✓ lookup_order succeeded\n",
		"Approve refund_order {\"order_id\":\"7\",\"amount_cents\":6250}? [y/N/r=reject with reason] y\n",
		"✓ refund_order succeeded\nDone. Refunded $62.50 of order 7",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the chat lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "(not taken: answer with a number from 1 to 9)") {
		t.Errorf("no note for the answer not taken")
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"idempotency_key"`); n != 1 {
		t.Errorf("the store holds %d refunds, want 1", n)
	}
}

// TestChatApprovesASubAgentsCall: "delegate the return of order 5" hands
// the return to the returns sub-agent, whose label needs an approval; the
// chat of the parent session asks it (marked with the sub-agent's
// session), "y" approves it in the child, and the parent's answer repeats
// the child's.
func TestChatApprovesASubAgentsCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	_, addr, token := ordersChatStackAgents(t, "    sub_agents: [{agent: returns}]\n", `  - name: returns
    flow_type: ReturnsAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
    tool_policies:
      lookup_order: {effect: read}
      request_return_label: {effect: idempotent_write, requires_approval: true}
`)
	stdout, stderr, code := runChat(t, "delegate the return of order 5\ny\n", "chat", "--agent", "orders", "--http-address", addr, "--token", token)
	if code != 0 {
		t.Fatalf("chat: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"[sub-agent session-",
		`Approve request_return_label {"order_id":"5"}? [y/N/r=reject with reason] y`,
		"The returns agent says: Return label RET-5-",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the chat lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}
