package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/approvallink"
	"github.com/dex-agents/dex-agent-worker/wire"
)

const linkKey = "e2e-approval-link-key-0123456789abcdef0123"

// linkStack is the test agent with approval digests and approval links
// on, and the HTTP API.
func linkStack(t *testing.T) (*agenttest.Stack, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := strings.Replace(testConfig(plugin), "    default_tool_effect: unclassified\n", "    default_tool_effect: unclassified\n    built_in_tools: [ask_user]\n", 1)
	s := agenttest.NewStack(t, cfg+fmt.Sprintf(`approval_digest: {key_env: DEX_E2E_DIGEST_KEY, required: true}
approval_links: {key_env: DEX_E2E_LINK_KEY, public_url: %q, ttl: 1h}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: ops, token: %s}
`, base, port, tokenAll))
	s.Setenv("DEX_E2E_DIGEST_KEY", "e2e-approval-digest-key-0123456789")
	s.Setenv("DEX_E2E_LINK_KEY", linkKey)
	s.StartWorker()
	waitForPage(t, base)
	return s, base
}

func mint(t *testing.T, base, id, interruptID, body string) map[string]any {
	t.Helper()
	code, out := do(t, "POST", base+"/v1/sessions/"+id+"/interrupts/"+interruptID+"/links", tokenAll, body)
	if code != 200 {
		t.Fatalf("mint: %d %s", code, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// page GETs or POSTs a link and returns its status and the page.
func page(t *testing.T, method, url string) (int, string) {
	t.Helper()
	code, body := do(t, method, url, "", "")
	return code, string(body)
}

// TestApprovalLinks: a minted approve link's page shows the call and
// changes nothing; a changed, an expired and a foreign-call link each say
// so and change nothing; the approve link approves once (the write runs
// once), and every later use of either link says it was used and how;
// the answer records the link's channel and recipient.
func TestApprovalLinks(t *testing.T) {
	t.Parallel()
	s, base := linkStack(t)
	id := start(t, s, "call:approve_write:L1")
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	links := mint(t, base, id, in.InterruptID, `{"channel": "ops-mail", "recipient": "ops@example.com"}`)
	approve, reject := links["approve"].(string), links["reject"].(string)
	if !strings.HasPrefix(approve, base+"/v1/links/v1.") || links["kind"] != "approval" {
		t.Fatalf("links: %v", links)
	}

	code, html := page(t, "GET", approve)
	if code != 200 || !strings.Contains(html, `data-testid="link-tool">approve_write<`) || !strings.Contains(html, "&#34;name&#34;: &#34;L1&#34;") || !strings.Contains(html, `data-testid="link-confirm"`) {
		t.Fatalf("the approve page: %d\n%s", code, html)
	}
	if got := s.WaitForSnapshot("still pending", id, func(s wire.Snapshot) bool { return true }); len(got.PendingInterrupts) != 1 {
		t.Fatal("opening the link acted")
	}

	// A changed token, one for another call, and an expired one.
	token := strings.TrimPrefix(approve, base+"/v1/links/")
	head, sig, _ := strings.Cut(strings.TrimPrefix(token, "v1."), ".")
	claims, _ := base64.RawURLEncoding.DecodeString(head)
	changed := "v1." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(claims), `"a":"approve"`, `"a":"reject"`, 1))) + "." + sig
	if code, html := page(t, "POST", base+"/v1/links/"+changed); code != 400 || !strings.Contains(html, "This link is not valid") {
		t.Errorf("a changed link: %d %s", code, html)
	}
	signer, err := approvallink.NewSigner([]byte(linkKey))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := signer.Sign(approvallink.Claims{SessionID: id, InterruptID: in.InterruptID, Action: approvallink.Approve, Digest: "v1.AAAA", Expires: time.Now().Add(time.Hour).Unix()})
	if code, html := page(t, "POST", base+"/v1/links/"+other); code != 409 || !strings.Contains(html, "The request changed since this link was sent") {
		t.Errorf("a link for other arguments: %d %s", code, html)
	}
	short := mint(t, base, id, in.InterruptID, `{"ttl_seconds": 1}`)["approve"].(string)
	time.Sleep(1100 * time.Millisecond)
	if code, html := page(t, "POST", short); code != 410 || !strings.Contains(html, "This link expired") {
		t.Errorf("an expired link: %d %s", code, html)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 0 {
		t.Fatalf("approve_write ran %d times before the approval", n)
	}

	// The approval, then every later use.
	if code, html := page(t, "POST", approve); code != 200 || !strings.Contains(html, "Approved") {
		t.Fatalf("approve: %d %s", code, html)
	}
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	for _, u := range []string{approve, reject} {
		code, html := page(t, "POST", u)
		if code != 409 || !strings.Contains(html, "This link was used") || !strings.Contains(html, "already approved") {
			t.Errorf("a second use: %d %s", code, html)
		}
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
	frames := readSSE(t, ctx(t), base+"/v1/sessions/"+id+"/events", tokenAll, "", func(f sseFrame) bool { return f.data["type"] == "interrupt_resolved" })
	var p wire.InterruptResolvedPayload
	if err := json.Unmarshal([]byte(frames[len(frames)-1].data["payload"].(string)), &p); err != nil {
		t.Fatal(err)
	}
	if p.ResolvedVia != "link:ops-mail" || p.ResolvedBy != "ops@example.com" || !p.Approved {
		t.Errorf("interrupt_resolved: %+v", p)
	}
}

// TestQuestionLinks: a question with choices gets one link per choice and
// a decline link; the chosen one answers it. A free-text question gets
// none.
func TestQuestionLinks(t *testing.T) {
	t.Parallel()
	s, base := linkStack(t)
	id := start(t, s, "ask:Which_size?:S,M,L")
	snap := s.WaitForSnapshot("the question", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	l := mint(t, base, id, snap.PendingInterrupts[0].InterruptID, `{}`)
	answers := l["answers"].(map[string]any)
	if len(answers) != 3 || l["decline"] == nil {
		t.Fatalf("question links: %v", l)
	}
	code, html := page(t, "GET", answers["M"].(string))
	if code != 200 || !strings.Contains(html, "Which size?") || !strings.Contains(html, "Answer “M”") {
		t.Fatalf("the answer page: %d %s", code, html)
	}
	if code, html := page(t, "POST", answers["M"].(string)); code != 200 || !strings.Contains(html, "Answered") {
		t.Fatalf("answer: %d %s", code, html)
	}
	snap = s.WaitForSnapshot("the answer", id, idleWithAnswer)
	if !strings.Contains(lastText(snap), `"answer":"M"`) {
		t.Errorf("answer: %q", lastText(snap))
	}
	if code, html := page(t, "POST", l["decline"].(string)); code != 409 || !strings.Contains(html, "already answered") {
		t.Errorf("a decline after the answer: %d %s", code, html)
	}

	free := start(t, s, "ask:Anything?")
	fs := s.WaitForSnapshot("the free question", free, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	code, out := do(t, "POST", base+"/v1/sessions/"+free+"/interrupts/"+fs.PendingInterrupts[0].InterruptID+"/links", tokenAll, `{}`)
	if code != 409 || !strings.Contains(string(out), "no_choices") {
		t.Errorf("links of a free-text question: %d %s", code, out)
	}
}
