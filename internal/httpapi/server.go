// Package httpapi serves the REST + Server-Sent Events API that
// applications and browsers use to drive agent sessions, and the web chat
// page. Every route authorizes the caller for the session or agent it names;
// see docs/http-api.md for the wire contract.
package httpapi

import (
	"crypto/rand"

	"github.com/dex-agents/dex-agent-worker/internal/approvaltext"

	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Agent is an agent the API can start sessions of.
type Agent struct {
	Name     string `json:"name"`
	FlowType string `json:"flow_type"`
	// SettingChoices are the session settings with a fixed list of values
	// that the agent's runner reported, such as the models a session may
	// choose.
	SettingChoices []pluginapi.SettingChoice `json:"session_setting_choices,omitempty"`
	// PlanModeEnabled says messages may start planning turns (plan_mode);
	// BuiltInTools are the built-in tools the agent's sessions offer.
	PlanModeEnabled bool     `json:"plan_mode_enabled"`
	BuiltInTools    []string `json:"built_in_tools,omitempty"`
	// ApprovalTexts are the approval_text templates of the agent's tools,
	// by tool name (see internal/approvaltext); a snapshot's pending
	// approvals carry them filled in.
	ApprovalTexts map[string]string `json:"-"`
	// DisplayTexts are the display_text templates of the agent's tools, by
	// tool name: a snapshot's tool calls carry them filled in.
	DisplayTexts map[string]string `json:"-"`
}

// Token is one accepted bearer token and its scope.
type Token struct {
	Name  string
	Value string
	// Agents limits the token to these agent names; empty allows all.
	Agents []string
	// SessionPrefix limits the token to session IDs with this prefix.
	SessionPrefix string
	// Operator allows operator-only routes (terminate).
	Operator bool
}

// Options configure a Server.
type Options struct {
	Temporal  temporalclient.Client
	Namespace string
	TaskQueue string
	Broker    events.Broker
	// Messages is the worker's message store: a message over
	// wire.MaxInlineMessageBytes is stored there before it is sent by
	// reference, and pages before a session's window and cut texts are
	// read from it. Nil: messages are sent inline only (up to
	// wire.MaxInlineMessageBytes) and pages hold the window.
	Messages transcript.Store
	Agents   []Agent
	Tokens   []Token
	// WebUI, when set, serves the chat page at / (without authorization:
	// it holds no data; the page calls the API with the user's token).
	WebUI  http.Handler
	Logger *slog.Logger
	// KeepAlive is the idle time after which an event stream sends a
	// comment (default 15s).
	KeepAlive time.Duration
	// WriteTimeout bounds one write to an event stream, so a stuck client
	// is dropped instead of holding its handler forever (default 30s).
	WriteTimeout time.Duration
	// UpdateTimeout bounds the wait for a session's answer to an update or
	// a query (default DefaultUpdateTimeout).
	UpdateTimeout time.Duration
	// MaxStreamsPerToken bounds the event streams one token holds open at
	// once; the next is refused with 429 (default DefaultMaxStreamsPerToken).
	MaxStreamsPerToken int
	// Links, when set, mints and serves approval links (links.go).
	Links *Links
}

// DefaultMaxStreamsPerToken is the default of Options.MaxStreamsPerToken.
const DefaultMaxStreamsPerToken = 64

func newSessions(opts Options) *client.AgentSessionClient {
	c := client.New(opts.Temporal, opts.Namespace, opts.TaskQueue)
	if opts.Messages != nil {
		c = c.WithMessages(transcript.Reader{Store: opts.Messages})
	}
	return c
}

// MaxMessageBodyBytes bounds the body of POST /v1/sessions and POST
// .../messages: a message of up to wire.MaxMessageBytes (8 MiB), with
// room for JSON escapes. Every other route keeps MaxBodyBytes.
const MaxMessageBodyBytes = 3 * wire.MaxMessageBytes

// MaxBodyBytes bounds request bodies.
const MaxBodyBytes = 1 << 20

// Server is the API's http.Handler.
type Server struct {
	// cookieSessions maps the web page's sign-in cookies to their tokens
	// (see setAuthCookie), oldest first in cookieOrder.
	// titled holds sessions known to have a title (titleFromMessage),
	// under cacheMu.
	titled map[string]struct{}

	cookieMu       sync.Mutex
	cookieSessions map[string]string
	cookieOrder    []string

	opts     Options
	sessions *client.AgentSessionClient
	mux      *http.ServeMux
	routes   []string // the patterns of handle, in order
	log      *slog.Logger
	tokens   []scopedToken
	byFlow   map[string]Agent
	byName   map[string]Agent

	shutdown  chan struct{}
	closeOnce sync.Once

	cacheMu sync.Mutex
	agentOf map[string]string // session ID -> agent name, for sessions seen

	streamsMu sync.Mutex
	streams   []int // open event streams by token index
}

type scopedToken struct {
	Token
	index int
	hash  [32]byte
}

// New returns the API server.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.UpdateTimeout <= 0 {
		opts.UpdateTimeout = DefaultUpdateTimeout
	}
	if opts.MaxStreamsPerToken <= 0 {
		opts.MaxStreamsPerToken = DefaultMaxStreamsPerToken
	}
	s := &Server{
		opts:     opts,
		sessions: newSessions(opts),
		mux:      http.NewServeMux(),
		log:      opts.Logger,
		byFlow:   map[string]Agent{},
		byName:   map[string]Agent{},
		shutdown: make(chan struct{}),
		agentOf:  map[string]string{},
		titled:   map[string]struct{}{},
	}
	for i, t := range opts.Tokens {
		s.tokens = append(s.tokens, scopedToken{Token: t, index: i, hash: sha256.Sum256([]byte(t.Value))})
	}
	s.streams = make([]int, len(s.tokens))
	for _, a := range opts.Agents {
		s.byFlow[a.FlowType] = a
		s.byName[a.Name] = a
	}
	s.handle("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.handle("GET /readyz", s.readyz)
	s.handle("GET /v1/auth/cookie", s.cookieStatus)
	s.handle("POST /v1/auth/cookie", s.authed(s.setAuthCookie))
	s.handle("POST /v1/auth/logout", s.clearAuthCookie)
	s.handle("GET /v1/agents", s.authed(s.listAgents))
	s.handle("POST /v1/sessions", s.authed(s.startSession))
	s.handle("GET /v1/sessions", s.authed(s.listSessions))
	s.handle("GET /v1/sessions/changes", s.authed(s.sessionChanges))
	s.handle("GET /v1/inbox", s.authed(s.inbox))
	s.handle("POST /v1/sessions/{id}/messages", s.session(s.sendMessage))
	s.handle("POST /v1/sessions/{id}/interrupts/{interrupt_id}", s.sessionAs(s.resolveInterrupt))
	s.handle("POST /v1/sessions/{id}/interrupts/{interrupt_id}/extend", s.session(s.extendInterrupt))
	s.handle("PUT /v1/sessions/{id}/settings", s.session(s.updateSettings))
	s.handle("PUT /v1/sessions/{id}/title", s.session(s.setTitle))
	s.handle("PUT /v1/sessions/{id}/archived", s.session(s.setArchived))
	s.handle("POST /v1/sessions/{id}/questions/{interrupt_id}", s.sessionAs(s.answerQuestion))
	s.handle("POST /v1/sessions/{id}/plan/execute", s.session(s.executePlan))
	s.handle("POST /v1/sessions/{id}/steer", s.session(s.steer))
	s.handle("DELETE /v1/sessions/{id}/queued/{message_id}", s.session(s.deleteQueued))
	s.handle("POST /v1/sessions/{id}/cancel", s.session(s.cancelTurn))
	s.handle("POST /v1/sessions/{id}/close", s.session(s.closeSession))
	s.handle("POST /v1/sessions/{id}/terminate", s.sessionAs(s.terminate))
	s.handle("POST /v1/sessions/{id}/fork", s.sessionAs(s.fork))
	s.handle("POST /v1/sessions/{id}/messages/{sequence}/edit", s.sessionAs(s.edit))
	s.handle("GET /v1/sessions/{id}/branches", s.sessionAs(s.branches))
	s.handle("GET /v1/sessions/{id}/snapshot", s.session(s.snapshot))
	s.handle("GET /v1/sessions/{id}/messages", s.session(s.listMessages))
	s.handle("GET /v1/sessions/{id}/events", s.sessionAs(s.events))
	s.handle("POST /v1/ui/sessions/{id}/chat", s.sessionAs(s.uiChat))
	s.handle("GET /v1/ui/sessions/{id}/stream", s.sessionAs(s.uiStream))
	s.handle("POST /v1/sessions/{id}/interrupts/{interrupt_id}/links", s.sessionAs(s.mintLinks))
	// The link is the credential of these two: no bearer token.
	s.handle("GET /v1/links/{token}", s.showLink)
	s.handle("POST /v1/links/{token}", s.useLink)
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	if opts.WebUI != nil {
		s.mux.Handle("/", opts.WebUI)
	}
	return s
}

