package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/internal/redact"
)

// The defaults of a [Server]'s limits (the spec's).
const (
	DefaultConnectionTimeout  = 30 * time.Second
	DefaultRequestTimeout     = 10 * time.Minute
	DefaultConnectionAttempts = 3
	DefaultTaskWaitTimeout    = 10 * time.Minute
)

// Server is one configured MCP server: either a stdio server (Command set)
// or a Streamable HTTP server (URL set), never both. Servers are declared
// by the operator in the worker's config, never by session input: a stdio
// server's command runs with the worker's privileges.
type Server struct {
	// Name is the server's name in the config. It prefixes its tools'
	// names ("<name>__<tool>") and their source references. It must not be
	// empty or contain '/'.
	Name string

	// Command and Args start a stdio server, a new process per request.
	Command string
	Args    []string
	// Env is the exact environment of the stdio server's process: nothing
	// of the worker's own environment reaches it (not even PATH, unless
	// granted here). Its values are treated as secrets.
	Env map[string]string
	// Dir is the stdio server's working directory; empty is the worker's.
	Dir string

	// URL is a Streamable HTTP server's endpoint, a new HTTP connection per
	// request.
	URL string
	// Headers are sent with every HTTP request. Their values are secrets:
	// they never appear in a log or an error.
	Headers map[string]string

	// TrustsToolAnnotations says whether the server's readOnlyHint and
	// idempotentHint decide its tools' effects. Nil is true (the spec's
	// default); false leaves every tool to the session's default effect
	// unless a tool policy names it.
	TrustsToolAnnotations *bool

	// ConnectionTimeout bounds connecting and each handshake or listing
	// request; 0 is [DefaultConnectionTimeout].
	ConnectionTimeout time.Duration
	// RequestTimeout bounds a tools/call; 0 is [DefaultRequestTimeout].
	RequestTimeout time.Duration
	// ConnectionAttempts is how many times a failed connection is tried
	// before a call counts as never sent; 0 is [DefaultConnectionAttempts].
	ConnectionAttempts int
	// TaskWaitTimeout bounds how long a call polls a stdio server's task
	// inside its Step; 0 is [DefaultTaskWaitTimeout].
	TaskWaitTimeout time.Duration
}

// Validate reports a config error in s.
func (s Server) Validate() error {
	if s.Name == "" {
		return errors.New("mcp server: name is empty")
	}
	if strings.ContainsAny(s.Name, "/") {
		return fmt.Errorf("mcp server %q: the name must not contain '/'", s.Name)
	}
	switch {
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("mcp server %q: set command (stdio) or url (Streamable HTTP)", s.Name)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("mcp server %q: set command or url, not both", s.Name)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL may carry a secret: name the server, not the URL.
			return fmt.Errorf("mcp server %q: url is not an http or https URL", s.Name)
		}
		if len(s.Env) > 0 || len(s.Args) > 0 || s.Dir != "" {
			return fmt.Errorf("mcp server %q: args, env and dir are for a stdio server", s.Name)
		}
	}
	if s.Command != "" && len(s.Headers) > 0 {
		return fmt.Errorf("mcp server %q: headers are for a Streamable HTTP server", s.Name)
	}
	if s.ConnectionTimeout < 0 || s.RequestTimeout < 0 || s.ConnectionAttempts < 0 || s.TaskWaitTimeout < 0 {
		return fmt.Errorf("mcp server %q: timeouts and connection attempts must not be negative", s.Name)
	}
	return nil
}

// Trusted reports whether the server's tool annotations decide effects.
func (s Server) Trusted() bool { return s.TrustsToolAnnotations == nil || *s.TrustsToolAnnotations }

func (s Server) connectionTimeout() time.Duration {
	if s.ConnectionTimeout > 0 {
		return s.ConnectionTimeout
	}
	return DefaultConnectionTimeout
}

func (s Server) requestTimeout() time.Duration {
	if s.RequestTimeout > 0 {
		return s.RequestTimeout
	}
	return DefaultRequestTimeout
}

func (s Server) taskWaitTimeout() time.Duration {
	if s.TaskWaitTimeout > 0 {
		return s.TaskWaitTimeout
	}
	return DefaultTaskWaitTimeout
}

