package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestSessionListThroughTheCLI: with the orders demo, "refund order 7"
// waits for an approval and "refund my order" for an answer; session list
// finds each by what it waits for, pages, and refuses an unknown kind.
func TestSessionListThroughTheCLI(t *testing.T) {
	t.Parallel()
	o := newOrdersCLI(t, "    built_in_tools: [ask_user]\n", "")
	stack, base, session := o.stack, o.base, o.session
	approval := strings.TrimSpace(session("start", "--agent", "orders", "--id", "cli-approve", "--message", "refund order 7"))
	question := strings.TrimSpace(session("start", "--agent", "orders", "--id", "cli-ask", "--message", "refund my order"))
	stack.WaitForSnapshot("a pending approval", approval, func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind != wire.InterruptKindQuestion
	})
	stack.WaitForSnapshot("a question", question, func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind == wire.InterruptKindQuestion
	})
	// list polls session list --json until it lists exactly want.
	list := func(want []string, args ...string) wire.SessionsPage {
		t.Helper()
		want = slices.Sorted(slices.Values(want))
		var page wire.SessionsPage
		err := agenttest.WaitFor(context.Background(), fmt.Sprint("session list ", args), 30*time.Second, func() (bool, error) {
			page = wire.SessionsPage{}
			if err := json.Unmarshal([]byte(session(append([]string{"list", "--json"}, args...)...)), &page); err != nil {
				return false, agenttest.Permanent(err)
			}
			var ids []string
			for _, s := range page.Sessions {
				ids = append(ids, s.SessionID)
			}
			slices.Sort(ids)
			return slices.Equal(ids, want), nil
		})
		if err != nil {
			t.Fatalf("%v: got %+v", err, page.Sessions)
		}
		return page
	}
	page := list([]string{approval}, "--waiting-for", "approval")
	if got := page.Sessions[0]; got.Agent != "orders" || got.FlowType != "OrdersAgent" || !slices.Equal(got.WaitingFor, []string{"approval"}) || got.Status != "running" {
		t.Errorf("the approval session: %+v", got)
	}
	page = list([]string{question}, "--waiting-for", "question", "--agent", "orders")
	if got := page.Sessions[0]; !slices.Equal(got.WaitingFor, []string{"question"}) {
		t.Errorf("the question session: %+v", got)
	}
	list([]string{question, approval}, "--waiting-for", "approval,question")

	// The table, in pages of one with a hint that continues the list.
	out := session("list", "--waiting-for", "approval,question", "--page-size", "1")
	if !regexp.MustCompile(`(?m)^SESSION +AGENT +WAITING FOR +STATUS +STARTED\n(cli-approve +orders +approval|cli-ask +orders +question) +running +\d{4}-`).MatchString(out) {
		t.Errorf("list table:\n%s", out)
	}
	m := regexp.MustCompile(`\(more: dex-agent-worker session list --page-token (\S+) --waiting-for=approval,question --page-size=1 --address `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no hint for the next page:\n%s", out)
	}
	next := session("list", "--waiting-for", "approval,question", "--page-size", "1", "--page-token", m[1])
	first, second := strings.Contains(out, "cli-approve"), strings.Contains(next, "cli-approve")
	if first == second || strings.Contains(out, "cli-ask") == strings.Contains(next, "cli-ask") {
		t.Errorf("two pages of one do not list each session once:\n%s\n%s", out, next)
	}

	if _, stderr, code := runCLI(t, append([]string{"session", "list", "--waiting-for", "approval,coffee"}, base...)...); code != 1 ||
		!strings.Contains(stderr, `waiting_for "coffee": want one or more of approval, question, timer, task, user`) {
		t.Errorf("unknown kind: exit %d, %s", code, stderr)
	}
	if got := session("list", "--waiting-for", "timer"); got != "no sessions\n" {
		t.Errorf("no session waits for a timer; list printed %q", got)
	}
}