// handle registers the route pattern ("METHOD /path") and keeps it in
// routes, the list docs/http-api.md is checked against.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, h)
	s.routes = append(s.routes, pattern)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// Close ends every open event stream; call it before http.Server.Shutdown.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.shutdown) }) }

// apiError is an error with its HTTP status and code.
type apiError struct {
	status int
	code   string
	msg    string
	// mayStillApply, when set, says whether the update the request sent
	// can still be applied (errors of the update routes only).
	mayStillApply *bool
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Code          string `json:"code"`
	Message       string `json:"message"`
	MayStillApply *bool  `json:"may_still_apply,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]errorBody{"error": {Code: code, Message: msg}})
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		if ae.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, ae.status, map[string]errorBody{"error": {Code: ae.code, Message: ae.msg, MayStillApply: ae.mayStillApply}})
		return
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		writeError(w, http.StatusNotFound, "not_found", "no such session")
		return
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		// An update validator's rejection: the input was refused.
		writeError(w, http.StatusBadRequest, "bad_request", app.Message())
		return
	}
	var (
		deadline *serviceerror.DeadlineExceeded
		down     *serviceerror.Unavailable
	)
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &deadline) {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the session did not answer in time; is a worker running?")
		return
	}
	if errors.As(err, &down) {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "Temporal is unavailable")
		return
	}
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error")
}

// authenticate finds the caller's token: the Authorization header's, or
// on a loopback address the web page's sign-in cookie (see
// setAuthCookie), which counts only with the page's own header.
func (s *Server) authenticate(r *http.Request) (*scopedToken, error) {
	h := r.Header.Get("Authorization")
	value, ok := strings.CutPrefix(h, "Bearer ")
	if h == "" {
		value, ok = s.cookieToken(r)
	}
	if !ok || value == "" {
		return nil, errorf(http.StatusUnauthorized, "unauthorized", "missing bearer token (Authorization: Bearer <token>)")
	}
	sum := sha256.Sum256([]byte(value))
	var found *scopedToken
	for i := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], s.tokens[i].hash[:]) == 1 {
			found = &s.tokens[i]
		}
	}
	if found == nil {
		return nil, errorf(http.StatusUnauthorized, "unauthorized", "invalid bearer token")
	}
	return found, nil
}

// The web page's sign-in cookie: on a loopback address, the page trades
// its token for a random session ID in an HttpOnly, SameSite=Strict
// cookie (named for the server's port: a browser sends cookies to every
// port of a host), which the server maps back to the token in memory; a
// restart signs the page out. The cookie counts only with the page's own
// header, WebClientHeader: a cross-site request can neither send the
// cookie nor set a custom header without the server's CORS consent, which
// it never gives.
const (
	authCookiePrefix = "dex_session_"
	WebClientHeader  = "X-Dex-Client"
	// maxCookieSessions bounds the signed-in browser sessions kept; the
	// oldest is dropped past it.
	maxCookieSessions = 1000
)

// authCookieName is the sign-in cookie's name for the request's port.
func authCookieName(host string) string {
	_, port, err := net.SplitHostPort(host)
	if err != nil || port == "" {
		port = "80"
	}
	return authCookiePrefix + port
}

// cookieToken is the token of the request's sign-in cookie, for a request
// on a loopback address that carries the page's header.
func (s *Server) cookieToken(r *http.Request) (string, bool) {
	if r.Header.Get(WebClientHeader) != "web" || !loopbackHost(r.Host) {
		return "", false
	}
	c, err := r.Cookie(authCookieName(r.Host))
	if err != nil || c.Value == "" {
		return "", false
	}
	s.cookieMu.Lock()
	defer s.cookieMu.Unlock()
	token, ok := s.cookieSessions[c.Value]
	return token, ok
}

// loopbackHost reports a Host header that names this machine's loopback
// address (127.0.0.1, ::1 or localhost), with or without a port.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// setAuthCookie signs the web page in for the browser's session: on a
// loopback address, with the page's header and a valid token, it sets the
// sign-in cookie, so every tab of the browser is signed in until it quits,
// and no script can read the token. Elsewhere it answers 400: a page
// served to other machines keeps the token in its tab.
func (s *Server) setAuthCookie(w http.ResponseWriter, r *http.Request, _ *scopedToken) {
	if r.Header.Get(WebClientHeader) != "web" {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "send the %s: web header", WebClientHeader))
		return
	}
	if !loopbackHost(r.Host) {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "a sign-in cookie is only given on a loopback address (127.0.0.1, ::1, localhost)"))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "sign in with the Authorization header"))
		return
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		s.fail(w, r, err)
		return
	}
	id := hex.EncodeToString(b)
	s.cookieMu.Lock()
	if s.cookieSessions == nil {
		s.cookieSessions = map[string]string{}
	}
	if len(s.cookieOrder) >= maxCookieSessions {
		delete(s.cookieSessions, s.cookieOrder[0])
		s.cookieOrder = s.cookieOrder[1:]
	}
	s.cookieSessions[id] = token
	s.cookieOrder = append(s.cookieOrder, id)
	s.cookieMu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: authCookieName(r.Host), Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// cookieStatus answers whether the request's sign-in cookie signs it in:
// 200 {"signed_in": bool}, so the page asks without a 401.
func (s *Server) cookieStatus(w http.ResponseWriter, r *http.Request) {
	_, ok := s.cookieToken(r)
	if ok {
		_, err := s.authenticate(r)
		ok = err == nil
	}
	writeJSON(w, http.StatusOK, map[string]bool{"signed_in": ok})
}

// clearAuthCookie signs the web page out: the session ID is forgotten and
// the cookie removed.
func (s *Server) clearAuthCookie(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(WebClientHeader) != "web" {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "send the %s: web header", WebClientHeader))
		return
	}
	if c, err := r.Cookie(authCookieName(r.Host)); err == nil {
		s.cookieMu.Lock()
		delete(s.cookieSessions, c.Value)
		s.cookieOrder = slices.DeleteFunc(s.cookieOrder, func(x string) bool { return x == c.Value })
		s.cookieMu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: authCookieName(r.Host), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// sessionSeparators may follow a token's session prefix in a session ID.
const sessionSeparators = "-_:."

// InSessionScope reports whether a session ID is inside a token's session
// prefix. An empty prefix reaches every session. Otherwise the ID must equal
// the prefix or continue it after a separator ("-", "_", ":" or "."), so
// prefix "u1" reaches "u1", "u1-abc" and "u1.x" but not "u10-abc"; a prefix
// that already ends in a separator ("acme-") reaches every ID that starts
// with it.
func InSessionScope(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	switch {
	case !ok:
		return false
	case prefix == "" || rest == "":
		return true
	case strings.ContainsRune(sessionSeparators, rune(prefix[len(prefix)-1])):
		return true
	}
	return strings.ContainsRune(sessionSeparators, rune(rest[0]))
}

// sessionIDIn returns a session ID inside prefix that ends with name:
// prefix + "-" + name, without the "-" when the prefix is empty or already
// ends in a separator.
func sessionIDIn(prefix, name string) string {
	if prefix == "" || strings.ContainsRune(sessionSeparators, rune(prefix[len(prefix)-1])) {
		return prefix + name
	}
	return prefix + "-" + name
}

func (t *scopedToken) allowsSession(id string) bool { return InSessionScope(t.SessionPrefix, id) }

// scopeRule describes the session IDs a token may use, for error messages.
func (t *scopedToken) scopeRule() string {
	p := t.SessionPrefix
	if strings.ContainsRune(sessionSeparators, rune(p[len(p)-1])) {
		return fmt.Sprintf("start with %q", p)
	}
	return fmt.Sprintf("be %q or start with %q followed by one of - _ : .", p, p)
}

func (t *scopedToken) allowsAgent(name string) bool {
	if len(t.Agents) == 0 {
		return true
	}
	for _, a := range t.Agents {
		if a == name {
			return true
		}
	}
	return false
}

func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *scopedToken)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, err := s.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dex-agent-worker"`)
			s.fail(w, r, err)
			return
		}
		h(w, r, tok)
	}
}

