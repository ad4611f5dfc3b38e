package e2e

import (
	"path/filepath"
	"testing"
)

// TestWebChatTurnControl drives turn control on the web page in headless
// Chromium (control.test.mjs) against the orders demo: Stop while a refund
// waits for approval, Steer from the composer, "Steer now" and Delete on
// queued messages, and the "Needs you" inbox listing a session that waits
// for an approval; and a session closed while its page is open, which
// turns read-only. No approval is ever given, so no order is refunded.
func TestWebChatTurnControl(t *testing.T) {
	t.Parallel()
	stack, base, token, node := ordersWebStack(t, "    built_in_tools: [ask_user]\n")
	runBrowserScript(t, node, "control.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-control.png"), "-stop", "-queued", "-steered", "-closed")

	// Stopped and steered refunds never ran.
	orders, _ := demoOrders(t, stack)
	for id, o := range orders {
		if len(o.Refunds) > 0 {
			t.Errorf("order %s was refunded after a Stop or a steer: %+v", id, o.Refunds)
		}
	}
}
