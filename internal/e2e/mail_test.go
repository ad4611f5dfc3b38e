package e2e

import (
	"fmt"
	"mime"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// mailStack is the test agent whose approvals go to the mail catcher, with
// approval links, and the HTTP API.
func mailStack(t *testing.T, mc *testpeer.MailCatcher) (*agenttest.Stack, string) {
	t.Helper()
	return notifyStack(t, "    notify: [{kinds: [approval], channel: mail}]\n", fmt.Sprintf(`    mail:
      type: email
      smtp: {host: 127.0.0.1, port: %d, ca_file: %q}
      from: "Dex <dex@example.com>"
      to: [ops@example.com]
`, mc.Port, mc.CAFile))
}

var approveLinkRe = regexp.MustCompile(`(?m)^Approve:\r?\n(\S+)`)

// TestMailNotificationLinkInChromium: an approval goes out as a mail over
// STARTTLS to a real SMTP server, with a plain-text and an HTML part and
// the links; Chromium follows the approve link from the mail, confirms,
// and the write runs once.
func TestMailNotificationLinkInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	node := requireBrowser(t)
	mc := testpeer.StartMailCatcher(t, testpeer.MailCatcherOptions{TLS: true})
	s, base := mailStack(t, mc)
	s.StartWorker()
	waitForPage(t, base)
	id := start(t, s, "call:approve_write:M1")
	m := mc.Wait(t, 1)[0]
	if subj, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); subj != "Approval needed: approve_write (test)" || m.Header.Get("To") != "ops@example.com" {
		t.Fatalf("mail header: %v", m.Header)
	}
	text, html := m.Parts["text/plain"], m.Parts["text/html"]
	found := approveLinkRe.FindStringSubmatch(text)
	if found == nil || !strings.Contains(html, found[1]) || !strings.Contains(text, "Session: "+id) {
		t.Fatalf("the mail's parts:\n%s\n%s", text, html)
	}
	runBrowserScriptEnv(t, node, "link.test.mjs", base, tokenAll, filepath.Join(t.TempDir(), "webui-link.png"), []string{"LINK_URL=" + found[1]}, "-confirm", "-approved")
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
}

// TestMailSentOnceThroughAWorkerKill SIGKILLs the worker between composing
// a mail and sending it: the next attempt sends it, and the server gets it
// once.
func TestMailSentOnceThroughAWorkerKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	mc := testpeer.StartMailCatcher(t, testpeer.MailCatcherOptions{TLS: true})
	s, base := mailStack(t, mc)
	gate := s.Gate("before-mail-mail")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	waitForPage(t, base)
	id := start(t, s, "call:approve_write:K1")
	reached(t, gate)
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	got := mc.Wait(t, 1)
	time.Sleep(2 * time.Second) // a second copy would have come by now
	if got = mc.Mails(t); len(got) != 1 {
		t.Fatalf("%d mails, want 1", len(got))
	}
	if got[0].Header.Get("Message-Id") == "" && got[0].Header.Get("Message-ID") == "" {
		t.Errorf("the mail has no Message-ID: %v", got[0].Header)
	}
	snap := s.WaitForSnapshot("the approval still pending", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	_ = snap
}

// TestMailNotSentAgainWhenTheServerMayHaveIt SIGKILLs the worker after the
// SMTP server has the mail and before it answered the end of the data: the
// attempt had recorded that it was sending, so the next one does not send
// again; it reports notification_failed ("it may have been delivered"), the
// server holds 1 mail, and the approval still waits for its answer.
func TestMailNotSentAgainWhenTheServerMayHaveIt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	mc := testpeer.StartMailCatcher(t, testpeer.MailCatcherOptions{TLS: true})
	mc.DelayReplies(t, time.Minute)
	s, base := mailStack(t, mc)
	w := s.StartWorker()
	waitForPage(t, base)
	id := start(t, s, "call:approve_write:K2")
	mc.Wait(t, 1) // the server has it, and holds its answer
	w.Kill()
	s.StartWorker()
	p := notificationFailed(t, base, id)
	if p.Channel != "mail" || !strings.Contains(p.Reason, "it may have been delivered") {
		t.Errorf("notification_failed: %+v", p)
	}
	if got := mc.Mails(t); len(got) != 1 {
		t.Errorf("%d mails, want 1", len(got))
	}
	s.WaitForSnapshot("the approval still pending", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
}