// session authorizes the caller for the session the path names: 401
// without a valid token, 403 outside the token's prefix or agents, 404 for
// a session that does not exist.
func (s *Server) session(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return s.sessionAs(func(w http.ResponseWriter, r *http.Request, id string, _ *scopedToken) { h(w, r, id) })
}

// sessionAs is session for handlers that also need the caller's token.
func (s *Server) sessionAs(h func(http.ResponseWriter, *http.Request, string, *scopedToken)) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, tok *scopedToken) {
		id := r.PathValue("id")
		if err := checkSessionID(id); err != nil {
			s.fail(w, r, err)
			return
		}
		if !tok.allowsSession(id) {
			s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "this token may not access session %s", id))
			return
		}
		agent, err := s.sessionAgent(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !tok.allowsAgent(agent) {
			s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "this token may not access sessions of agent %s", agent))
			return
		}
		h(w, r, id, tok)
	})
}

func checkSessionID(id string) error {
	if id == "" || len(id) > 256 {
		return errorf(http.StatusBadRequest, "bad_request", "session ID must be 1 to 256 characters")
	}
	for _, c := range id {
		if c < 0x21 || c == 0x7f || c == '/' {
			return errorf(http.StatusBadRequest, "bad_request", "session ID has a space, control character or '/'")
		}
	}
	return nil
}

