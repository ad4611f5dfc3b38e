package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatPlanMode: /plan drafts a plan with the orders demo, the chat
// shows it as a checklist, /execute runs it, and the checklist moves as
// each refund is approved.
func TestChatPlanMode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	stack, addr, token := ordersChatStackWith(t, "    built_in_tools: [write_todos]\n    plan_mode_enabled: true\n")
	stdout, stderr, code := runChat(t, "/plan refund orders 3 and 7\n/execute\ny\ny\n", "chat", "--agent", "orders", "--http-address", addr, "--token", token)
	if code != 0 {
		t.Fatalf("chat: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	parts := []string{
		"you> /plan refund orders 3 and 7\n",
		"Plan (revision 1, draft, 0 of 2 done):\n  [ ] Refund order 3\n  [ ] Refund order 7\n(/execute runs this plan; a message revises it)\n",
		"Here is the plan (revision 1, 2 tasks).",
		"you> /execute\n",
		"Plan (revision 2, active, 0 of 2 done):\n  [~] Refund order 3\n  [ ] Refund order 7\n",
		"Approve refund_order {\"order_id\":\"3\",\"amount_cents\":3250}? [y/N/r=reject with reason] y\n",
		"Plan (revision 3, active, 1 of 2 done):\n  [x] Refund order 3\n  [~] Refund order 7\n",
		"Approve refund_order {\"order_id\":\"7\",\"amount_cents\":6250}? [y/N/r=reject with reason] y\n",
		"Plan (revision 4, completed, 2 of 2 done):\n  [x] Refund order 3\n  [x] Refund order 7\n",
		"The plan is done. Refunded $32.50 of order 3 (monitor arm); order status: refunded. Refunded $62.50 of order 7",
	}
	rest := stdout
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Errorf("the chat lacks %q (in order)", p)
			continue
		}
		rest = rest[i+len(p):]
	}
	if strings.Contains(stdout, "write_todos") {
		t.Errorf("the chat shows write_todos calls besides the checklist")
	}
	if !strings.Contains(stderr, "(executing plan revision 1)") {
		t.Errorf("no note for the plan's execution")
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"idempotency_key"`); n != 2 {
		t.Errorf("the store holds %d refunds, want 2", n)
	}
}
