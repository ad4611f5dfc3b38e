package mcpsource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitServer's tools ask for input before they act (MCP 2026-07-28
// input_required), and act on the answer that comes back with the
// request state they sent.
func elicitServer(rec *recorder) *mcp.Server {
	srv := newMCPServer(rec)
	ask := func(name string, schema string, act func(content map[string]any) string) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["q1"].(*mcp.ElicitResult); ok && req.Params.RequestState == "state-"+name {
				return &mcp.CallToolResult{Content: text(act(r.Content))}, nil
			}
			return &mcp.CallToolResult{RequestState: "state-" + name, InputRequests: mcp.InputRequestMap{
				"q1": &mcp.ElicitParams{Message: "Question of " + name + "?", RequestedSchema: json.RawMessage(schema)},
			}}, nil
		})
	}
	ask("pick", `{"type":"object","properties":{"account":{"type":"string","enum":["checking","savings"]}},"required":["account"]}`,
		func(c map[string]any) string { return fmt.Sprintf("charged %v", c["account"]) })
	ask("confirm", `{"type":"object","properties":{"ok":{"type":"boolean"}}}`,
		func(c map[string]any) string { return fmt.Sprintf("confirmed %v", c["ok"]) })
	ask("named", `{"type":"object","properties":{"who":{"type":"string"}}}`,
		func(c map[string]any) string { return fmt.Sprintf("hello %v", c["who"]) })
	ask("number", `{"type":"object","properties":{"n":{"type":"integer"}}}`, func(map[string]any) string { return "" })
	ask("two", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, func(map[string]any) string { return "" })
	return srv
}

// TestElicitationBecomesAQuestion: a form elicitation with one string
// field (enum or free) or one boolean field comes back as a question; the
// call with the answer sends it as the accepted content with the server's
// request state, under the same idempotency key. Any other elicitation is
// a tool error the model sees, as before.
func TestElicitationBecomesAQuestion(t *testing.T) {
	rec := &recorder{}
	url := serveHTTP(t, elicitServer(rec), rec, nil)
	s := newSource(t, []Server{{Name: "bank", URL: url}}, Options{})
	ctx := context.Background()
	tests := []struct {
		tool, answer, want string
		choices            []string
		free               bool
	}{
		{"pick", "savings", "charged savings", []string{"checking", "savings"}, false},
		{"confirm", "yes", "confirmed true", []string{"yes", "no"}, false},
		{"named", "Ada Lovelace", "hello Ada Lovelace", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			out := s.Call(ctx, "mcp:bank/"+tt.tool, nil, "k-"+tt.tool, nil)
			if out.Kind != InputRequested || out.Input == nil {
				t.Fatalf("Call = %+v, want a question", out)
			}
			in := out.Input
			if in.Question != "Question of "+tt.tool+"?" || !slices.Equal(in.Choices, tt.choices) || in.AllowsFreeText != tt.free || in.Continuation == "" {
				t.Fatalf("question = %+v", in)
			}
			out = s.CallWithAnswer(ctx, "mcp:bank/"+tt.tool, nil, "k-"+tt.tool, nil, &Answer{Continuation: in.Continuation, Answer: tt.answer})
			if out.Kind != Succeeded || out.Text != tt.want {
				t.Fatalf("CallWithAnswer = %+v, want %q", out, tt.want)
			}
		})
	}
	for _, tool := range []string{"number", "two"} {
		out := s.Call(ctx, "mcp:bank/"+tool, nil, "k", nil)
		if out.Kind != ToolFailed || !strings.Contains(out.Text, "the MCP server asked for input that this agent session cannot provide yet (an answer to \"Question of "+tool+"?\")") {
			t.Errorf("%s = %+v, want the spec's failure", tool, out)
		}
	}
	// An answer the continuation cannot carry is never sent.
	if out := s.CallWithAnswer(ctx, "mcp:bank/confirm", nil, "k", nil, &Answer{Continuation: `{"key":"q1","field":"ok","type":"boolean"}`, Answer: "maybe"}); out.Kind != NotSent {
		t.Errorf("a non-boolean answer = %+v, want not sent", out)
	}
	if out := s.CallWithAnswer(ctx, "mcp:bank/confirm", nil, "k", nil, &Answer{Continuation: "junk", Answer: "yes"}); out.Kind != NotSent {
		t.Errorf("a foreign continuation = %+v, want not sent", out)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, tt := range tests {
		if n := rec.calls[tt.tool]; n != 2 {
			t.Errorf("%s was called %d times, want 2 (the question, the answer)", tt.tool, n)
		}
	}
}
