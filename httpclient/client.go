package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Client calls a worker's HTTP API (docs/http-api.md). It is safe
// for concurrent use, and sets no timeouts of its own: bound each call
// with its ctx.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// New returns a client of the API at baseURL, such as
// "http://127.0.0.1:8080" (http:// is assumed without a scheme), that
// authenticates with token. A nil hc means a new http.Client.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("HTTP API address %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("HTTP API address %q: want http://host:port or https://host:port", baseURL)
	}
	if token == "" {
		return nil, errors.New("no API token")
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: u, token: token, hc: hc}, nil
}

// BaseURL is the API's address.
func (c *Client) BaseURL() string { return c.base.String() }

// APIError is an error answer of the API: {"error": {"code", "message"}}.
type APIError struct {
	StatusCode int
	// Code is unauthorized, forbidden, not_found, bad_request, conflict,
	// digest_mismatch, not_extended, payload_too_large, unavailable or
	// internal.
	Code    string
	Message string
}

func (e *APIError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if e.Code != "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Code, e.StatusCode)
	}
	return fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// Temporary reports an error worth retrying: 429, 502, 503, 504.
func (e *APIError) Temporary() bool {
	switch e.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// ErrInvalidResumeToken reports a 400 answer of the events route: the token
// is no longer valid (trimmed, from before a worker restart, or of another
// session). Reload the snapshot and open the stream from its token.
var ErrInvalidResumeToken = errors.New("invalid resume token")

// StartRequest is the body of POST /v1/sessions.
type StartRequest struct {
	Agent          string `json:"agent"`
	SessionID      string `json:"session_id,omitempty"`
	InitialMessage string `json:"initial_message,omitempty"`
	// IdempotencyKey makes a retried start return the same session.
	IdempotencyKey string `json:"-"`
}

// StartSession starts a session and returns its ID.
func (c *Client) StartSession(ctx context.Context, req StartRequest) (string, error) {
	var out struct {
		SessionID string `json:"session_id"`
	}
	h := http.Header{}
	if req.IdempotencyKey != "" {
		h.Set("Idempotency-Key", req.IdempotencyKey)
	}
	if err := c.call(ctx, http.MethodPost, "/v1/sessions", h, req, &out); err != nil {
		return "", err
	}
	if out.SessionID == "" {
		return "", errors.New("the API started a session but returned no session_id")
	}
	return out.SessionID, nil
}

// SendMessage queues a user message. It returns false for blank text.
func (c *Client) SendMessage(ctx context.Context, sessionID, text string) (bool, error) {
	return c.sendMessage(ctx, sessionID, sendMessageBody{Text: text})
}

// SendPlanningMessage queues a user message in plan mode: its turn may only
// write a plan (write_todos), which ExecutePlan then runs. It returns false
// for blank text, and when the agent's plan mode is off.
func (c *Client) SendPlanningMessage(ctx context.Context, sessionID, text string) (bool, error) {
	return c.sendMessage(ctx, sessionID, sendMessageBody{Text: text, PlanMode: true})
}

// SendMessageMode sends a user message with a send mode: SendModeQueue
// queues it (as SendMessage does), SendModeSteer steers the running turn
// with it, SendModeInterrupt cancels the running turn and starts the next
// one with it, SendModeRejectIfBusy takes it only while nothing runs or
// waits (else false).
func (c *Client) SendMessageMode(ctx context.Context, sessionID, text, mode string) (bool, error) {
	return c.sendMessage(ctx, sessionID, sendMessageBody{Text: text, Mode: mode})
}

type sendMessageBody struct {
	Text     string `json:"text"`
	PlanMode bool   `json:"plan_mode,omitempty"`
	Mode     string `json:"mode,omitempty"`
}

// Steer steers the running turn with text (POST .../steer): the turn ends
// at its next safe step, its approvals and questions are cancelled, and
// the next turn starts with text. While no turn runs, text is queued and
// starts a turn. It returns false for blank text.
func (c *Client) Steer(ctx context.Context, sessionID, text string) (bool, error) {
	var out struct {
		Accepted bool `json:"accepted"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "steer"), nil, map[string]string{"text": text}, &out)
	return out.Accepted, err
}

// CancelTurn stops the turn turnID now (POST .../cancel): its model call is
// cancelled, its waits are rejected, and no new turn starts from it. It
// returns true once the cancel is recorded (also for a second cancel), and
// false when turnID is not the running turn or the turn does not accept
// turn control.
func (c *Client) CancelTurn(ctx context.Context, sessionID, turnID string) (bool, error) {
	var out struct {
		Accepted bool `json:"accepted"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "cancel"), nil, map[string]string{"turn_id": turnID}, &out)
	return out.Accepted, err
}