// fillApprovalTexts sets each pending approval's ApprovalText from its
// tool's approval_text, read from the config in force: it changes what
// people see, never what runs.
func (s *Server) fillApprovalTexts(snap *wire.Snapshot) {
	a, ok := s.byName[snap.Agent]
	if !ok {
		return
	}
	for i, c := range snap.ToolCalls {
		if src, ok := a.DisplayTexts[c.ToolName]; ok {
			if t, err := approvaltext.Parse(src); err == nil {
				if text, ok := t.Render(c.Arguments); ok {
					snap.ToolCalls[i].DisplayText = text
				}
			}
		}
	}
	for i, in := range snap.PendingInterrupts {
		if in.Kind != wire.InterruptKindApproval {
			continue
		}
		a := a
		if in.Agent != "" && in.SessionID != snap.SessionID {
			// A sub-agent's approval: its agent's texts.
			if a, ok = s.byName[in.Agent]; !ok {
				continue
			}
		}
		src, ok := a.ApprovalTexts[in.ToolName]
		if !ok {
			continue
		}
		t, err := approvaltext.Parse(src) // validated with the config; cheap
		if err != nil {
			continue
		}
		if text, ok := t.Render(in.Arguments); ok {
			snap.PendingInterrupts[i].ApprovalText = text
		}
	}
}

// endedSession says how session id ended ("was closed", "was
// terminated", ...) while the engine still keeps the closed workflow (its
// namespace's retention), or "" for a session that is running or unknown.
func (s *Server) endedSession(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := s.opts.Temporal.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: s.opts.Namespace,
		Execution: commonExecution(id),
	})
	if err != nil {
		return ""
	}
	if _, ok := s.byFlow[resp.GetWorkflowExecutionInfo().GetType().GetName()]; !ok {
		return ""
	}
	return client.EndedHow(resp.GetWorkflowExecutionInfo().GetStatus())
}