func (s Server) connectionAttempts() int {
	if s.ConnectionAttempts > 0 {
		return s.ConnectionAttempts
	}
	return DefaultConnectionAttempts
}

// String describes the server without its secrets (headers, env values,
// args, the URL's query and user info), for fmt and logs.
func (s Server) String() string {
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil {
			return fmt.Sprintf("mcp server %q (Streamable HTTP)", s.Name)
		}
		return fmt.Sprintf("mcp server %q (Streamable HTTP %s://%s%s)", s.Name, u.Scheme, u.Host, u.Path)
	}
	return fmt.Sprintf("mcp server %q (stdio %s)", s.Name, s.Command)
}

// LogValue keeps the server's secrets out of slog output.
func (s Server) LogValue() slog.Value { return slog.StringValue(s.String()) }

// GoString keeps the server's secrets out of %#v.
func (s Server) GoString() string { return s.String() }

// secrets lists the values that never appear in an error or a log.
func (s Server) secrets() []string {
	var out []string
	for _, v := range s.Headers {
		out = append(out, v)
		// "Bearer <token>": the token alone may show up too.
		if _, tok, ok := strings.Cut(v, " "); ok {
			out = append(out, tok)
		}
	}
	for _, v := range s.Env {
		out = append(out, v)
	}
	if u, err := url.Parse(s.URL); err == nil {
		if u.RawQuery != "" {
			out = append(out, u.RawQuery)
		}
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		if u.User != nil {
			out = append(out, u.User.String())
		}
	}
	return out
}

// server is a validated Server with its redactor.
type server struct {
	Server
	redactor *redact.Redactor
}

func newServer(s Server) *server {
	return &server{Server: s, redactor: redact.New(s.secrets()...)}
}

// errorf formats an error about the server with its secrets removed. The
// result wraps no error, so nothing unredacted can be unwrapped from it.
func (s *server) errorf(format string, args ...any) error {
	return errors.New(s.redactor.String(fmt.Sprintf(format, args...)))
}

// connection is one connection to the server: one process or one set of
// HTTP connections, for one request.
type connection struct {
	session *mcp.ClientSession
	// httpClient is closed with the connection (HTTP only).
	httpClient *http.Client
	// sent records that a tools/call reached the server, or may have (see
	// callTracker).
	tracker *callTracker
}

func (c *connection) close() {
	_ = c.session.Close()
	if c.httpClient != nil {
		c.httpClient.CloseIdleConnections()
	}
}

// callTracker records what became of a tools/call request on the wire. For
// HTTP the request counts as sent once the transport read any byte of its
// body (a dial failure reads none, so the server cannot have seen it); for
// stdio once it was handed to the connection, since any write to the pipe
// may have reached the process.
type callTracker struct {
	sent       atomic.Bool
	httpStatus atomic.Int32 // the tools/call POST's status, 0 before it

	mu        sync.Mutex
	callID    jsonrpc.ID
	hasCall   bool
	serverErr *jsonrpc.Error  // the server's JSON-RPC error answer to the call (stdio)
	result    json.RawMessage // the server's result for the call (stdio)
	body      []byte          // the tools/call's HTTP response body (HTTP)
	overflow  bool

	// listing asks the connection to keep the raw results of tools/list
	// (which the SDK decodes without a tool's execution.taskSupport).
	listing   bool
	listIDs   []jsonrpc.ID
	listPages []json.RawMessage // stdio
	listBody  [][]byte          // HTTP response bodies of tools/list
}

// rawListPages returns the raw tools/list results the connection saw.
func (t *callTracker) rawListPages() []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]json.RawMessage(nil), t.listPages...)
	for _, b := range t.listBody {
		if resp := httpResponse(b); resp != nil && resp.Error == nil {
			out = append(out, resp.Result)
		}
	}
	return out
}

// reset prepares the tracker for the next tools/call on the connection.
func (t *callTracker) reset() {
	t.sent.Store(false)
	t.httpStatus.Store(0)
	t.mu.Lock()
	t.hasCall, t.serverErr, t.result, t.body, t.overflow = false, nil, nil, nil, false
	t.mu.Unlock()
}

func (t *callTracker) setCall(id jsonrpc.ID) {
	t.mu.Lock()
	t.callID, t.hasCall, t.serverErr = id, true, nil
	t.mu.Unlock()
}