// ForkRequest is the body of Fork: the fork point, and optionally the
// fork's ID and a first message.
type ForkRequest struct {
	AtSequence     int64  `json:"at_sequence"`
	SessionID      string `json:"session_id,omitempty"`
	InitialMessage string `json:"initial_message,omitempty"`
	// Rewind closes the original once the fork started.
	Rewind bool `json:"rewind,omitempty"`
}

// Fork starts a new session whose transcript is the session's messages
// 1..req.AtSequence and returns its ID. A fork point between a tool call
// and its result is a 400 invalid_fork_point naming the nearest valid ones.
func (c *Client) Fork(ctx context.Context, sessionID string, req ForkRequest) (string, error) {
	var out struct {
		SessionID string `json:"session_id"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "fork"), nil, req, &out)
	return out.SessionID, err
}

// EditRequest is the body of Edit.
type EditRequest struct {
	Text      string `json:"text"`
	SessionID string `json:"session_id,omitempty"`
	Rewind    bool   `json:"rewind,omitempty"`
}

// Edit is edit and resend: it forks the session before its user message
// at sequence, sends req.Text as the fork's first message, and returns the
// fork's ID.
func (c *Client) Edit(ctx context.Context, sessionID string, sequence int64, req EditRequest) (string, error) {
	var out struct {
		SessionID string `json:"session_id"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "messages", strconv.FormatInt(sequence, 10), "edit"), nil, req, &out)
	return out.SessionID, err
}

// Branches lists the conversation the session belongs to: its root and
// the forks of it that the token may see.
func (c *Client) Branches(ctx context.Context, sessionID string) (wire.Branches, error) {
	var out wire.Branches
	err := c.call(ctx, http.MethodGet, sessionPath(sessionID, "branches"), nil, nil, &out)
	return out, err
}

// ErrSessionClosed reports a session that was closed: it takes no new
// messages (the API answers 409 session_closed).
var ErrSessionClosed = errors.New("the session is closed")

// IsSessionClosed reports an API answer of 409 session_closed.
func IsSessionClosed(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Code == "session_closed"
}

func (c *Client) sendMessage(ctx context.Context, sessionID string, body sendMessageBody) (bool, error) {
	var out struct {
		Accepted bool `json:"accepted"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "messages"), nil, body, &out)
	return out.Accepted, err
}

// ExecutePlan runs the plan revision the user approved (POST
// .../plan/execute). It returns false when the session does not take it:
// see PlanRefusal for why.
func (c *Client) ExecutePlan(ctx context.Context, sessionID string, revision int) (bool, error) {
	var out struct {
		Executed bool `json:"executed"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "plan", "execute"), nil, map[string]int{"revision": revision}, &out)
	return out.Executed, err
}

// UpdateSettings replaces the session settings the next turn starts with
// (PUT .../settings). It returns false before the session started.
func (c *Client) UpdateSettings(ctx context.Context, sessionID string, settings json.RawMessage) (bool, error) {
	var out struct {
		Updated bool `json:"updated"`
	}
	err := c.call(ctx, http.MethodPut, sessionPath(sessionID, "settings"), nil, map[string]json.RawMessage{"session_settings": settings}, &out)
	return out.Updated, err
}

// Resolution answers an approval.
type Resolution struct {
	Approved bool `json:"approved"`
	// RejectionMessage tells the model why, when not approved.
	RejectionMessage string `json:"rejection_message,omitempty"`
	// Digest is the interrupt's digest (snapshot or interrupt_raised), so
	// the session approves only the call the user saw; a mismatch fails
	// with 409 digest_mismatch.
	Digest string `json:"digest,omitempty"`
	// SessionID names the sub-agent that holds the interrupt, as the
	// parent's pending_interrupts[].session_id gives it.
	SessionID string `json:"session_id,omitempty"`
}

// Extension is extend_interrupt's answer.
type Extension struct {
	// Extended is false when the interrupt is not pending.
	Extended bool `json:"extended"`
	// Deadline is the new deadline (RFC 3339 UTC).
	Deadline string `json:"deadline,omitempty"`
}

// ExtendInterrupt moves a pending interrupt's deadline seconds later,
// within the agent's max_interrupt_deadline (past it: 409 not_extended).
func (c *Client) ExtendInterrupt(ctx context.Context, sessionID, interruptID string, seconds int64) (Extension, error) {
	var out Extension
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "interrupts", interruptID, "extend"), nil, map[string]int64{"extend_by_seconds": seconds}, &out)
	return out, err
}