// sessionAgent returns the agent of a session, from a cache or the engine.
func (s *Server) sessionAgent(ctx context.Context, id string) (string, error) {
	s.cacheMu.Lock()
	agent, ok := s.agentOf[id]
	s.cacheMu.Unlock()
	if ok {
		return agent, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := s.opts.Temporal.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: s.opts.Namespace,
		Execution: commonExecution(id),
	})
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return "", errorf(http.StatusNotFound, "not_found", "no session %s", id)
		}
		return "", err
	}
	a, ok := s.byFlow[resp.GetWorkflowExecutionInfo().GetType().GetName()]
	if !ok {
		return "", errorf(http.StatusNotFound, "not_found", "no session %s", id)
	}
	s.cacheMu.Lock()
	if len(s.agentOf) > 100_000 {
		s.agentOf = map[string]string{}
	}
	s.agentOf[id] = a.Name
	s.cacheMu.Unlock()
	return a.Name, nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if _, err := s.opts.Temporal.CheckHealth(ctx, &temporalclient.CheckHealthRequest{}); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "Temporal is not reachable")
		return
	}
	// A shared event store (Redis) must answer too: without it the
	// snapshot and event routes answer 503.
	if p, ok := s.opts.Broker.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			s.log.Warn("not ready: the event store is unreachable", "error", err)
			writeError(w, http.StatusServiceUnavailable, "unavailable", "the live event store is not reachable")
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, tok *scopedToken) {
	out := []Agent{}
	for _, a := range s.opts.Agents {
		if tok.allowsAgent(a.Name) {
			out = append(out, a)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// startableAgents says which agents tok may start (and list), for an
// error: never the names of agents outside its scope.
func (s *Server) startableAgents(tok *scopedToken) string {
	var names []string
	for _, a := range s.opts.Agents {
		if tok.allowsAgent(a.Name) {
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 {
		return "this token may start no agent"
	}
	slices.Sort(names)
	return "this token may start: " + strings.Join(names, ", ")
}

// StartSessionRequest is the body of POST /v1/sessions.
type StartSessionRequest struct {
	Agent          string `json:"agent"`
	SessionID      string `json:"session_id,omitempty"`
	InitialMessage string `json:"initial_message,omitempty"`
	// SessionSettings are the session's first settings: one JSON object.
	SessionSettings json.RawMessage `json:"session_settings,omitempty"`
	// ActiveStepSearchMode is "active_step_types" (the default) or
	// "disabled".
	ActiveStepSearchMode string `json:"active_step_search_mode,omitempty"`
}

// MaxIdempotencyKeyLength bounds the Idempotency-Key header.
const MaxIdempotencyKeyLength = 200

// idempotencyName derives the name of a session from an Idempotency-Key:
// the same key, token scope (session prefix) and agent always give the
// same name, so a retried start finds the session the first one started.
func idempotencyName(prefix, agent, key string) string {
	sum := sha256.Sum256([]byte("dex-agent-worker idempotency-key v1\x00" + prefix + "\x00" + agent + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

func checkIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKeyLength {
		return errorf(http.StatusBadRequest, "bad_request", "Idempotency-Key is longer than %d characters", MaxIdempotencyKeyLength)
	}
	for _, c := range key {
		if c < 0x20 || c > 0x7e {
			return errorf(http.StatusBadRequest, "bad_request", "Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// startSession starts a session: 201 with its ID, or 200 with the ID of
// the session an earlier start with the same Idempotency-Key created.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, tok *scopedToken) {
	var req StartSessionRequest
	if err := decodeBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.checkMessageSize("initial_message", len(req.InitialMessage)); err != nil {
		s.fail(w, r, err)
		return
	}
	a, ok := s.byName[req.Agent]
	if !ok {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "unknown agent %q (%s)", req.Agent, s.startableAgents(tok)))
		return
	}
	if !tok.allowsAgent(a.Name) {
		s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "this token may not start sessions of agent %s (%s)", a.Name, s.startableAgents(tok)))
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if err := checkIdempotencyKey(key); err != nil {
		s.fail(w, r, err)
		return
	}
	id, derived := req.SessionID, false
	switch {
	case id != "":
	case key != "":
		// A retry after a lost response must name the same session, so the
		// ID comes from the key, not from a random UUID.
		id, derived = sessionIDIn(tok.SessionPrefix, "session-"+idempotencyName(tok.SessionPrefix, a.Name, key)), true
	default:
		id = sessionIDIn(tok.SessionPrefix, "session-"+uuid.NewString())
	}
	if err := checkSessionID(id); err != nil {
		s.fail(w, r, err)
		return
	}
	if !tok.allowsSession(id) {
		s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "session IDs of this token must %s", tok.scopeRule()))
		return
	}
	if _, err := wire.CheckSessionSettings(req.SessionSettings, 0); err != nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "session_settings: %s", strings.TrimPrefix(err.Error(), wire.ErrInvalidSessionSettings.Error()+": ")))
		return
	}
	if err := wire.CheckActiveStepSearchMode(req.ActiveStepSearchMode); err != nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "%s", err.Error()))
		return
	}
	start := client.StartSessionOptions{FlowType: a.FlowType, SessionID: id, InitialMessage: req.InitialMessage, SessionSettings: req.SessionSettings, APIToken: tok.Name,
		ActiveStepSearchMode: req.ActiveStepSearchMode}
	got, created, err := "", true, error(nil)
	if derived {
		// The ID came from this key, scope and agent, so a session of that
		// ID is the one an earlier start with the key created: find it
		// (running, or ended) instead of failing.
		got, created, err = s.sessions.EnsureSession(r.Context(), start)
		if errors.Is(err, client.ErrSessionExists) {
			got, created, err = id, false, nil
		}
		if err == nil && !created {
			agent, aerr := s.sessionAgent(r.Context(), id)
			switch {
			case aerr != nil:
				err = aerr
			case agent != a.Name:
				err = errorf(http.StatusConflict, "conflict", "session %s already exists for another agent", id)
			}
		}
	} else {
		if key != "" {
			// The engine treats a start of a running session with the same
			// request ID as a retry and answers it with success.
			start.RequestID = idempotencyName(tok.SessionPrefix, a.Name, key)
		}
		got, err = s.sessions.StartSession(r.Context(), start)
	}
	if errors.Is(err, client.ErrSessionExists) {
		s.fail(w, r, errorf(http.StatusConflict, "conflict", "session %s already exists", id))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.cacheMu.Lock()
	s.agentOf[got] = a.Name
	s.cacheMu.Unlock()
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]string{"session_id": got})
}

// DefaultUpdateTimeout bounds an update: with no worker running, an update
// waits until its deadline.
const DefaultUpdateTimeout = 30 * time.Second

