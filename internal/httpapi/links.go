package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/approvallink"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Approval links: signed, single-use links that answer one interrupt
// (package approvallink). POST .../interrupts/{interrupt_id}/links mints
// them for a caller allowed the session; GET /v1/links/{token} shows what
// the link does and asks to confirm, and never acts, so a mail scanner
// that follows it changes nothing; POST /v1/links/{token} acts. The link
// is the whole credential of these two routes: they take no bearer token.

// Links configure approval links.
type Links struct {
	Signer *approvallink.Signer
	// BaseURL is where people reach this API ("https://dex.example.com"):
	// links are BaseURL + "/v1/links/" + token.
	BaseURL string
	// TTL is how long a minted link works unless asked shorter.
	TTL time.Duration
}

// MaxLinkTTL bounds a link's life.
const MaxLinkTTL = 30 * 24 * time.Hour

// LinkRequest is the body of POST .../interrupts/{interrupt_id}/links.
type LinkRequest struct {
	// SessionID names the sub-agent that holds the interrupt, as
	// pending_interrupts[].session_id gives it.
	SessionID string `json:"session_id,omitempty"`
	// Channel and Recipient say where the links go; the answer records
	// them (resolved_via "link:<channel>", resolved_by the recipient).
	Channel   string `json:"channel,omitempty"`
	Recipient string `json:"recipient,omitempty"`
	// TTLSeconds shortens the links' life (default: the config's).
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// LinkSet is the answer of POST .../links: an approval's approve and
// reject links, or a question's answer links (one per choice) and decline
// link.
type LinkSet struct {
	InterruptID string            `json:"interrupt_id"`
	Kind        string            `json:"kind"`
	ExpiresAt   string            `json:"expires_at"`
	Approve     string            `json:"approve,omitempty"`
	Reject      string            `json:"reject,omitempty"`
	Answers     map[string]string `json:"answers,omitempty"`
	Decline     string            `json:"decline,omitempty"`
}

// pendingInterrupt finds interrupt id among what session waits on: its
// own, or its sub-agent holder's (empty holder: its own).
func pendingInterrupt(snap wire.Snapshot, interruptID, holder string) (wire.Interrupt, bool) {
	for _, in := range snap.PendingInterrupts {
		own := in.SessionID == "" || in.SessionID == snap.SessionID
		if in.InterruptID == interruptID && (holder == "" && own || holder != "" && in.SessionID == holder) {
			return in, true
		}
	}
	return wire.Interrupt{}, false
}

// mintLinks answers POST /v1/sessions/{id}/interrupts/{interrupt_id}/links.
func (s *Server) mintLinks(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	l := s.opts.Links
	if l == nil || l.Signer == nil {
		s.fail(w, r, errorf(http.StatusNotFound, "not_found", "approval links are off: set approval_links in the worker's config"))
		return
	}
	var req LinkRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	ttl := l.TTL
	if req.TTLSeconds < 0 || time.Duration(req.TTLSeconds)*time.Second > MaxLinkTTL {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "ttl_seconds must be from 1 to %d", int64(MaxLinkTTL/time.Second)))
		return
	}
	if req.TTLSeconds > 0 && time.Duration(req.TTLSeconds)*time.Second < ttl {
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	snap, err := s.sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	holder := ""
	if req.SessionID != "" && req.SessionID != id {
		holder = req.SessionID
	}
	iid := r.PathValue("interrupt_id")
	in, ok := pendingInterrupt(snap, iid, holder)
	if !ok {
		s.fail(w, r, errorf(http.StatusConflict, "not_pending", "interrupt %s is not pending in session %s: %s", iid, id, client.WhyNotResolved(snap, iid, client.Approve, "", time.Now())))
		return
	}
	expires := time.Now().Add(ttl).Truncate(time.Second)
	base := approvallink.Claims{SessionID: id, Holder: holder, InterruptID: iid, Channel: req.Channel, Recipient: req.Recipient, Expires: expires.Unix()}
	if base.Recipient == "" && tok != nil {
		base.Recipient = tok.Name
	}
	out := LinkSet{InterruptID: iid, Kind: in.Kind, ExpiresAt: expires.UTC().Format(time.RFC3339)}
	link := func(action, choice string) (string, error) {
		c := base
		c.Action, c.Choice = action, choice
		if action == approvallink.Approve || action == approvallink.Reject {
			c.Digest = in.Digest
		}
		t, err := l.Signer.Sign(c)
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(l.BaseURL, "/") + "/v1/links/" + t, nil
	}
	if in.Kind == wire.InterruptKindQuestion {
		if len(in.Choices) == 0 {
			s.fail(w, r, errorf(http.StatusConflict, "no_choices", "question %s takes free text: a link can only give one of a question's choices; answer it in the page or the API", iid))
			return
		}
		out.Answers = map[string]string{}
		for _, c := range in.Choices {
			if out.Answers[c], err = link(approvallink.Answer, c); err != nil {
				s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "%v", err))
				return
			}
		}
		out.Decline, err = link(approvallink.Decline, "")
	} else {
		if in.Digest == "" {
			s.fail(w, r, errorf(http.StatusConflict, "no_digest", "approval %s carries no digest, which a link is bound to: set approval_digest in the worker's config", iid))
			return
		}
		if out.Approve, err = link(approvallink.Approve, ""); err == nil {
			out.Reject, err = link(approvallink.Reject, "")
		}
	}
	if err != nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// linkPage is what a link's page shows.
