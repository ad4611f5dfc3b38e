package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/notify"
	"github.com/dex-agents/dex-agent-worker/wire"
)

const hookSecret = "e2e-webhook-secret-0123456789"

// receiver is a webhook receiver that verifies each body's signature and
// keeps the bodies it accepted, by channel (the path).
type receiver struct {
	mu     sync.Mutex
	bodies map[string][]notify.Body
	ids    map[string]int
	bad    []string
}

func newReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{bodies: map[string][]notify.Body{}, ids: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		id := r.Header.Get("webhook-id")
		if err := notify.Verify([]byte(hookSecret), id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b, time.Now(), 5*time.Minute); err != nil {
			rc.bad = append(rc.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		rc.ids[id]++
		var body notify.Body
		_ = json.Unmarshal(b, &body)
		rc.bodies[r.URL.Path] = append(rc.bodies[r.URL.Path], body)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *receiver) got(path string) []notify.Body {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]notify.Body(nil), rc.bodies[path]...)
}

// TestWebhookNotificationsAndEscalation: an approval goes to the ops
// webhook, signed, with its approve link, which approves it (the write
// runs once); a second approval nobody answers goes to the escalation
// channel after escalate_after; a channel that refuses the notification
// is reported with notification_failed and the session goes on.
func TestWebhookNotificationsAndEscalation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	rc, hooks := newReceiver(t)
	s, base := notifyStack(t, `    interrupt_deadline: 1m
    notify:
      - {kinds: [approval], channel: ops, escalate_after: 2s, escalate_to: oncall}
      - {channel: broken}
`, fmt.Sprintf(`    ops: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET, include_arguments: true}
    oncall: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET}
    broken: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET}
`, hooks+"/ops", hooks+"/oncall", hooks+"/refuse"))
	s.StartWorker()
	waitForPage(t, base)

	id := start(t, s, "call:approve_write:N1")
	var first notify.Body
	if err := agenttest.WaitFor(ctx(t), "the ops webhook", 30*time.Second, func() (bool, error) {
		if b := rc.got("/ops"); len(b) > 0 {
			first = b[0]
			return true, nil
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if first.SessionID != id || first.ToolName != "approve_write" || first.Arguments == nil || !strings.Contains(*first.Arguments, `"N1"`) ||
		first.Escalation || !strings.HasPrefix(first.Links.Approve, base+"/v1/links/") || first.Links.Page != base+"/?session="+id {
		t.Fatalf("the ops notification: %+v", first)
	}
	if code, html := page(t, "POST", first.Links.Approve); code != 200 || !strings.Contains(html, "Approved") {
		t.Fatalf("approve through the notification's link: %d %s", code, html)
	}
	s.WaitForSnapshot("the first answer", id, idleWithAnswer)

	// A second approval, unanswered: the escalation goes to oncall.
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "call:approve_write:N2"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	var esc notify.Body
	if err := agenttest.WaitFor(ctx(t), "the escalation", 30*time.Second, func() (bool, error) {
		if b := rc.got("/oncall"); len(b) > 0 {
			esc = b[0]
			return true, nil
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !esc.Escalation || esc.Arguments != nil || esc.SessionID != id || len(rc.got("/ops")) != 2 || esc.Links.Approve == "" {
		t.Fatalf("the escalation: %+v (ops got %d)", esc, len(rc.got("/ops")))
	}
	if n := len(rc.got("/oncall")); n != 1 {
		t.Errorf("oncall got %d notifications, want 1 (the first approval was answered before its escalation)", n)
	}
	// The refusing channel was reported, and the session went on.
	p := notificationFailed(t, base, id)
	if p.Channel != "broken" || !strings.Contains(p.Reason, "refused") {
		t.Errorf("notification_failed: %+v", p)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Errorf("bodies whose signature did not verify: %v", rc.bad)
	}
	for key, n := range rc.ids {
		if n != 1 {
			t.Errorf("notification %s was received %d times", key, n)
		}
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
}

// notificationFailed reads the session's events until a
// notification_failed one and returns its payload.
func notificationFailed(t *testing.T, base, id string) wire.NotificationFailedPayload {
	t.Helper()
	frames := readSSE(t, ctx(t), base+"/v1/sessions/"+id+"/events", tokenAll, "", func(f sseFrame) bool { return f.data["type"] == "notification_failed" })
	var p wire.NotificationFailedPayload
	if err := json.Unmarshal([]byte(frames[len(frames)-1].data["payload"].(string)), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExpiringNoticeThenExpiryFailsClosed: an approval nobody answers is
// notified when raised and again, marked expiring, interrupt_expiring_lead
// before its deadline, under another webhook-id; at the deadline the call
// is rejected and never runs, and a link sent for it changes nothing.
func TestExpiringNoticeThenExpiryFailsClosed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	rc, hooks := newReceiver(t)
	s, base := notifyStack(t, `    interrupt_deadline: 8s
    interrupt_expiring_lead: 4s
    notify: [{kinds: [approval], channel: ops}]
`, fmt.Sprintf("    ops: {type: webhook, url: %q, secret_env: DEX_E2E_HOOK_SECRET}\n", hooks+"/ops"))
	s.StartWorker()
	waitForPage(t, base)

	id := start(t, s, "call:approve_write:E1")
	var got []notify.Body
	if err := agenttest.WaitFor(ctx(t), "the first notice and the expiring one", 30*time.Second, func() (bool, error) {
		got = rc.got("/ops")
		return len(got) >= 2, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got[0].Expiring || !got[1].Expiring || got[1].InterruptID != got[0].InterruptID || got[1].SessionID != id || got[1].Links.Approve == "" {
		t.Fatalf("the notices: %+v", got)
	}
	s.WaitForSnapshot("the approval expired", id, func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 0 && s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if code, html := page(t, "POST", got[1].Links.Approve); code == 200 {
		t.Fatalf("a link to an expired approval approved it: %d %s", code, html)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 0 {
		t.Errorf("approve_write ran %d times after its approval expired", n)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.ids) != 2 || len(rc.bad) > 0 {
		t.Errorf("webhook-ids %v, bad signatures %v: want 2 distinct notifications, each once", rc.ids, rc.bad)
	}
}

// notifyStack is the test agent with agentLines added to it (its notify
// rules, its deadline), the notification channels channels declares
// (lines under notifications.channels), approval digests and links, and
// the HTTP API at the returned base URL. The channels' secret is
// DEX_E2E_HOOK_SECRET (hookSecret).
func notifyStack(t *testing.T, agentLines, channels string) (*agenttest.Stack, string) {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := strings.Replace(testConfig(plugin), "    default_tool_effect: unclassified\n", "    default_tool_effect: unclassified\n"+agentLines, 1)
	s := agenttest.NewStack(t, cfg+fmt.Sprintf(`approval_digest: {key_env: DEX_E2E_DIGEST_KEY, required: true}
approval_links: {key_env: DEX_E2E_LINK_KEY, public_url: %q}
notifications:
  channels:
%shttp:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: ops, token: %s}]
`, base, channels, port, tokenAll))
	s.Setenv("DEX_E2E_DIGEST_KEY", "e2e-approval-digest-key-0123456789")
	s.Setenv("DEX_E2E_LINK_KEY", linkKey)
	s.Setenv("DEX_E2E_HOOK_SECRET", hookSecret)
	return s, base
}