// updateError sorts the error of an update call (send_user_message,
// resolve_interrupt) and says whether the update may still be applied.
// The engine admits an update before a worker accepts it, and keeps it
// while it waits for one: an update whose answer did not come in time may
// be applied once a worker polls again. Only answers that prove the update
// was refused (a validator's rejection, a session that is not running, an
// engine that refused to admit it) say it will not be.
//
// retry tells the caller how to retry safely.
func updateError(id, retry string, err error) error {
	no, maybe := false, true
	var (
		timeout   *temporalclient.WorkflowUpdateServiceTimeoutOrCanceledError
		deadline  *serviceerror.DeadlineExceeded
		down      *serviceerror.Unavailable
		nf        *serviceerror.NotFound
		app       *temporal.ApplicationError
		exhausted *serviceerror.ResourceExhausted
	)
	switch {
	case errors.As(err, &app) && app.Type() == wire.ApprovalDigestErrorType:
		return &apiError{status: http.StatusConflict, code: "digest_mismatch", msg: app.Message(), mayStillApply: &no}
	case errors.As(err, &app) && app.Type() == wire.InterruptNotExtendedErrorType:
		return &apiError{status: http.StatusConflict, code: "not_extended", msg: app.Message(), mayStillApply: &no}
	case errors.As(err, &app):
		// An update validator's rejection: the input was refused.
		return &apiError{status: http.StatusBadRequest, code: "bad_request", msg: app.Message(), mayStillApply: &no}
	case errors.As(err, &nf):
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("session %s is not running (it ended, or does not exist)", id), mayStillApply: &no}
	case errors.As(err, &exhausted):
		return &apiError{status: http.StatusTooManyRequests, code: "too_many_requests",
			msg: "the engine refused the update (too many in flight for this session, or a rate limit); retry later", mayStillApply: &no}
	case errors.As(err, &timeout), errors.As(err, &deadline), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", mayStillApply: &maybe,
			msg: "the session did not answer in time (is a worker running?); the update may still be applied when a worker polls: " + retry}
	case errors.As(err, &down):
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", mayStillApply: &maybe,
			msg: "Temporal is unavailable; the update may have reached it: " + retry}
	}
	return err
}

// SendMessageRequest is the body of POST /v1/sessions/{id}/messages.
type SendMessageRequest struct {
	Text string `json:"text"`
	// MessageID, when set, names the message: it is the update's ID, so a
	// send retried with the same ID is applied once (see
	// client.SendOptions).
	MessageID string `json:"message_id,omitempty"`
	// PlanMode starts a planning turn (plan mode): the model may only
	// write the plan, which the user then runs (POST .../plan/execute).
	PlanMode bool `json:"plan_mode,omitempty"`
	// Mode is the send mode: queue (default), steer, interrupt or
	// reject_if_busy (client.SendMode*).
	Mode string `json:"mode,omitempty"`
}

// ExecutePlanBody is the body of POST /v1/sessions/{id}/plan/execute.
type ExecutePlanBody struct {
	Revision *int `json:"revision"`
}

// executePlan runs the plan revision the user approved.
func (s *Server) executePlan(w http.ResponseWriter, r *http.Request, id string) {
	var req ExecutePlanBody
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Revision == nil || *req.Revision < 1 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send {"revision": N}, the plan revision the user approved (snapshot.plan.revision)`))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.ExecutePlan(ctx, id, *req.Revision)
	if err != nil {
		s.failControl(w, r, id, "a retry is safe (a plan revision runs once; a repeat answers executed: false)", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"executed": ok})
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, id string) {
	var req SendMessageRequest
	if err := decodeBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.checkMessageSize("the message", len(req.Text)); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.MessageID != "" {
		if err := client.CheckMessageID(req.MessageID); err != nil {
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "message_id: %v", err))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	// A text over wire.MaxInlineMessageBytes goes to the message store
	// first; the update carries its reference and beginning.
	if err := wire.CheckSendMode(req.Mode); err != nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "mode: %v", err))
		return
	}
	ok, err := s.sessions.SendUserMessageWithOptions(ctx, id, req.Text, client.SendOptions{MessageID: req.MessageID, PlanMode: req.PlanMode, Mode: req.Mode})
	if err != nil {
		s.failControl(w, r, id, "retry with the same message_id to be safe", err)
		return
	}
	if ok {
		s.titleFromMessage(ctx, id, req.Text)
	}
	writeJSON(w, http.StatusOK, map[string]bool{"accepted": ok})
}

// failUpdate answers the error of an update call.
func (s *Server) failUpdate(w http.ResponseWriter, r *http.Request, id, retry string, err error) {
	if r.Context().Err() != nil {
		return // the caller is gone
	}
	err = updateError(id, retry, err)
	var ae *apiError
	if errors.As(err, &ae) && ae.code == "not_found" {
		if ended := s.endedSession(r.Context(), id); ended != "" {
			no := false
			err = &apiError{status: http.StatusConflict, code: "session_closed", msg: "session " + id + " " + ended + ": it takes no messages or answers", mayStillApply: &no}
		}
	}
	if !errors.As(err, &ae) {
		// Unknown: the update may have been applied before it failed.
		s.log.Error("update failed", "method", r.Method, "path", r.URL.Path, "error", err)
		maybe := true
		err = &apiError{status: http.StatusInternalServerError, code: "internal", msg: "internal error; the update may have been applied", mayStillApply: &maybe}
	}
	s.fail(w, r, err)
}

// titleFromMessage gives a session started with no message (so with no
// title) the first line of the first message sent to it, as a start with a
// message does. Sessions known to have a title are remembered, so most
// messages cost nothing; a failure only leaves the session untitled.
func (s *Server) titleFromMessage(ctx context.Context, id, text string) {
	title := wire.TitleOf(text)
	if title == "" {
		return
	}
	s.cacheMu.Lock()
	_, known := s.titled[id]
	s.cacheMu.Unlock()
	if known {
		return
	}
	resp, err := s.opts.Temporal.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: s.opts.Namespace,
		Execution: commonExecution(id),
	})
	if err != nil {
		return
	}
	if _, has := resp.GetWorkflowExecutionInfo().GetMemo().GetFields()[wire.MemoTitle]; !has {
		if _, err := s.sessions.SetSessionMetadata(ctx, id, wire.SessionMetadataRequest{Title: &title}); err != nil {
			s.log.Warn("set the title from the first message", "session_id", id, "error", err)
			return
		}
	}
	s.cacheMu.Lock()
	if len(s.titled) > 100_000 {
		s.titled = map[string]struct{}{}
	}
	s.titled[id] = struct{}{}
	s.cacheMu.Unlock()
}

// setTitle answers PUT /v1/sessions/{id}/title {"title": "..."}: the
// title lists show (kept in the session's memo, not its transcript).
func (s *Server) setTitle(w http.ResponseWriter, r *http.Request, id string) {
	var req struct {
		Title *string `json:"title"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Title == nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `"title" is required`))
		return
	}
	s.setMetadata(w, r, id, wire.SessionMetadataRequest{Title: req.Title})
}

