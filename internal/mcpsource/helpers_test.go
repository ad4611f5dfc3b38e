package mcpsource

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testSecret = "Bearer sk-test-secret-0123456789"

// recorder keeps what a test server received.
type recorder struct {
	mu        sync.Mutex
	lists     int
	calls     map[string]int
	keys      []string
	auth      []string
	protocols []string
	// traceparents are the _meta traceparent of each tools/call ("" for
	// none).
	traceparents []string
}

func (r *recorder) listCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists
}

func (r *recorder) callCount(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

func (r *recorder) traceparentsSeen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.traceparents...)
}

func (r *recorder) idempotencyKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

var objectSchema = map[string]any{"type": "object"}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

// newMCPServer returns an SDK server with the test tools.
func newMCPServer(rec *recorder, extra ...*mcp.Tool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			rec.mu.Lock()
			switch method {
			case "tools/list":
				rec.lists++
			case "tools/call":
				p := req.GetParams().(*mcp.CallToolParamsRaw)
				if rec.calls == nil {
					rec.calls = map[string]int{}
				}
				rec.calls[p.Name]++
				if k, ok := p.Meta[IdempotencyKeyMetaKey].(string); ok {
					rec.keys = append(rec.keys, k)
				}
				tp, _ := p.Meta["traceparent"].(string)
				rec.traceparents = append(rec.traceparents, tp)
			}
			rec.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	tr, fa := true, false
	add := func(t *mcp.Tool, h mcp.ToolHandler) {
		if t.InputSchema == nil {
			t.InputSchema = objectSchema
		}
		srv.AddTool(t, h)
	}
	add(&mcp.Tool{Name: "read", Description: "reads", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "line one"},
				&mcp.TextContent{Text: "line two"},
				&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
			}}, nil
		})
	add(&mcp.Tool{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("found")}, nil
		})
	add(&mcp.Tool{Name: "upsert", Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &tr}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("upserted")}, nil
		})
	add(&mcp.Tool{Name: "write", Annotations: &mcp.ToolAnnotations{DestructiveHint: &fa}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("wrote " + string(req.Params.Arguments))}, nil
		})
	add(&mcp.Tool{Name: "plain"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("plain")}, nil
		})
	add(&mcp.Tool{Name: "fail"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: text("no such order")}, nil
		})
	add(&mcp.Tool{Name: "rpcerr"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32001, Message: "quota exceeded"}
		})
	add(&mcp.Tool{Name: "internal"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "database gone"}
		})
	add(&mcp.Tool{Name: "slow"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: text("late")}, nil
		})
	add(&mcp.Tool{Name: "progress"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 2; i++ {
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: 2, Message: "step",
					})
				}
			}
			return &mcp.CallToolResult{Content: text("done")}, nil
		})
	add(&mcp.Tool{Name: "ask"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"q1": &mcp.ElicitParams{Message: "Which account?", RequestedSchema: objectSchema},
			}}, nil
		})
	add(&mcp.Tool{Name: "again"},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A state-only input_required: "send the same request again".
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: "s"}, nil
		})
	for _, t := range extra {
		add(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(req.Params.Name)}, nil
		})
	}
	return srv
}

// serveHTTP serves srv over stateless Streamable HTTP; wrap, if not nil,
// wraps the MCP handler (a gateway in front of the server).
func serveHTTP(t *testing.T, srv *mcp.Server, rec *recorder, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	return serveHTTPWith(t, srv, rec, wrap, &mcp.StreamableHTTPOptions{Stateless: true})
}

func serveHTTPWith(t *testing.T, srv *mcp.Server, rec *recorder, wrap func(http.Handler) http.Handler, opts *mcp.StreamableHTTPOptions) string {
	t.Helper()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	if wrap != nil {
		h = wrap(h)
	}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auth = append(rec.auth, r.Header.Get("Authorization"))
		rec.protocols = append(rec.protocols, r.Header.Get("Mcp-Protocol-Version"))
		rec.mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// onToolsCall runs do for a POST whose body is a tools/call of tool
// instead of passing it on; every other request passes.
func onToolsCall(tool string, do func(w http.ResponseWriter, r *http.Request)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"name":"`+tool+`"`)) {
					do(w, r)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// onToolsList runs do for a POST whose body is a tools/list; do may pass
// the request on itself.
func onToolsList(do func(w http.ResponseWriter, r *http.Request)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if bytes.Contains(body, []byte(`"tools/list"`)) {
					do(w, r)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// unreachableURL is an address where nothing listens.
func unreachableURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/mcp?token=url-secret-abcdef"
}

// fakeClock is an injectable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// logBuffer collects slog output safely.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func hasSecret(s string) bool {
	return strings.Contains(s, "sk-test-secret") || strings.Contains(s, "url-secret")
}