type linkPage struct {
	Title  string
	Status string // ok, done, refused
	Lines  []string
	// The call or question the link answers.
	Agent, Tool, Arguments, Approval, Question, Deadline string
	// Button, when set, is the confirmation form's button.
	Button, ButtonClass string
}

var linkTemplate = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>{{.Title}} · Dex Agents</title>
<style>
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1f2328}
main{max-width:560px;margin:48px auto;padding:28px;background:#fff;border:1px solid #d8dee4;border-radius:12px}
h1{font-size:1.3em;margin:0 0 12px}
.refused h1{color:#b42318}.done h1{color:#1a7f37}
dl{display:grid;grid-template-columns:max-content 1fr;gap:6px 14px;margin:16px 0}
dt{color:#59636e}dd{margin:0;overflow-wrap:anywhere}
pre{background:#f6f8fa;border-radius:8px;padding:10px;white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
button{font:inherit;font-weight:600;padding:10px 18px;border-radius:8px;border:0;color:#fff;background:#1a7f37;cursor:pointer}
button.danger{background:#b42318}
p.note{color:#59636e;font-size:.9em}
</style></head>
<body><main class="{{.Status}}" data-testid="link-page" data-status="{{.Status}}">
<h1 data-testid="link-title">{{.Title}}</h1>
{{range .Lines}}<p data-testid="link-line">{{.}}</p>{{end}}
{{if or .Tool .Question}}<dl>
{{if .Agent}}<dt>Agent</dt><dd>{{.Agent}}</dd>{{end}}
{{if .Approval}}<dt>Action</dt><dd data-testid="link-approval">{{.Approval}}</dd>{{end}}
{{if .Tool}}<dt>Tool</dt><dd data-testid="link-tool">{{.Tool}}</dd>{{end}}
{{if .Arguments}}<dt>Arguments</dt><dd><pre data-testid="link-arguments">{{.Arguments}}</pre></dd>{{end}}
{{if .Question}}<dt>Question</dt><dd data-testid="link-question">{{.Question}}</dd>{{end}}
{{if .Deadline}}<dt>Deadline</dt><dd>{{.Deadline}}</dd>{{end}}
</dl>{{end}}
{{if .Button}}<form method="post"><button type="submit" class="{{.ButtonClass}}" data-testid="link-confirm">{{.Button}}</button></form>
<p class="note">Nothing happens until you press the button. The link works once.</p>{{end}}
</main></body></html>
`))

// writeLinkPage writes a link's page with headers that keep the token
// out of referrers, caches and frames.
func writeLinkPage(w http.ResponseWriter, status int, p linkPage) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Robots-Tag", "noindex, nofollow")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_ = linkTemplate.Execute(w, p)
}

// linkAction names what a link does for people.
func linkAction(c approvallink.Claims, tool string) (title, button, class string) {
	switch c.Action {
	case approvallink.Approve:
		return "Approve " + tool + "?", "Approve", ""
	case approvallink.Reject:
		return "Reject " + tool + "?", "Reject", "danger"
	case approvallink.Answer:
		return "Answer “" + c.Choice + "”?", "Answer “" + c.Choice + "”", ""
	}
	return "Decline the question?", "Decline", "danger"
}

// openLink checks a link's token and finds the interrupt it answers. It
// writes the refusal page itself and returns false when the link cannot
// act: not valid, expired, answered already, or made for another call.
func (s *Server) openLink(w http.ResponseWriter, r *http.Request) (approvallink.Claims, wire.Snapshot, wire.Interrupt, bool) {
	l := s.opts.Links
	if l == nil || l.Signer == nil {
		writeLinkPage(w, http.StatusNotFound, linkPage{Title: "Approval links are off", Status: "refused", Lines: []string{"This worker does not take approval links."}})
		return approvallink.Claims{}, wire.Snapshot{}, wire.Interrupt{}, false
	}
	c, err := l.Signer.Parse(r.PathValue("token"), time.Now())
	switch {
	case errors.Is(err, approvallink.ErrExpired):
		writeLinkPage(w, http.StatusGone, linkPage{Title: "This link expired", Status: "refused",
			Lines: []string{fmt.Sprintf("It stopped working at %s. Nothing changed; open the session to answer.", time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))}})
		return c, wire.Snapshot{}, wire.Interrupt{}, false
	case err != nil:
		writeLinkPage(w, http.StatusBadRequest, linkPage{Title: "This link is not valid", Status: "refused", Lines: []string{err.Error() + ". Nothing changed."}})
		return c, wire.Snapshot{}, wire.Interrupt{}, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	holder := c.SessionID
	if c.Holder != "" {
		holder = c.Holder
	}
	snap, err := s.sessions.GetAgentSnapshot(ctx, holder)
	if err != nil {
		writeLinkPage(w, http.StatusServiceUnavailable, linkPage{Title: "The session cannot be read now", Status: "refused",
			Lines: []string{"Nothing changed. Try the link again in a moment."}})
		return c, wire.Snapshot{}, wire.Interrupt{}, false
	}
	s.fillApprovalTexts(&snap)
	in, ok := pendingInterrupt(snap, c.InterruptID, "")
	if !ok {
		action := client.Approve
		switch c.Action {
		case approvallink.Reject, approvallink.Decline:
			action = client.Reject
		case approvallink.Answer:
			action = client.Answer
		}
		writeLinkPage(w, http.StatusConflict, linkPage{Title: "This link was used, or its request is closed", Status: "refused",
			Lines: []string{"Nothing changed: " + client.WhyNotResolved(snap, c.InterruptID, action, c.Choice, time.Now()) + "."}})
		return c, snap, in, false
	}
	question := in.Kind == wire.InterruptKindQuestion
	if question != (c.Action == approvallink.Answer || c.Action == approvallink.Decline) ||
		!question && in.Digest != c.Digest || c.Action == approvallink.Answer && !slices.Contains(in.Choices, c.Choice) {
		writeLinkPage(w, http.StatusConflict, linkPage{Title: "The request changed since this link was sent", Status: "refused",
			Lines: []string{"The call waiting now is not the one this link was made for (its tool or arguments differ). Nothing changed; open the session to see it."}})
		return c, snap, in, false
	}
	return c, snap, in, true
}

// linkDetails fills what the page shows of the interrupt.
func linkDetails(p *linkPage, snap wire.Snapshot, in wire.Interrupt) {
	p.Agent = snap.Agent
	if in.Kind == wire.InterruptKindQuestion {
		p.Question = in.Question
	} else {
		p.Tool, p.Approval = in.ToolName, in.ApprovalText
		p.Arguments = prettyArguments(in.Arguments)
	}
	if in.Deadline != "" {
		p.Deadline = in.Deadline
	}
}

// showLink answers GET /v1/links/{token}: what the link does, and a
// button to do it. It changes nothing.
func (s *Server) showLink(w http.ResponseWriter, r *http.Request) {
	c, snap, in, ok := s.openLink(w, r)
	if !ok {
		return
	}
	p := linkPage{Status: "ok"}
	p.Title, p.Button, p.ButtonClass = linkAction(c, in.ToolName)
	linkDetails(&p, snap, in)
	writeLinkPage(w, http.StatusOK, p)
}

// useLink answers POST /v1/links/{token}: it does what the link says,
// once. The session checks the approval's digest again, so a call that
// changed between the page and the press is not approved.
func (s *Server) useLink(w http.ResponseWriter, r *http.Request) {
	c, snap, in, ok := s.openLink(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	via := "link"
	if c.Channel != "" {
		via += ":" + c.Channel
	}
	var done bool
	var err error
	holder := ""
	if c.Holder != "" {
		holder = c.Holder
	}
	switch c.Action {
	case approvallink.Approve, approvallink.Reject:
		req := wire.ResolveInterruptRequest{InterruptID: c.InterruptID, Approved: c.Action == approvallink.Approve, Digest: c.Digest,
			SessionID: holder, ResolvedVia: via, ResolvedBy: c.Recipient}
		if !req.Approved {
			req.RejectionMessage = "Rejected through a link by " + nonEmpty(c.Recipient, "its recipient") + "."
		}
		done, err = s.sessions.ResolveInterrupt(ctx, c.SessionID, req)
	case approvallink.Decline:
		done, err = s.sessions.ResolveInterrupt(ctx, c.SessionID, wire.ResolveInterruptRequest{InterruptID: c.InterruptID, SessionID: holder, ResolvedVia: via, ResolvedBy: c.Recipient})
	case approvallink.Answer:
		done, err = s.sessions.AnswerQuestion(ctx, c.SessionID, wire.AnswerQuestionRequest{InterruptID: c.InterruptID, Answer: c.Choice, SessionID: holder, ResolvedVia: via, ResolvedBy: c.Recipient})
	}
	p := linkPage{}
	linkDetails(&p, snap, in)
	switch {
	case err != nil && isDigestMismatch(err):
		p.Title, p.Status = "The request changed since this link was sent", "refused"
		p.Lines = []string{"The call waiting now is not the one this link was made for. Nothing changed."}
		writeLinkPage(w, http.StatusConflict, p)
	case err != nil:
		s.log.Warn("an approval link could not be used", "session_id", c.SessionID, "interrupt_id", c.InterruptID, "error", err)
		p.Title, p.Status = "The answer could not be sent", "refused"
		p.Lines = []string{"Nothing changed as far as this page knows. Try the link again in a moment."}
		writeLinkPage(w, http.StatusServiceUnavailable, p)
	case !done:
		p.Title, p.Status = "This link was used, or its request is closed", "refused"
		p.Lines = []string{"Nothing changed: " + s.whyNotResolved(ctx, nonEmpty(holder, c.SessionID), c.InterruptID, client.Approve, c.Choice) + "."}
		writeLinkPage(w, http.StatusConflict, p)
	default:
		p.Status = "done"
		switch c.Action {
		case approvallink.Approve:
			p.Title, p.Lines = "Approved", []string{in.ToolName + " runs now. You can close this page."}
		case approvallink.Reject:
			p.Title, p.Lines = "Rejected", []string{in.ToolName + " will not run. You can close this page."}
		case approvallink.Answer:
			p.Title, p.Lines = "Answered", []string{"The agent goes on with “" + c.Choice + "”. You can close this page."}
		default:
			p.Title, p.Lines = "Declined", []string{"The agent goes on without an answer. You can close this page."}
		}
		writeLinkPage(w, http.StatusOK, p)
	}
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// isDigestMismatch reports the session's refusal of a digest that is not
// the call's.
func isDigestMismatch(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == wire.ApprovalDigestErrorType
}

// prettyArguments indents a call's JSON arguments for people; other text
// is shown as it is.
func prettyArguments(args string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(args), "", "  ") != nil {
		return args
	}
	return b.String()
}

// LinkURL is the URL of a link token under base.
func LinkURL(base, token string) string {
	return strings.TrimSuffix(base, "/") + "/v1/links/" + url.PathEscape(token)
}