// setArchived answers PUT /v1/sessions/{id}/archived {"archived": bool}.
func (s *Server) setArchived(w http.ResponseWriter, r *http.Request, id string) {
	var req struct {
		Archived *bool `json:"archived"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Archived == nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `"archived" is required (true or false)`))
		return
	}
	s.setMetadata(w, r, id, wire.SessionMetadataRequest{Archived: req.Archived})
}

func (s *Server) setMetadata(w http.ResponseWriter, r *http.Request, id string, req wire.SessionMetadataRequest) {
	if err := wire.CheckSessionMetadata(req); err != nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "%s", err.Error()))
		return
	}
	if req.Title != nil && len(*req.Title) > 4096 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "the title is over 4 KiB"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.SetSessionMetadata(ctx, id, req)
	if err != nil {
		s.failUpdate(w, r, id, "a retry is safe (it sets the same values)", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"updated": ok})
}

// SettingsRequest is the body of PUT /v1/sessions/{id}/settings.
type SettingsRequest struct {
	// SessionSettings replace the session's: one JSON object ({} clears).
	SessionSettings json.RawMessage `json:"session_settings"`
}

// updateSettings replaces the settings the session's next turn starts
// with: 200 {"updated": bool}, 400 for settings that are not one object
// or are over 16 KiB.
func (s *Server) updateSettings(w http.ResponseWriter, r *http.Request, id string) {
	var req SettingsRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.SessionSettings) == 0 || string(req.SessionSettings) == "null" {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `"session_settings" must be one JSON object ({} clears them)`))
		return
	}
	if _, err := wire.CheckSessionSettings(req.SessionSettings, 0); err != nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "session_settings: %s", strings.TrimPrefix(err.Error(), wire.ErrInvalidSessionSettings.Error()+": ")))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.UpdateSessionSettings(ctx, id, req.SessionSettings)
	if err != nil {
		s.failUpdate(w, r, id, "a retry is safe (the same settings again change nothing)", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"updated": ok})
}

// ResolveRequest is the body of POST .../interrupts/{interrupt_id}.
type ResolveRequest struct {
	Approved         *bool  `json:"approved"`
	RejectionMessage string `json:"rejection_message,omitempty"`
	// Digest is the interrupt's digest as the snapshot or the
	// interrupt_raised event gave it; a mismatch is 409 digest_mismatch.
	Digest string `json:"digest,omitempty"`
	// SessionID names the sub-agent that holds the interrupt, as
	// pending_interrupts[].session_id gave it (see docs/sub-agents.md).
	SessionID string `json:"session_id,omitempty"`
}

// ExtendRequest is the body of POST .../interrupts/{interrupt_id}/extend.
type ExtendRequest struct {
	ExtendBySeconds int64 `json:"extend_by_seconds"`
	// SessionID is ResolveRequest's.
	SessionID string `json:"session_id,omitempty"`
}

// extendInterrupt moves a pending interrupt's deadline: 200 {"extended":
// bool, "deadline": ...}, 409 not_extended when the agent's limits refuse
// it (no deadline, no max_interrupt_deadline, past the maximum).
func (s *Server) extendInterrupt(w http.ResponseWriter, r *http.Request, id string) {
	var req ExtendRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.ExtendBySeconds <= 0 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `"extend_by_seconds" must be a positive number of seconds`))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	out, err := s.sessions.ExtendInterrupt(ctx, id, wire.ExtendInterruptRequest{InterruptID: r.PathValue("interrupt_id"), ExtendBySeconds: req.ExtendBySeconds, SessionID: req.SessionID})
	if err != nil {
		s.failUpdate(w, r, id, "a retry extends the deadline again: read the deadline from the snapshot first", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// resolvedBy says how and by whom an answer came over HTTP: the web page
// (its header) or the API, and the token's name.
func resolvedBy(r *http.Request, tok *scopedToken) (via, by string) {
	via = "http"
	if r.Header.Get(WebClientHeader) == "web" {
		via = "web"
	}
	if tok != nil {
		by = tok.Name
	}
	return via, by
}

func (s *Server) resolveInterrupt(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	var req ResolveRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Approved == nil {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `"approved" is required`))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	via, by := resolvedBy(r, tok)
	ok, err := s.sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{
		InterruptID: r.PathValue("interrupt_id"), Approved: *req.Approved, RejectionMessage: req.RejectionMessage, Digest: req.Digest,
		SessionID: req.SessionID, ResolvedVia: via, ResolvedBy: by,
	})
	if err != nil {
		s.failUpdate(w, r, id, "a retry is safe (an interrupt resolves once; a repeat answers resolved: false)", err)
		return
	}
	if !ok {
		action := client.Approve
		if !*req.Approved {
			action = client.Reject
		}
		writeJSON(w, http.StatusOK, map[string]any{"resolved": false, "reason": s.whyNotResolved(ctx, holder(id, req.SessionID), r.PathValue("interrupt_id"), action, "")})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"resolved": ok})
}

// holder is the session whose snapshot explains an interrupt's answer: a
// sub-agent of id that the request names (its ID starts with id's), else
// id.
func holder(id, named string) string {
	if named != "" && strings.HasPrefix(named, id+".sub-") {
		return named
	}
	return id
}

// whyNotResolved says why an interrupt took no answer, from the session's
// snapshot read just after (see client.WhyNotResolved).
func (s *Server) whyNotResolved(ctx context.Context, id, interruptID string, action client.InterruptAction, answer string) string {
	snap, err := s.sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		return "it is not pending (the session's snapshot, which would say why, could not be read)"
	}
	return client.WhyNotResolved(snap, interruptID, action, answer, time.Now())
}

// AnswerRequest is the body of POST /v1/sessions/{id}/questions/{interrupt_id}:
// an answer, or a decline.
type AnswerRequest struct {
	Answer  *string `json:"answer"`
	Decline bool    `json:"decline,omitempty"`
	// SessionID is ResolveRequest's.
	SessionID string `json:"session_id,omitempty"`
}

// answerQuestion answers a pending question with answer_question, or
// declines it with resolve_interrupt(approved=false). It answers
// {"answered": false} where the update does (a blank or off-choice
// answer, a question no longer pending).
func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	var req AnswerRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if (req.Answer == nil) == !req.Decline {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send {"answer": "..."} or {"decline": true}`))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	var ok bool
	var err error
	via, by := resolvedBy(r, tok)
	if req.Decline {
		ok, err = s.sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: r.PathValue("interrupt_id"), Approved: false, SessionID: req.SessionID, ResolvedVia: via, ResolvedBy: by})
	} else {
		ok, err = s.sessions.AnswerQuestion(ctx, id, wire.AnswerQuestionRequest{InterruptID: r.PathValue("interrupt_id"), Answer: *req.Answer, SessionID: req.SessionID, ResolvedVia: via, ResolvedBy: by})
	}
	if err != nil {
		s.failUpdate(w, r, id, "a retry is safe (a question is answered once; a repeat answers answered: false)", err)
		return
	}
	if !ok {
		action, answer := client.Reject, ""
		if !req.Decline {
			action, answer = client.Answer, *req.Answer
		}
		writeJSON(w, http.StatusOK, map[string]any{"answered": false, "reason": s.whyNotResolved(ctx, holder(id, req.SessionID), r.PathValue("interrupt_id"), action, answer)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"answered": ok})
}

