package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

func TestCallResultAndErrorMapping(t *testing.T) {
	rec := &recorder{}
	headers := map[string]string{"Authorization": testSecret}
	plain := serveHTTP(t, newMCPServer(rec), rec, nil)
	gateway := serveHTTP(t, newMCPServer(rec), rec, onToolsCall("read", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}))
	notJSON := serveHTTP(t, newMCPServer(rec), rec, onToolsCall("read", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("<html>this is not JSON-RPC</html>"))
	}))
	dropped := serveHTTP(t, newMCPServer(rec), rec, onToolsCall("read", func(w http.ResponseWriter, r *http.Request) {
		// The request was read; the connection dies before any answer.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	s := newSource(t, []Server{
		{Name: "plain", URL: plain, Headers: headers},
		{Name: "gateway", URL: gateway, Headers: headers},
		{Name: "notjson", URL: notJSON, Headers: headers},
		{Name: "dropped", URL: dropped, Headers: headers},
		{Name: "slowpoke", URL: plain, Headers: headers, RequestTimeout: 300 * time.Millisecond},
		{Name: "gone", URL: unreachableURL(t), Headers: headers},
	}, Options{})
	tests := []struct {
		name, ref string
		args      string
		kind      Kind
		text      string // the Outcome's Text, or a part of its Err
	}{
		{"a result: text joined, other content as JSON", "mcp:plain/read", "", Succeeded,
			"line one\nline two\n" + `{"data":"cG5n","mimeType":"image/png","type":"image"}`},
		{"arguments reach the tool unchanged", "mcp:plain/write", `{"id":12345678901234567890123}`, Succeeded, `wrote {"id":12345678901234567890123}`},
		{"isError", "mcp:plain/fail", "", ToolFailed, "no such order"},
		{"a JSON-RPC error", "mcp:plain/rpcerr", "", ToolFailed, "MCP error -32001: quota exceeded"},
		{"input this session cannot give", "mcp:plain/ask", "", ToolFailed,
			`the MCP server asked for input that this agent session cannot provide yet (an answer to "Which account?")`},
		{"arguments that are not an object", "mcp:plain/write", `[1]`, ToolFailed, "not a JSON object"},
		{"-32603 after the call ran", "mcp:plain/internal", "", OutcomeUnknown, "-32603"},
		{"a gateway's HTML 502", "mcp:gateway/read", "", OutcomeUnknown, "502"},
		{"a body that is not JSON-RPC (-32700)", "mcp:notjson/read", "", OutcomeUnknown, "tools/call"},
		{"the connection dropped after the request was read", "mcp:dropped/read", "", OutcomeUnknown, "tools/call"},
		{"a timeout after send", "mcp:slowpoke/slow", "", OutcomeUnknown, "after it was sent"},
		{"a server that keeps asking to repeat the call", "mcp:plain/again", "", OutcomeUnknown, "asked to repeat the call"},
		{"an unreachable server", "mcp:gone/read", "", NotSent, "3 connection attempts failed"},
		{"an unknown server", "mcp:nope/read", "", NotSent, `server "nope" is not configured`},
		{"not an MCP reference", "builtin:ask_user", "", NotSent, "not an MCP tool reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := s.Call(context.Background(), tt.ref, json.RawMessage(tt.args), "flow/turn/"+tt.name, nil)
			if out.Kind != tt.kind {
				t.Fatalf("Kind = %v (text %q, err %v), want %v", out.Kind, out.Text, out.Err, tt.kind)
			}
			switch tt.kind {
			case Succeeded, ToolFailed:
				if !strings.Contains(out.Text, tt.text) || (tt.kind == Succeeded && out.Text != tt.text) {
					t.Errorf("Text = %q, want %q", out.Text, tt.text)
				}
				if out.Err != nil {
					t.Errorf("Err = %v, want nil", out.Err)
				}
			default:
				if out.Err == nil || !strings.Contains(out.Err.Error(), tt.text) {
					t.Errorf("Err = %v, want one with %q", out.Err, tt.text)
				}
			}
			if hasSecret(out.Text) || (out.Err != nil && hasSecret(out.Err.Error())) {
				t.Errorf("a secret is in the outcome: %q %v", out.Text, out.Err)
			}
		})
	}
	// The unreachable server's error names its URL with the query redacted.
	if out := s.Call(context.Background(), "mcp:gone/read", nil, "k", nil); !strings.Contains(out.Err.Error(), "<redacted>") {
		t.Errorf("the unreachable server's error shows no redaction: %v", out.Err)
	}
	if n := rec.callCount("again"); n != 1+maxStateOnlyRetries {
		t.Errorf("again was called %d times, want %d", n, 1+maxStateOnlyRetries)
	}
	// A tool that never ran was never called; one that ran was called once.
	if n := rec.callCount("fail"); n != 1 {
		t.Errorf("fail was called %d times, want 1", n)
	}
	if n := rec.callCount("internal"); n != 1 {
		t.Errorf("internal was called %d times, want 1 (an outcome_unknown is never re-sent by Call)", n)
	}
}