// ResolveInterrupt approves or rejects a pending interrupt. It returns false
// when the interrupt is not pending (resolved already, or past its
// deadline); ResolveInterruptWithReason also says which.
func (c *Client) ResolveInterrupt(ctx context.Context, sessionID, interruptID string, r Resolution) (bool, error) {
	ok, _, err := c.ResolveInterruptWithReason(ctx, sessionID, interruptID, r)
	return ok, err
}

// ResolveInterruptWithReason is ResolveInterrupt with the server's reason
// when nothing changed: already resolved (and how), past its deadline, no
// such interrupt, or a request that does not fit it.
func (c *Client) ResolveInterruptWithReason(ctx context.Context, sessionID, interruptID string, r Resolution) (bool, string, error) {
	var out struct {
		Resolved bool   `json:"resolved"`
		Reason   string `json:"reason"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "interrupts", interruptID), nil, r, &out)
	return out.Resolved, out.Reason, err
}

// AnswerQuestion answers a pending question (an ask_user call), or
// declines it. It returns false when the answer is not taken: the
// question is not pending any more, or the answer is blank or not one of
// the choices when free text is not allowed.
func (c *Client) AnswerQuestion(ctx context.Context, sessionID, interruptID, answer string, decline bool) (bool, error) {
	ok, _, err := c.AnswerQuestionWithReason(ctx, sessionID, interruptID, answer, decline)
	return ok, err
}

// AnswerQuestionWithReason is AnswerQuestion with the server's reason when
// the answer was not taken.
func (c *Client) AnswerQuestionWithReason(ctx context.Context, sessionID, interruptID, answer string, decline bool) (bool, string, error) {
	var out struct {
		Answered bool   `json:"answered"`
		Reason   string `json:"reason"`
	}
	body := map[string]any{"answer": answer}
	if decline {
		body = map[string]any{"decline": true}
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "questions", interruptID), nil, body, &out)
	return out.Answered, out.Reason, err
}

// Snapshot returns the session's snapshot and the resume token to open its
// event stream from; while a turn is active, the token replays that turn.
func (c *Client) Snapshot(ctx context.Context, sessionID string) (wire.Snapshot, string, error) {
	v, err := c.SnapshotView(ctx, sessionID)
	return v.Snapshot, v.ResumeToken, err
}

// SnapshotView is what GET /v1/sessions/{id}/snapshot answers.
type SnapshotView struct {
	Snapshot    wire.Snapshot `json:"snapshot"`
	ResumeToken string        `json:"resume_token"`
	// Ended says how an ended session ended ("was closed", "was
	// terminated", ...); it is empty while the session runs. An ended
	// session is read-only: its snapshot is its state when it ended.
	Ended string `json:"ended,omitempty"`
}

// SnapshotView returns the session's snapshot, its resume token and
// whether it ended.
func (c *Client) SnapshotView(ctx context.Context, sessionID string) (SnapshotView, error) {
	var out SnapshotView
	err := c.call(ctx, http.MethodGet, sessionPath(sessionID, "snapshot"), nil, nil, &out)
	return out, err
}

// ListSessionsOptions choose the sessions ListSessions lists (GET
// /v1/sessions): running ones that wait for any of WaitingFor
// (wire.WaitingForApproval, ...), of one agent, closed ones too with
// Status wire.ListAll; PageToken continues a list.
type ListSessionsOptions struct {
	// IncludePending fills each waiting session's Pending: what it asks of
	// a person (a snapshot per session, so keep such pages small).
	IncludePending bool
	WaitingFor     []string
	Agent          string
	Status         string
	PageSize       int
	PageToken      string
}

// ListSessions lists the sessions inside the token's scope, newest first,
// from the engine's visibility store (which trails a session by a moment).
func (c *Client) ListSessions(ctx context.Context, o ListSessionsOptions) (wire.SessionsPage, error) {
	q := url.Values{}
	if len(o.WaitingFor) > 0 {
		q.Set("waiting_for", strings.Join(o.WaitingFor, ","))
	}
	for k, v := range map[string]string{"agent": o.Agent, "status": o.Status, "page_token": o.PageToken} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(o.PageSize))
	}
	if o.IncludePending {
		q.Set("include", "pending")
	}
	path := "/v1/sessions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.SessionsPage
	err := c.call(ctx, http.MethodGet, path, nil, nil, &out)
	return out, err
}

// InboxOptions choose what Inbox lists.
type InboxOptions struct {
	// Kinds are approval and question (empty: both).
	Kinds     []string
	Agent     string
	PageSize  int
	PageToken string
}

// Inbox lists every approval and question the token's sessions wait on
// (GET /v1/inbox).
func (c *Client) Inbox(ctx context.Context, o InboxOptions) (wire.InboxPage, error) {
	q := url.Values{}
	if len(o.Kinds) > 0 {
		q.Set("kind", strings.Join(o.Kinds, ","))
	}
	if o.Agent != "" {
		q.Set("agent", o.Agent)
	}
	if o.PageToken != "" {
		q.Set("page_token", o.PageToken)
	}
	if o.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(o.PageSize))
	}
	path := "/v1/inbox"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.InboxPage
	err := c.call(ctx, http.MethodGet, path, nil, nil, &out)
	return out, err
}

// Messages returns a page of the session's stored messages, oldest first:
// the newest page for beforeSequence 0, else the page before it (pass a
// page's NextBeforeSequence). limit is 1 to 200; 0 means 50.
func (c *Client) Messages(ctx context.Context, sessionID string, beforeSequence int64, limit int) (wire.MessagesPage, error) {
	q := url.Values{}
	if beforeSequence > 0 {
		q.Set("before_sequence", strconv.FormatInt(beforeSequence, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := sessionPath(sessionID, "messages")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.MessagesPage
	err := c.call(ctx, http.MethodGet, path, nil, nil, &out)
	return out, err
}

// DeleteQueued deletes a queued message before its turn starts. It
// returns false when the message is no longer queued.
func (c *Client) DeleteQueued(ctx context.Context, sessionID, messageID string) (bool, error) {
	var out struct {
		Deleted bool `json:"deleted"`
	}
	err := c.call(ctx, http.MethodDelete, sessionPath(sessionID, "queued", messageID), nil, nil, &out)
	return out.Deleted, err
}

// Close closes the session: the running turn and the queued messages
// finish, then the session ends; later messages fail with
// ErrSessionClosed.
func (c *Client) Close(ctx context.Context, sessionID string) (bool, error) {
	var out struct {
		Accepted bool `json:"accepted"`
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "close"), nil, struct{}{}, &out)
	return out.Accepted, err
}

// Terminate ends a running session at once, whatever it runs, with reason
// in its history. It needs a token with operator: true (403 otherwise).
func (c *Client) Terminate(ctx context.Context, sessionID, reason string) (bool, error) {
	var out struct {
		Terminated bool `json:"terminated"`
	}
	body := map[string]string{}
	if reason != "" {
		body["reason"] = reason
	}
	err := c.call(ctx, http.MethodPost, sessionPath(sessionID, "terminate"), nil, body, &out)
	return out.Terminated, err
}

// Live asks /healthz whether the process runs; nil means it does. It
// needs no token.
func (c *Client) Live(ctx context.Context) error { return c.probe(ctx, "/healthz") }

// Ready asks /readyz whether the process takes work now (its engine
// connection, and its event backend, answer); nil means ready. It needs no
// token.
func (c *Client) Ready(ctx context.Context) error { return c.probe(ctx, "/readyz") }

func (c *Client) probe(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(path), nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return parseError(resp.StatusCode, b)
	}
	return nil
}

func sessionPath(id string, rest ...string) string {
	p := "/v1/sessions/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func (c *Client) url(path string) string { return c.base.String() + path }

func (c *Client) call(ctx context.Context, method, path string, h http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path), body)
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

// do sends req with the token and turns a non-2xx answer into an *APIError.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return nil, parseError(resp.StatusCode, b)
}

func parseError(status int, body []byte) *APIError {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	apiErr := &APIError{StatusCode: status}
	if json.Unmarshal(body, &e) == nil {
		apiErr.Code, apiErr.Message = e.Error.Code, e.Error.Message
	}
	if apiErr.Message == "" && apiErr.Code == "" {
		if first, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n"); first != "" {
			if len(first) > 200 {
				first = first[:200] + "…"
			}
			apiErr.Message = fmt.Sprintf("HTTP %d %s: %s", status, http.StatusText(status), first)
		}
	}
	return apiErr
}

// SetTitle sets the title lists show of a session (PUT
// /v1/sessions/{id}/title).
func (c *Client) SetTitle(ctx context.Context, sessionID, title string) (bool, error) {
	var out struct {
		Updated bool `json:"updated"`
	}
	err := c.call(ctx, http.MethodPut, sessionPath(sessionID, "title"), nil, map[string]string{"title": title}, &out)
	return out.Updated, err
}

// SetArchived archives a session, or takes it back (PUT
// /v1/sessions/{id}/archived).
func (c *Client) SetArchived(ctx context.Context, sessionID string, archived bool) (bool, error) {
	var out struct {
		Updated bool `json:"updated"`
	}
	err := c.call(ctx, http.MethodPut, sessionPath(sessionID, "archived"), nil, map[string]bool{"archived": archived}, &out)
	return out.Updated, err
}