func (t *callTracker) answered(id jsonrpc.ID, werr *jsonrpc.Error, result json.RawMessage) {
	t.mu.Lock()
	if t.hasCall && id == t.callID {
		t.serverErr, t.result = werr, result
	}
	if t.listing && werr == nil && slices.Contains(t.listIDs, id) {
		t.listPages = append(t.listPages, result)
	}
	t.mu.Unlock()
}

// rawResult returns the result the server answered the call with, as it
// sent it: the SDK decodes only the shapes it knows (not a task handle).
func (t *callTracker) rawResult() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result != nil || t.overflow || len(t.body) == 0 {
		return t.result
	}
	if resp := httpResponse(t.body); resp != nil && resp.Error == nil {
		return resp.Result
	}
	return nil
}

// serverError returns the server's JSON-RPC error answer to the call, nil
// when the server sent none.
func (t *callTracker) serverError() *jsonrpc.Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.serverErr != nil || t.overflow || len(t.body) == 0 {
		return t.serverErr
	}
	return httpServerError(t.body)
}

type trackerKey struct{}

// transport returns the SDK transport for a new connection.
func (s *server) transport(tracker *callTracker) (mcp.Transport, *http.Client) {
	if s.URL != "" {
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.DisableKeepAlives = true // a new HTTP connection per request
		client := &http.Client{Transport: &headerTransport{base: base, headers: s.Headers}}
		// Not wrapped in a trackingTransport: the SDK's HTTP connection must
		// stay itself (it learns the negotiated version through a private
		// method); headerTransport watches the tools/call's HTTP response.
		return &mcp.StreamableClientTransport{
			Endpoint:             s.URL,
			HTTPClient:           client,
			MaxRetries:           -1, // MCP 2026-07-28 never resumes a broken stream
			DisableStandaloneSSE: true,
		}, client
	}
	cmd := exec.Command(s.Command, s.Args...)
	env := make([]string, 0, len(s.Env))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	cmd.Env = env // non-nil: the process gets exactly this environment
	cmd.Dir = s.Dir
	return &trackingTransport{inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, tracker: tracker, sentOnWrite: true}, nil
}

// headerTransport adds the configured headers and records the tools/call
// request's fate in the callTracker its context carries.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if id, ok := req.Context().Value(taskNameKey{}).(string); ok {
		// The tasks extension's routing header: a balancer sends the
		// task's requests to the instance that holds it.
		req.Header.Set("Mcp-Name", id)
	}
	tracker, _ := req.Context().Value(trackerKey{}).(*callTracker)
	if tracker != nil && tracker.listing && req.Body != nil && req.Method == http.MethodPost {
		// A listing: keep the tools/list responses' bytes.
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp != nil {
			buf := &listTee{ReadCloser: resp.Body, t: tracker}
			resp.Body = buf
		}
		return resp, err
	}
	if ttl, ok := req.Context().Value(augmentKey{}).(int64); ok && req.Body != nil && req.Method == http.MethodPost {
		if body, err := io.ReadAll(req.Body); err == nil {
			_ = req.Body.Close()
			if msg, err := jsonrpc.DecodeMessage(body); err == nil {
				if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/call" {
					if params, err := withTask(r.Params, ttl); err == nil {
						r.Params = params
						if b, err := jsonrpc.EncodeMessage(r); err == nil {
							body = b
						}
					}
				}
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
		}
	}
	if tracker != nil && req.Body != nil && req.Method == http.MethodPost {
		req.Body = &readTracker{ReadCloser: req.Body, sent: &tracker.sent}
		req.GetBody = nil // never resent by the HTTP client
	}
	resp, err := t.base.RoundTrip(req)
	if tracker != nil && req.Method == http.MethodPost && resp != nil {
		if tracker.httpStatus.CompareAndSwap(0, int32(resp.StatusCode)) {
			// The tools/call's own response: keep its bytes, to find the
			// server's JSON-RPC error answer in them.
			resp.Body = &bodyTee{ReadCloser: resp.Body, t: tracker}
		}
	}
	return resp, err
}

// maxTeeBytes bounds the bytes of a tools/call response kept to find the
// server's JSON-RPC error in; past it no error is found, which counts as
// outcome unknown.
const maxTeeBytes = 4 << 20

