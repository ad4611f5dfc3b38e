package chat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
)

const e2eToken = "0d7c1f4a9b2e6358a1c0f9e27d4b8a63"

// ordersStack runs the orders demo agent behind the HTTP API, through a
// real engine and a worker child process, and returns a client of the API.
func ordersStack(t *testing.T) (*agenttest.Stack, *Client) {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	port := agenttest.FreePort(t)
	stack := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{token: "%s"}]
`, plugin, port, e2eToken))
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
	c, err := NewClient(addr, e2eToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return stack, c
}

// chatThrough runs a chat in a new orders session with piped input.
func chatThrough(t *testing.T, c *Client, input string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := c.StartSession(ctx, StartRequest{Agent: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	var out, notes bytes.Buffer
	s := &Session{Client: c, ID: id, Agent: "orders", In: strings.NewReader(input), Out: &out, Notes: &notes, PollInterval: time.Second}
	if err := s.Run(ctx); err != nil {
		t.Fatalf("Run: %v\nout:\n%s\nnotes:\n%s", err, out.String(), notes.String())
	}
	return out.String(), notes.String()
}

// missing reports the first part that s lacks, in order, or "".
func missing(s string, parts ...string) string {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return p
		}
		s = s[i+len(p):]
	}
	return ""
}

// TestChatTurnControlOrdersDemo runs the orders demo through a real
// engine: a refund waiting for approval is steered away (its approval is
// cancelled, and the steered message gets its answer), and another one is
// stopped with /stop. No refund is made.
func TestChatTurnControlOrdersDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	stack, c := ordersStack(t)
	const approve = `Approve refund_order {"order_id":"7","amount_cents":6250}? [y/N/r=reject with reason] `

	out, notes := chatThrough(t, c, "refund order 7\n/steer look up order 3\n")
	if miss := missing(out,
		"you> refund order 7\n",
		"→ refund_order {\"order_id\":\"7\",\"amount_cents\":6250}\n",
		approve+"/steer look up order 3\n",
		"✗ refund_order cancelled: the turn was steered\n",
		"· usage: ",
		"→ lookup_order {\"order_id\":\"3\"}\n✓ lookup_order succeeded\nOrder 3: ",
		"· usage: ",
	); miss != "" {
		t.Errorf("the steered chat lacks %q (in order)", miss)
	}
	if miss := missing(notes,
		"(steering: the turn ends at its next safe step, then your message starts the next turn)\n",
		"(the approval of refund_order was cancelled: the turn was steered)\n",
		"(the turn was steered: the next turn starts with the steered message)\n",
	); miss != "" {
		t.Errorf("the steered chat's notes lack %q (in order)", miss)
	}
	if strings.Count(out, "Approve ") != 1 || strings.Count(out, "Order 3: ") != 1 {
		t.Errorf("the approval or the answer appears more than once")
	}
	// The steered turn made two model calls (the lookup, then the refund
	// it proposed), its successor two more.
	if !strings.Contains(out, "✗ refund_order cancelled: the turn was steered\n· usage: 2 model calls, ") ||
		!strings.Contains(out, "session total: 4 model calls, ") {
		t.Errorf("each turn's usage: %q", out)
	}
	if t.Failed() {
		t.Logf("out:\n%s\nnotes:\n%s", out, notes)
	}

	out, notes = chatThrough(t, c, "refund order 7\n/stop\nlook up order 3\n")
	if miss := missing(out,
		approve+"/stop\n",
		"✗ refund_order cancelled: the turn was stopped\n",
		"· usage: ",
		"you> look up order 3\n",
		"Order 3: ",
	); miss != "" {
		t.Errorf("the stopped chat lacks %q (in order)", miss)
	}
	if miss := missing(notes,
		"(stopping the turn…)\n",
		"(the approval of refund_order was cancelled: the turn was stopped)\n",
		"(the turn was stopped)\n",
	); miss != "" {
		t.Errorf("the stopped chat's notes lack %q (in order)", miss)
	}
	if t.Failed() {
		t.Logf("out:\n%s\nnotes:\n%s", out, notes)
	}

	data, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"idempotency_key"`); n != 0 {
		t.Errorf("the store holds %d refunds, want none", n)
	}
}
