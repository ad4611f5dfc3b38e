package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
)

// TestWebChatTurnControl drives turn control on the web page in headless
// Chromium (control.test.mjs) against the orders demo: Stop while a refund
// waits for approval, Steer from the composer, "Steer now" and Delete on
// queued messages, and the "Needs you" inbox listing a session that waits
// for an approval. No approval is ever given, so no order is refunded.
func TestWebChatTurnControl(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	node := requireBrowser(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	port := agenttest.FreePort(t)
	token := randomToken(t)
	stack := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
    built_in_tools: [ask_user]
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: browser, token: "%s"}]
`, plugin, port, token))
	stack.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForPage(t, base)
	runBrowserScript(t, node, "control.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-control.png"), "-stop", "-queued", "-steered")

	// Stopped and steered refunds never ran.
	var store struct {
		Orders map[string]struct {
			Refunds []json.RawMessage `json:"refunds"`
		} `json:"orders"`
	}
	b, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &store); err != nil {
		t.Fatal(err)
	}
	for id, o := range store.Orders {
		if len(o.Refunds) > 0 {
			t.Errorf("order %s was refunded after a Stop or a steer: %s", id, o.Refunds)
		}
	}
}