// listTee keeps a listing's HTTP response body (each POST of a
// listing connection carries one request: the handshake's, or a page of
// tools/list), bounded like bodyTee.
type listTee struct {
	io.ReadCloser
	t   *callTracker
	buf []byte
}

func (b *listTee) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && len(b.buf)+n <= maxTeeBytes {
		b.buf = append(b.buf, p[:n]...)
	}
	if err != nil {
		b.flush()
	}
	return n, err
}

func (b *listTee) Close() error {
	b.flush()
	return b.ReadCloser.Close()
}

func (b *listTee) flush() {
	if len(b.buf) > 0 {
		b.t.mu.Lock()
		b.t.listBody = append(b.t.listBody, b.buf)
		b.t.mu.Unlock()
		b.buf = nil
	}
}

// augmentKey marks a tools/call to send task-augmented (MCP 2025-11-25):
// the value is the task's requested TTL in milliseconds.
type augmentKey struct{}

// withTask adds the 2025-11-25 task augmentation to tools/call params.
func withTask(params json.RawMessage, ttl int64) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, err
	}
	m["task"] = json.RawMessage(fmt.Sprintf(`{"ttl":%d}`, ttl))
	return json.Marshal(m)
}

type bodyTee struct {
	io.ReadCloser
	t *callTracker
}

func (b *bodyTee) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.t.mu.Lock()
		if len(b.t.body)+n <= maxTeeBytes {
			b.t.body = append(b.t.body, p[:n]...)
		} else {
			b.t.overflow = true
		}
		b.t.mu.Unlock()
	}
	return n, err
}

// httpServerError finds the JSON-RPC error response in a tools/call's HTTP
// response body, JSON or Server-Sent Events. A POST's response carries
// only messages about its own request, so an error response in it is the
// answer to the call.
func httpServerError(body []byte) *jsonrpc.Error {
	resp := httpResponse(body)
	if resp == nil || resp.Error == nil {
		return nil
	}
	var werr *jsonrpc.Error
	if errors.As(resp.Error, &werr) {
		return werr
	}
	return nil
}

// httpResponse finds the JSON-RPC response in a tools/call's HTTP response
// body, JSON or Server-Sent Events (the last one, for SSE).
func httpResponse(body []byte) *jsonrpc.Response {
	decode := func(data []byte) *jsonrpc.Response {
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return nil
		}
		resp, _ := msg.(*jsonrpc.Response)
		return resp
	}
	if resp := decode(bytes.TrimSpace(body)); resp != nil {
		return resp
	}
	// SSE: an event's data lines joined with newlines.
	var data []byte
	var found *jsonrpc.Response
	flush := func() {
		if len(data) > 0 {
			if resp := decode(data); resp != nil {
				found = resp
			}
		}
		data = data[:0]
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			flush()
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	flush()
	return found
}

type readTracker struct {
	io.ReadCloser
	sent *atomic.Bool
}

func (r *readTracker) Read(p []byte) (int, error) {
	r.sent.Store(true)
	return r.ReadCloser.Read(p)
}

// trackingTransport watches a connection's messages: it marks a stdio
// tools/call as sent when it is written, and keeps the JSON-RPC error the
// server answered a tools/call with, so that an error the SDK makes up for
// a broken connection is never taken for the server's answer.
type trackingTransport struct {
	inner       mcp.Transport
	tracker     *callTracker
	sentOnWrite bool
}

func (t *trackingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &trackingConn{Connection: c, t: t}, nil
}

type trackingConn struct {
	mcp.Connection
	t *trackingTransport
}

func (c *trackingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" {
		c.t.tracker.mu.Lock()
		if c.t.tracker.listing {
			c.t.tracker.listIDs = append(c.t.tracker.listIDs, req.ID)
		}
		c.t.tracker.mu.Unlock()
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		if ttl, ok := ctx.Value(augmentKey{}).(int64); ok {
			augmented := *req
			if params, err := withTask(req.Params, ttl); err == nil {
				augmented.Params = params
				msg = &augmented
			}
		}
		c.t.tracker.setCall(req.ID)
		if c.t.sentOnWrite {
			c.t.tracker.sent.Store(true)
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *trackingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		var werr *jsonrpc.Error
		if resp.Error == nil || errors.As(resp.Error, &werr) {
			c.t.tracker.answered(resp.ID, werr, resp.Result)
		}
	}
	return msg, err
}
