// Package notify tells people that a session waits for them: it sends an
// interrupt (an approval or a question) to a channel, a webhook or a Slack
// incoming webhook, with signed links that answer it (package
// approvallink). The SendNotification Step calls it; the session decides
// when (see internal/session/notify.go).
//
// A webhook's body is signed as Standard Webhooks describes: the headers
// webhook-id (the notification's idempotency key, the same on every retry,
// so a receiver drops a repeat), webhook-timestamp (Unix seconds) and
// webhook-signature ("v1," and the base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>" under the channel's secret).
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/approvaldigest"
	"github.com/dex-agents/dex-agent-worker/internal/approvallink"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Channel types.
const (
	TypeWebhook = "webhook"
	TypeSlack   = "slack"
)

// Channel is where notifications go.
type Channel struct {
	Name string
	Type string
	// URL is the webhook's (for Slack, the incoming webhook's, a secret).
	URL string
	// Secret signs a webhook's body (nil: unsigned).
	Secret []byte
	// IncludeArguments puts an approval's arguments in the notification;
	// off, it says only the tool, and the link's page shows them.
	IncludeArguments bool
	// SMTP and Mail are an email channel's.
	SMTP SMTP
	Mail Mail
}

// Message is one notification: the interrupt as the session gave it to
// the SendNotification Step, its channel, whether it is the first notice,
// the escalation or the deadline's warning, and its idempotency key.
type Message = session.NotificationInput

