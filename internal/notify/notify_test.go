package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/internal/approvaldigest"
	"github.com/dex-agents/dex-agent-worker/internal/approvallink"
)

var now = time.Unix(1_800_000_000, 0)

func sender(t *testing.T, channels ...Channel) (*Sender, *approvallink.Signer) {
	t.Helper()
	d, _ := approvaldigest.NewSigner(true, []byte(strings.Repeat("d", 32)))
	l, _ := approvallink.NewSigner([]byte(strings.Repeat("l", 32)))
	m := map[string]Channel{}
	for _, c := range channels {
		m[c.Name] = c
	}
	return &Sender{Channels: m, Digests: d, LinkSigner: l, BaseURL: "https://dex.example.com", LinkTTL: time.Hour, Now: func() time.Time { return now }}, l
}

func refund() Message {
	return Message{Channel: "ops", Key: "s-1/call_7/ops/0", SessionID: "s-1", Agent: "orders", InterruptID: "call_7", Kind: "approval",
		ToolCallID: "call_7", ToolName: "refund_order", Arguments: `{"order_id":"7","amount_cents":6250}`, Deadline: "2027-01-15T08:00:00Z"}
}

// TestWebhookIsSignedAndBindsItsLinks: the receiver verifies the body's
// signature; the approve link parses with the link key and carries the
// call's digest; the arguments are left out unless the channel includes
// them.
func TestWebhookIsSignedAndBindsItsLinks(t *testing.T) {
	secret := []byte("whsec-test-0123456789")
	var got Body
	var verr error
	var id string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id = r.Header.Get("webhook-id")
		verr = Verify(secret, id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b, now, 5*time.Minute)
		_ = json.Unmarshal(b, &got)
	}))
	defer srv.Close()
	s, links := sender(t, Channel{Name: "ops", Type: TypeWebhook, URL: srv.URL, Secret: secret})
	if err := s.Send(context.Background(), refund()); err != nil {
		t.Fatal(err)
	}
	if verr != nil || id != "s-1/call_7/ops/0" {
		t.Fatalf("signature: %v (id %q)", verr, id)
	}
	if got.Type != BodyType || got.ToolName != "refund_order" || got.Arguments != nil || got.Links.Page != "https://dex.example.com/?session=s-1" {
		t.Fatalf("body: %+v", got)
	}
	c, err := links.Parse(strings.TrimPrefix(got.Links.Approve, "https://dex.example.com/v1/links/"), now)
	if err != nil || c.Action != approvallink.Approve || c.Channel != "ops" || c.Digest == "" || c.Expires != now.Add(time.Hour).Unix() {
		t.Fatalf("approve link: %+v %v", c, err)
	}
	// Another body under the same signature fails.
	if Verify(secret, id, "1800000000", Sign(secret, id, "1800000000", []byte(`{"a":1}`)), []byte(`{"a":2}`), now, time.Minute) == nil {
		t.Fatal("a changed body verified")
	}
	s.Channels["ops"] = Channel{Name: "ops", Type: TypeWebhook, URL: srv.URL, Secret: secret, IncludeArguments: true}
	if err := s.Send(context.Background(), refund()); err != nil || got.Arguments == nil || *got.Arguments != refund().Arguments {
		t.Fatalf("with include_arguments: %v %+v", err, got.Arguments)
	}
}

func TestWebhookFailures(t *testing.T) {
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	s, _ := sender(t, Channel{Name: "ops", Type: TypeWebhook, URL: srv.URL + "/hook?token=secret-in-url"})
	var perm *Permanent
	if err := s.Send(context.Background(), refund()); err == nil || errors.As(err, &perm) {
		t.Fatalf("503: %v (want a retryable error)", err)
	}
	status = http.StatusForbidden
	if err := s.Send(context.Background(), refund()); !errors.As(err, &perm) {
		t.Fatalf("403: %v (want a permanent error)", err)
	}
	srv.Close()
	err := s.Send(context.Background(), refund())
	if err == nil || strings.Contains(err.Error(), "secret-in-url") {
		t.Fatalf("a refused connection: %v (the URL must not show)", err)
	}
	m := refund()
	m.Channel = "nobody"
	if err := s.Send(context.Background(), m); !errors.As(err, &perm) {
		t.Fatalf("unknown channel: %v", err)
	}
}

