package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// returnsAgentYAML is the orders demo's returns sub-agent, as
// configs/dev.yaml declares it: its label needs an approval.
const returnsAgentYAML = `  - name: returns
    flow_type: ReturnsAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
    tool_policies:
      lookup_order: {effect: read}
      request_return_label: {effect: idempotent_write, requires_approval: true, approval_text: "Print a return label for order {order_id}"}
`

// TestWebChatSubAgent drives a sub-agent on the web page in headless
// Chromium (subagent.test.mjs) against the orders demo with its returns
// sub-agent: the child's label approval shows in the parent's page as a
// nested card, is approved there, and the card ends with the child's
// answer. The carrier printed one label, for order 5.
func TestWebChatSubAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	node := requireBrowser(t)
	stack, base, token := ordersHTTPStackWith(t,
		"    sub_agents:\n      - {agent: returns, description: Handles return labels., max_turns: 8}\n", returnsAgentYAML)
	runBrowserScript(t, node, "subagent.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-subagent.png"), "-waiting", "-done")

	_, b := demoOrders(t, stack)
	var store struct {
		Labels map[string]struct {
			OrderID string `json:"order_id"`
			Status  string `json:"status"`
		} `json:"labels"`
	}
	if err := json.Unmarshal(b, &store); err != nil {
		t.Fatal(err)
	}
	if len(store.Labels) != 1 {
		t.Fatalf("labels: %+v, want one", store.Labels)
	}
	for _, l := range store.Labels {
		if l.OrderID != "5" || l.Status != "ready" {
			t.Fatalf("label: %+v", l)
		}
	}
}

// TestWebChatAnswersFromTheInbox drives the Needs-you list in headless
// Chromium (inbox.test.mjs): an approval is approved from the list without
// opening its session, and the refund runs once.
func TestWebChatAnswersFromTheInbox(t *testing.T) {
	t.Parallel()
	stack, base, token, node := ordersWebStack(t, "")
	runBrowserScript(t, node, "inbox.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-inbox.png"), "-list")
	orders, b := demoOrders(t, stack)
	if o := orders["4"]; len(o.Refunds) != 1 {
		t.Fatalf("order 4's refunds: %+v\n%s", o.Refunds, b)
	}
}
