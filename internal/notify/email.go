package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// TypeEmail is a channel that sends mail over SMTP.
const TypeEmail = "email"

// SMTP is an email channel's server.
type SMTP struct {
	Host     string
	Port     int
	Username string
	Password string
	// NoTLS sends without STARTTLS; only for a server on this machine
	// (a mail catcher), which the config checks.
	NoTLS bool
	// RootCAs trusts the server's certificate (nil: the system's).
	RootCAs *x509.CertPool
}

// Mail is an email channel's addresses.
type Mail struct {
	From string
	To   []string
}

// ErrMaybeSent reports an attempt that stopped after the mail's data
// began to go out: it may have been delivered, so it is not sent again.
var ErrMaybeSent = errors.New("an earlier attempt stopped while the mail was being sent: it may have been delivered, so it is not sent again")

// Attempts records a mail's send durably before its data goes out, so an
// attempt after a crash never sends it twice (the SendNotification Step's
// heartbeat).
type Attempts interface {
	// Sending reports whether an earlier attempt began to send.
	Sending() bool
	// MarkSending records durably that this attempt begins to send.
	MarkSending(ctx context.Context) error
}

// composeMail builds the message: a plain-text and an HTML part, with the
// links, and a Message-ID made from the idempotency key.
func composeMail(m Message, l Links, from string, to []string, now time.Time) ([]byte, error) {
	in := m
	subject := fmt.Sprintf("Approval needed: %s (%s)", in.ToolName, in.Agent)
	lead := fmt.Sprintf("The %s agent wants to run %s.", in.Agent, in.ToolName)
	if in.Kind == wire.InterruptKindQuestion {
		subject = fmt.Sprintf("Question from %s", in.Agent)
		lead = fmt.Sprintf("The %s agent asks: %s", in.Agent, in.Question)
	}
	if m.Escalation {
		subject = "Still waiting: " + subject
	}
	if m.Expiring {
		subject = "Expires soon: " + subject
	}
	var text strings.Builder
	text.WriteString(lead + "\n\n")
	if in.Deadline != "" {
		fmt.Fprintf(&text, "Deadline: %s\n", in.Deadline)
	}
	fmt.Fprintf(&text, "Session: %s\n\n", in.SessionID)
	type link struct{ Label, URL string }
	var links []link
	add := func(label, url string) {
		if url != "" {
			links = append(links, link{label, url})
		}
	}
	add("Approve", l.Approve)
	add("Reject", l.Reject)
	for _, c := range in.Choices {
		add("Answer: "+c, l.Answers[c])
	}
	add("Decline", l.Decline)
	add("Open the session", l.Page)
	for _, k := range links {
		fmt.Fprintf(&text, "%s:\n%s\n\n", k.Label, k.URL)
	}
	if l.ExpiresAt != "" {
		fmt.Fprintf(&text, "Each link opens a page that asks you to confirm, and works once, until %s.\n", l.ExpiresAt)
	}
	var html bytes.Buffer
	if err := mailHTML.Execute(&html, map[string]any{"Lead": lead, "Deadline": in.Deadline, "Session": in.SessionID, "Links": links, "Expires": l.ExpiresAt}); err != nil {
		return nil, err
	}

	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	hdr := textproto.MIMEHeader{}
	hdr.Set("From", from)
	hdr.Set("To", strings.Join(to, ", "))
	hdr.Set("Subject", mime.QEncoding.Encode("utf-8", subject))
	hdr.Set("Date", now.UTC().Format(time.RFC1123Z))
	hdr.Set("Message-ID", "<"+strings.NewReplacer("/", ".", " ", "").Replace(m.Key)+"@dex-agent-worker>")
	hdr.Set("MIME-Version", "1.0")
	hdr.Set("Content-Type", "multipart/alternative; boundary="+w.Boundary())
	keys := make([]string, 0, len(hdr))
	for k := range hdr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var head bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&head, "%s: %s\r\n", k, hdr.Get(k))
	}
	head.WriteString("\r\n")
	for _, part := range []struct{ typ, body string }{{"text/plain", text.String()}, {"text/html", html.String()}} {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {part.typ + "; charset=utf-8"}, "Content-Transfer-Encoding": {"quoted-printable"}})
		if err != nil {
			return nil, err
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := qp.Write([]byte(part.body)); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return append(head.Bytes(), b.Bytes()...), nil
}

var mailHTML = template.Must(template.New("mail").Parse(`<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">
<p>{{.Lead}}</p>
{{if .Deadline}}<p>Deadline: {{.Deadline}}</p>{{end}}
<p>{{range .Links}}<a href="{{.URL}}" style="display:inline-block;margin:0 8px 8px 0;padding:8px 14px;border-radius:6px;background:#1f6feb;color:#fff;text-decoration:none">{{.Label}}</a>{{end}}</p>
{{if .Expires}}<p style="color:#59636e;font-size:90%">Each link opens a page that asks you to confirm, and works once, until {{.Expires}}.</p>{{end}}
<p style="color:#59636e;font-size:90%">Session {{.Session}}</p>
</body></html>`))

// sendMail sends one composed mail. Everything up to the recipients may be
// tried again; from the DATA command on, the attempt is recorded first, and
// an attempt after one that got that far does not send (ErrMaybeSent).
func sendMail(ctx context.Context, s SMTP, from string, to []string, msg []byte, attempts Attempts) error {
	if attempts != nil && attempts.Sending() {
		return &Permanent{ErrMaybeSent}
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	d := net.Dialer{Timeout: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to the SMTP server %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("SMTP server %s: %w", addr, err)
	}
	defer c.Close()
	if !s.NoTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return &Permanent{fmt.Errorf("SMTP server %s does not offer STARTTLS, which the channel requires", addr)}
		}
		if err := c.StartTLS(&tls.Config{ServerName: s.Host, RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12}); err != nil {
			return &Permanent{fmt.Errorf("STARTTLS with %s: %w", addr, err)}
		}
	}
	if s.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, s.Host)); err != nil {
			return &Permanent{fmt.Errorf("SMTP authentication at %s: %w", addr, err)}
		}
	}
	fromAddr, err := mail.ParseAddress(from)
	if err != nil {
		return &Permanent{fmt.Errorf("from address %q: %w", from, err)}
	}
	if err := c.Mail(fromAddr.Address); err != nil {
		return smtpError("MAIL FROM", err)
	}
	for _, rcpt := range to {
		a, err := mail.ParseAddress(rcpt)
		if err != nil {
			return &Permanent{fmt.Errorf("recipient %q: %w", rcpt, err)}
		}
		if err := c.Rcpt(a.Address); err != nil {
			return smtpError("RCPT TO "+a.Address, err)
		}
	}
	if attempts != nil {
		if err := attempts.MarkSending(ctx); err != nil {
			return fmt.Errorf("record the send before it: %w", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return &Permanent{fmt.Errorf("%w (DATA: %v)", ErrMaybeSent, err)}
	}
	if _, err := w.Write(msg); err != nil {
		return &Permanent{fmt.Errorf("%w (%v)", ErrMaybeSent, err)}
	}
	if err := w.Close(); err != nil {
		return &Permanent{fmt.Errorf("%w (end of data: %v)", ErrMaybeSent, err)}
	}
	_ = c.Quit()
	return nil
}

// smtpError sorts an SMTP reply: 5xx is permanent, the rest may pass.
func smtpError(what string, err error) error {
	var tp *textproto.Error
	if errors.As(err, &tp) && tp.Code >= 500 {
		return &Permanent{fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}
