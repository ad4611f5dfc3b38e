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

// TestWebChatRetryAndCopy drives Retry on a failed turn and Copy on a
// message in headless Chromium (retry.test.mjs), on the test agent whose
// scripted model fails the first try of "failonce:web".
func TestWebChatRetryAndCopy(t *testing.T) {
	t.Parallel()
	node := requireBrowser(t)
	stack, base := newHTTPStack(t)
	waitForPage(t, base)
	runBrowserScript(t, node, "retry.test.mjs", base, tokenAll, filepath.Join(t.TempDir(), "webui-retry.png"), "-failed")
	// The model was called for the failed try and for the retry.
	if n := modelCalls(t, stack); n != 2 {
		t.Errorf("model calls = %d, want 2 (the failed try and the retry)", n)
	}
}

// TestWebChatEditAndBranches drives Edit and the branch switcher in
// headless Chromium (branch.test.mjs): the edited message goes to a new
// branch, a fork of the session before it, and the switcher moves between
// the original and the branch.
func TestWebChatEditAndBranches(t *testing.T) {
	t.Parallel()
	node := requireBrowser(t)
	stack, base := newHTTPStack(t)
	waitForPage(t, base)
	runBrowserScript(t, node, "branch.test.mjs", base, tokenAll, filepath.Join(t.TempDir(), "webui-branch.png"), "-edited")
	// Three model calls: two turns of the original and the branch's one.
	if n := modelCalls(t, stack); n != 3 {
		t.Errorf("model calls = %d, want 3", n)
	}
}