// checkSlack checks a payload against Slack's documented Block Kit shape
// for incoming webhooks: what a local receiver can check, since Slack
// itself cannot be reached here.
func checkSlack(t *testing.T, p SlackPayload) {
	t.Helper()
	if p.Text == "" || len(p.Blocks) == 0 || len(p.Blocks) > 50 {
		t.Fatalf("text %q, %d blocks", p.Text, len(p.Blocks))
	}
	for _, b := range p.Blocks {
		switch b.Type {
		case "section":
			if b.Text == nil || (b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text") || b.Text.Text == "" || utf8.RuneCountInString(b.Text.Text) > 3000 {
				t.Fatalf("section: %+v", b.Text)
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				t.Fatalf("%d action elements", len(b.Elements))
			}
			ids := map[string]bool{}
			for _, e := range b.Elements {
				if e.Type != "button" || e.Text.Type != "plain_text" || e.Text.Text == "" || utf8.RuneCountInString(e.Text.Text) > 75 ||
					!strings.HasPrefix(e.URL, "https://") || len(e.URL) > 3000 || e.ActionID == "" || ids[e.ActionID] ||
					(e.Style != "" && e.Style != "primary" && e.Style != "danger") {
					t.Fatalf("button: %+v", e)
				}
				ids[e.ActionID] = true
			}
		default:
			t.Fatalf("block type %q", b.Type)
		}
	}
}

func TestSlackPayloadHasTheDocumentedShape(t *testing.T) {
	var got SlackPayload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
	}))
	defer srv.Close()
	s, _ := sender(t, Channel{Name: "ops", Type: TypeSlack, URL: srv.URL})
	if err := s.Send(context.Background(), refund()); err != nil {
		t.Fatal(err)
	}
	checkSlack(t, got)
	if len(got.Blocks) != 2 || got.Blocks[1].Elements[0].ActionID != "approve" || got.Blocks[1].Elements[1].Style != "danger" {
		t.Fatalf("approval payload: %+v", got)
	}
	q := Message{Channel: "ops", Escalation: true, Key: "k", SessionID: "s-1", Agent: "orders", InterruptID: "q1", Kind: "question",
		Question: "Which <order>?", Choices: []string{"order 1", strings.Repeat("long choice ", 20)}}
	for i := 0; i < 40; i++ {
		q.Choices = append(q.Choices, "c"+strings.Repeat("x", i))
	}
	if err := s.Send(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	checkSlack(t, got)
	if !strings.Contains(got.Blocks[0].Text.Text, "Which &lt;order&gt;?") || !strings.Contains(got.Blocks[0].Text.Text, "nobody answered yet") {
		t.Fatalf("question section: %q", got.Blocks[0].Text.Text)
	}
}

type fakeAttempts struct{ earlier, marked bool }

func (f *fakeAttempts) Sending() bool                     { return f.earlier }
func (f *fakeAttempts) MarkSending(context.Context) error { f.marked = true; return nil }

// TestMailIsNotSentAgainAfterAnAttemptBeganIt: an attempt after one that
// began to send does not reach the server at all.
func TestMailIsNotSentAgainAfterAnAttemptBeganIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			dialed <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s, _ := sender(t, Channel{Name: "mail", Type: TypeEmail, SMTP: SMTP{Host: "127.0.0.1", Port: port, NoTLS: true}, Mail: Mail{From: "dex@example.com", To: []string{"ops@example.com"}}})
	var perm *Permanent
	if err := s.SendWith(context.Background(), func() Message { m := refund(); m.Channel, m.Key = "mail", "k"; return m }(), &fakeAttempts{earlier: true}); !errors.As(err, &perm) || !errors.Is(err, ErrMaybeSent) {
		t.Fatalf("err = %v, want ErrMaybeSent", err)
	}
	select {
	case <-dialed:
		t.Fatal("the server was reached")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestComposedMail: a plain-text and an HTML part, each with the links,
// and the idempotency key in the Message-ID.
func TestComposedMail(t *testing.T) {
	s, _ := sender(t)
	m := refund()
	l, err := s.Links(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := composeMail(m, l, "Dex <dex@example.com>", []string{"ops@example.com"}, now)
	if err != nil {
		t.Fatal(err)
	}
	msg := string(b)
	for _, want := range []string{"Message-Id: <s-1.call_7.ops.0@dex-agent-worker>", "Content-Type: text/plain; charset=utf-8", "Content-Type: text/html; charset=utf-8", "Approval needed: refund_order (orders)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the mail lacks %q:\n%s", want, msg)
		}
	}
}
