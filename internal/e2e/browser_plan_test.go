package e2e

import (
	"path/filepath"
	"testing"
)

// TestWebChatPlan drives plans on the web page in headless Chromium
// (plan.test.mjs) against the orders demo with plan mode: the Plan switch
// drafts "refund orders 3 and 7", the plan panel's checklist shows it,
// "Execute plan" runs it and the checklist moves with each approved
// refund; a return label's tool task shows on its card. Each order is
// refunded once.
func TestWebChatPlan(t *testing.T) {
	t.Parallel()
	stack, base, token, node := ordersWebStack(t, "    built_in_tools: [ask_user, write_todos]\n    plan_mode_enabled: true\n")
	runBrowserScript(t, node, "plan.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-plan.png"), "-draft", "-executing")

	orders, _ := demoOrders(t, stack)
	for id, o := range orders {
		want := map[string]int64{"3": 3250, "7": 6250}[id]
		if want == 0 && len(o.Refunds) > 0 || want != 0 && (len(o.Refunds) != 1 || o.Refunds[0].AmountCents != want) {
			t.Errorf("order %s refunds %+v; want one of %d cents on orders 3 and 7 only", id, o.Refunds, want)
		}
	}
}