// Links are the links of a notification.
type Links struct {
	// Page opens the session in the web page.
	Page    string            `json:"page,omitempty"`
	Approve string            `json:"approve,omitempty"`
	Reject  string            `json:"reject,omitempty"`
	Answers map[string]string `json:"answers,omitempty"`
	Decline string            `json:"decline,omitempty"`
	// ExpiresAt is when the answer links stop working.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// Body is a webhook's JSON body.
type Body struct {
	Type        string   `json:"type"`
	Escalation  bool     `json:"escalation"`
	Expiring    bool     `json:"expiring"`
	SessionID   string   `json:"session_id"`
	Agent       string   `json:"agent"`
	InterruptID string   `json:"interrupt_id"`
	Kind        string   `json:"kind"`
	ToolName    string   `json:"tool_name,omitempty"`
	Arguments   *string  `json:"arguments,omitempty"`
	Question    string   `json:"question,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	Deadline    string   `json:"deadline,omitempty"`
	Links       Links    `json:"links"`
}

// BodyType is the type of every webhook body.
const BodyType = "dex.interrupt"

// Sender sends notifications.
type Sender struct {
	Channels map[string]Channel
	// Digests and LinkSigner mint the answer links (nil: the notification
	// has only the page link); BaseURL is where people reach the API.
	Digests    *approvaldigest.Signer
	LinkSigner *approvallink.Signer
	BaseURL    string
	LinkTTL    time.Duration
	Client     *http.Client
	Now        func() time.Time
	// Hooks let tests stop a send at an exact point.
	Hooks Hooks
}

// Hooks let tests stop a send at an exact point; production leaves them
// nil.
type Hooks struct {
	// BeforeMailSend runs once a mail is composed, before the SMTP
	// server is reached.
	BeforeMailSend func(ctx context.Context, m Message)
}

// Permanent is a failure a retry would not mend (the channel refused the
// notification, or is not configured).
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Links mints the links of m's interrupt.
func (s *Sender) Links(m Message) (Links, error) {
	in := m
	var l Links
	if s.BaseURL == "" {
		return l, nil
	}
	base := strings.TrimSuffix(s.BaseURL, "/")
	l.Page = base + "/?session=" + urlQueryEscape(in.SessionID)
	if s.LinkSigner == nil {
		return l, nil
	}
	expires := s.now().Add(s.LinkTTL).Truncate(time.Second)
	if s.LinkTTL <= 0 {
		expires = s.now().Add(24 * time.Hour).Truncate(time.Second)
	}
	claims := approvallink.Claims{SessionID: in.SessionID, InterruptID: in.InterruptID, Channel: m.Channel, Recipient: m.Channel, Expires: expires.Unix()}
	mint := func(action, choice, digest string) (string, error) {
		c := claims
		c.Action, c.Choice, c.Digest = action, choice, digest
		t, err := s.LinkSigner.Sign(c)
		if err != nil {
			return "", err
		}
		return base + "/v1/links/" + t, nil
	}
	var err error
	switch in.Kind {
	case wire.InterruptKindQuestion:
		if len(in.Choices) == 0 {
			return l, nil // free text: the page answers it
		}
		l.Answers = map[string]string{}
		for _, c := range in.Choices {
			if l.Answers[c], err = mint(approvallink.Answer, c, ""); err != nil {
				return l, err
			}
		}
		l.Decline, err = mint(approvallink.Decline, "", "")
	default:
		if s.Digests == nil {
			return l, nil
		}
		digest := s.Digests.Sign(approvaldigest.Subject{SessionID: in.SessionID, ToolCallID: in.ToolCallID, ToolName: in.ToolName,
			Arguments: in.Arguments, ArgumentsRef: in.ArgumentsRef})
		if l.Approve, err = mint(approvallink.Approve, "", digest); err == nil {
			l.Reject, err = mint(approvallink.Reject, "", digest)
		}
	}
	l.ExpiresAt = expires.UTC().Format(time.RFC3339)
	return l, err
}

// Send sends m to its channel.
func (s *Sender) Send(ctx context.Context, m Message) error { return s.SendWith(ctx, m, nil) }

// SendWith sends m to its channel; attempts, when set, keeps a mail from
// going out twice (see sendMail).
func (s *Sender) SendWith(ctx context.Context, m Message, attempts Attempts) error {
	ch, ok := s.Channels[m.Channel]
	if !ok {
		return &Permanent{fmt.Errorf("no notification channel %q in the worker's config", m.Channel)}
	}
	links, err := s.Links(m)
	if err != nil {
		return &Permanent{fmt.Errorf("mint the links: %w", err)}
	}
	switch ch.Type {
	case TypeWebhook:
		return s.post(ctx, ch, m.Key, s.body(ch, m, links))
	case TypeSlack:
		return s.post(ctx, ch, "", slackBody(m, links))
	case TypeEmail:
		msg, err := composeMail(m, links, ch.Mail.From, ch.Mail.To, s.now())
		if err != nil {
			return &Permanent{err}
		}
		if s.Hooks.BeforeMailSend != nil {
			s.Hooks.BeforeMailSend(ctx, m)
		}
		return sendMail(ctx, ch.SMTP, ch.Mail.From, ch.Mail.To, msg, attempts)
	}
	return &Permanent{fmt.Errorf("channel %s has unknown type %q", ch.Name, ch.Type)}
}

func (s *Sender) body(ch Channel, m Message, links Links) any {
	in := m
	b := Body{Type: BodyType, Escalation: m.Escalation, Expiring: m.Expiring, SessionID: in.SessionID, Agent: in.Agent, InterruptID: in.InterruptID, Kind: in.Kind,
		ToolName: in.ToolName, Question: in.Question, Choices: in.Choices, Deadline: in.Deadline, Links: links}
	if ch.IncludeArguments && in.Kind != wire.InterruptKindQuestion {
		args := in.Arguments
		b.Arguments = &args
	}
	return b
}

// post sends one JSON body; id, when set, is the webhook-id of a signed
// body.
func (s *Sender) post(ctx context.Context, ch Channel, id string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return &Permanent{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.URL, bytes.NewReader(b))
	if err != nil {
		return &Permanent{fmt.Errorf("channel %s: %v", ch.Name, redactURL(err, ch.URL))}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "dex-agent-worker")
	if id != "" {
		ts := strconv.FormatInt(s.now().Unix(), 10)
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", ts)
		if len(ch.Secret) > 0 {
			req.Header.Set("webhook-signature", Sign(ch.Secret, id, ts, b))
		}
	}
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("channel %s: %v", ch.Name, redactURL(err, ch.URL))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("channel %s answered %s", ch.Name, resp.Status)
	}
	return &Permanent{fmt.Errorf("channel %s refused the notification: %s %s", ch.Name, resp.Status, strings.TrimSpace(string(msg)))}
}

// Sign is the webhook-signature of a body: "v1," and the base64
// HMAC-SHA256 of "<id>.<timestamp>.<body>".
func Sign(secret []byte, id, timestamp string, body []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(id + "." + timestamp + "."))
	h.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// Verify checks a webhook's signature header (which may hold several
// space-separated signatures, as Standard Webhooks allows) and that its
// timestamp is within tolerance of now: what a receiver does.
func Verify(secret []byte, id, timestamp, signatures string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("the webhook-timestamp is not Unix seconds")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("the webhook-timestamp is too far from now")
	}
	want := Sign(secret, id, timestamp, body)
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no webhook-signature matches")
}

// redactURL keeps a channel's URL (which may hold a secret, as a Slack
// incoming webhook's does) out of an error.
func redactURL(err error, u string) string {
	return strings.ReplaceAll(err.Error(), u, "[channel URL]")
}

func urlQueryEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