func TestCallSendsTheIdempotencyKeyAndReportsProgress(t *testing.T) {
	rec := &recorder{}
	url := serveHTTP(t, newMCPServer(rec), rec, nil)
	s := newSource(t, []Server{{Name: "a", URL: url}}, Options{})
	var mu sync.Mutex
	var got []Progress
	out := s.Call(context.Background(), "mcp:a/progress", nil, "flow-1/turn-2/call-3", func(p Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	if out.Kind != Succeeded || out.Text != "done" {
		t.Fatalf("Call = %+v", out)
	}
	if keys := rec.idempotencyKeys(); !slices.Equal(keys, []string{"flow-1/turn-2/call-3"}) {
		t.Errorf("idempotency keys the server got = %q", keys)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []Progress{{Progress: 1, Total: 2, Message: "step"}, {Progress: 2, Total: 2, Message: "step"}}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %+v, want %+v", got, want)
	}
	// A retried read sends the same key again: the server sees both.
	for range 2 {
		if out := s.Call(context.Background(), "mcp:a/read", nil, "flow-1/turn-2/call-4", nil); out.Kind != Succeeded {
			t.Fatalf("read = %+v", out)
		}
	}
	if keys := rec.idempotencyKeys(); !slices.Equal(keys[1:], []string{"flow-1/turn-2/call-4", "flow-1/turn-2/call-4"}) {
		t.Errorf("idempotency keys = %q", keys)
	}
}

func TestCallNeverSentRetriesTheConnection(t *testing.T) {
	// The first two handshakes fail with a 503; the third connects and the
	// call runs once.
	rec := &recorder{}
	var mu sync.Mutex
	failures := 0
	url := serveHTTP(t, newMCPServer(rec), rec, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			fail := failures < 2
			if fail {
				failures++
			}
			mu.Unlock()
			if fail {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	s := newSource(t, []Server{{Name: "a", URL: url}}, Options{})
	out := s.Call(context.Background(), "mcp:a/plain", nil, "k", nil)
	if out.Kind != Succeeded {
		t.Fatalf("Call = %+v", out)
	}
	if n := rec.callCount("plain"); n != 1 {
		t.Errorf("plain was called %d times, want 1", n)
	}
	// With one attempt the same server is never sent the call.
	mu.Lock()
	failures = 0
	mu.Unlock()
	one := newSource(t, []Server{{Name: "a", URL: url, ConnectionAttempts: 1}}, Options{})
	if out := one.Call(context.Background(), "mcp:a/plain", nil, "k2", nil); out.Kind != NotSent {
		t.Fatalf("Call = %+v, want NotSent", out)
	}
	if n := rec.callCount("plain"); n != 1 {
		t.Errorf("plain was called %d times, want still 1", n)
	}
}

func TestCallFallsBackToTheInitializeHandshake(t *testing.T) {
	// A stateful server speaks 2025-11-25 through initialize; the source
	// still lists and calls it, one connection (one protocol session) per
	// request.
	rec := &recorder{}
	url := serveHTTPWith(t, newMCPServer(rec), rec, nil, &mcp.StreamableHTTPOptions{})
	s := newSource(t, []Server{{Name: "old", URL: url}}, Options{})
	tools, err := s.Tools(context.Background())
	if err != nil || len(tools) == 0 {
		t.Fatalf("Tools = %v, %v", names(tools), err)
	}
	var progressed int
	out := s.Call(context.Background(), "mcp:old/progress", nil, "k-old", func(Progress) { progressed++ })
	if out.Kind != Succeeded || out.Text != "done" || progressed != 2 {
		t.Fatalf("Call = %+v, progress %d", out, progressed)
	}
	if keys := rec.idempotencyKeys(); !slices.Equal(keys, []string{"k-old"}) {
		t.Errorf("idempotency keys = %q", keys)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.protocols, "2025-11-25") {
		t.Errorf("protocol versions = %q, want the 2025-11-25 fallback", rec.protocols)
	}
}

func TestCallThatNeverLeftAfterTheHandshakeIsNotSent(t *testing.T) {
	// The server goes away between the handshake and the tools/call: the
	// call's POST cannot connect, so it provably never reached the server.
	rec := &recorder{}
	var ts *httptest.Server
	var once sync.Once
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newMCPServer(rec) },
		&mcp.StreamableHTTPOptions{Stateless: true})
	ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// The listener closes before the handshake's answer is written:
		// the handler flushes it, so a client quick to send the next
		// request could otherwise connect before a close that came after
		// (a CI run saw exactly that).
		if bytes.Contains(body, []byte(`"server/discover"`)) {
			once.Do(func() { ts.Listener.Close() })
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	// Without keep-alives every request needs a new connection, so the
	// closed listener is what the tools/call meets, never a kept-alive
	// connection from the handshake.
	ts.Config.SetKeepAlivesEnabled(false)
	ts.Start()
	t.Cleanup(ts.Close)
	s := newSource(t, []Server{{Name: "a", URL: ts.URL, ConnectionAttempts: 2}}, Options{})
	out := s.Call(context.Background(), "mcp:a/write", nil, "k", nil)
	if out.Kind != NotSent || out.Err == nil || !strings.Contains(out.Err.Error(), "connection attempts failed") {
		t.Fatalf("Call = %+v, want NotSent", out)
	}
	if n := rec.callCount("write"); n != 0 {
		t.Errorf("write was called %d times, want 0", n)
	}
}

// TestCallCarriesTheTraceContextInMeta: a call made under a span sends its
// W3C traceparent in _meta, so a traced MCP server continues the tool's
// trace; a call outside any trace sends none.
func TestCallCarriesTheTraceContextInMeta(t *testing.T) {
	rec := &recorder{}
	url := serveHTTP(t, newMCPServer(rec), rec, nil)
	s := newSource(t, []Server{{Name: "a", URL: url}}, Options{})
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if out := s.Call(ctx, "mcp:a/read", nil, "k1", nil); out.Kind != Succeeded {
		t.Fatalf("Call = %+v", out)
	}
	if out := s.Call(context.Background(), "mcp:a/read", nil, "k2", nil); out.Kind != Succeeded {
		t.Fatalf("Call = %+v", out)
	}
	want := []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""}
	if got := rec.traceparentsSeen(); !slices.Equal(got, want) {
		t.Errorf("traceparents the server got = %q, want %q", got, want)
	}
}