// BrowserSnapshot is the snapshot without what only the session's Steps use.
func BrowserSnapshot(snap wire.Snapshot) wire.Snapshot {
	out := snap
	out.Messages = make([]wire.Message, len(snap.Messages))
	for i, m := range snap.Messages {
		m.Item = ""
		out.Messages[i] = m
	}
	out.ToolCalls = make([]wire.ToolCall, len(snap.ToolCalls))
	for i, c := range snap.ToolCalls {
		c.ToolSourceReference = ""
		c.InputContinuation, c.InputAnswers, c.TaskAnswerPending = "", nil, nil
		out.ToolCalls[i] = c
	}
	return out
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request, id string) {
	// The head token is taken before the query, so no event between the
	// two is missed (one may repeat what the snapshot already shows).
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	token, err := s.opts.Broker.Head(ctx, id)
	if err != nil {
		s.failEvents(w, r, id, err)
		return
	}
	snap, err := s.sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if snap.State != nil && snap.State.ActiveTurnID != "" {
		t, ok, err := s.opts.Broker.TurnStart(ctx, id, snap.State.ActiveTurnID)
		if err != nil {
			s.failEvents(w, r, id, err)
			return
		}
		if ok {
			token = t
		}
	}
	keptUntil, err := s.opts.Broker.KeptUntil(ctx, id)
	if err != nil {
		s.failEvents(w, r, id, err)
		return
	}
	// Whole texts for the messages the workflow holds cut.
	if err := s.sessions.CompleteMessages(ctx, id, snap.Messages); err != nil {
		s.fail(w, r, err)
		return
	}
	view := BrowserSnapshot(snap)
	s.fillApprovalTexts(&view)
	out := map[string]any{
		"snapshot":     view,
		"resume_token": token,
		// The token resumes until then unless the session writes again
		// (which moves it); a 400 from the stream means reload.
		"resume_token_kept_until": keptUntil.UTC().Format(time.RFC3339),
	}
	// An ended session's snapshot is its state when it ended (a
	// terminated one may show a turn that never finishes): say it ended,
	// and how, so a page shows it read-only.
	if ended := s.endedSession(ctx, id); ended != "" {
		out["ended"] = ended
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, id string) {
	req, err := parseListQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	page, err := s.sessions.ListAgentMessages(ctx, id, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range page.Messages {
		page.Messages[i].Item = ""
	}
	writeJSON(w, http.StatusOK, page)
}

// checkMessageSize refuses a message the worker cannot take: over
// wire.MaxMessageBytes, or over wire.MaxInlineMessageBytes without a
// message store to send it by reference through.
func (s *Server) checkMessageSize(what string, n int) error {
	switch {
	case n > wire.MaxMessageBytes:
		return errorf(http.StatusRequestEntityTooLarge, "payload_too_large",
			"%s is %d bytes; one message may be at most %d (8 MiB)", what, n, wire.MaxMessageBytes)
	case n > wire.MaxInlineMessageBytes && s.opts.Messages == nil:
		return errorf(http.StatusRequestEntityTooLarge, "payload_too_large",
			"%s is %d bytes; without a message store this worker takes at most %d", what, n, wire.MaxInlineMessageBytes)
	}
	return nil
}
