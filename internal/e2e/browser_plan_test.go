package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
)

// TestWebChatPlan drives plans on the web page in headless Chromium
// (plan.test.mjs) against the orders demo with plan mode: the Plan switch
// drafts "refund orders 3 and 7", the plan panel's checklist shows it,
// "Execute plan" runs it and the checklist moves with each approved
// refund; a return label's tool task shows on its card. Each order is
// refunded once.
func TestWebChatPlan(t *testing.T) {
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
    built_in_tools: [ask_user, write_todos]
    plan_mode_enabled: true
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
      request_return_label: {effect: idempotent_write}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: browser, token: "%s"}]
`, plugin, port, token))
	stack.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForPage(t, base)
	runBrowserScript(t, node, "plan.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-plan.png"), "-draft", "-executing")

	var store struct {
		Orders map[string]struct {
			Refunds []struct {
				AmountCents int64 `json:"amount_cents"`
			} `json:"refunds"`
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
		want := map[string]int64{"3": 3250, "7": 6250}[id]
		if want == 0 && len(o.Refunds) > 0 || want != 0 && (len(o.Refunds) != 1 || o.Refunds[0].AmountCents != want) {
			t.Errorf("order %s refunds %+v; want one of %d cents on orders 3 and 7 only", id, o.Refunds, want)
		}
	}
}
