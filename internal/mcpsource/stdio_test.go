package mcpsource

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// helperEnv makes the test binary a stdio MCP server (see TestMain).
const helperEnv = "MCPSOURCE_STDIO_HELPER"

const envSecret = "env-secret-value-42"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runStdioHelper()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runStdioHelper serves a few tools over stdio.
func runStdioHelper() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	add := func(name string, a *mcp.ToolAnnotations, h mcp.ToolHandler) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema, Annotations: a}, h)
	}
	add("env", &mcp.ToolAnnotations{ReadOnlyHint: true}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env := os.Environ()
		slices.Sort(env)
		return &mcp.CallToolResult{Content: text(strings.Join(env, "\n"))}, nil
	})
	add("exit", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(3) // the server dies during the call
		return nil, nil
	})
	add("internal", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}
	})
	add("refused", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad id"}
	})
	add("leak", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("auth failed with " + os.Getenv("TOKEN"))}, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

func helperServer(t *testing.T) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: "helper", Command: exe, Env: map[string]string{helperEnv: "1", "TOKEN": envSecret}}
}

func TestStdioServer(t *testing.T) {
	t.Setenv("MCPSOURCE_WORKER_ONLY", "must-not-leak")
	s := newSource(t, []Server{helperServer(t)}, Options{})
	ctx := context.Background()
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools); !slices.Equal(got, []string{"helper__env", "helper__exit", "helper__internal", "helper__leak", "helper__refused"}) {
		t.Errorf("tools = %q", got)
	}
	if tools[0].Effect != pluginapi.EffectRead {
		t.Errorf("helper__env effect = %q, want read", tools[0].Effect)
	}
	t.Run("the environment is exactly the config's", func(t *testing.T) {
		out := s.Call(ctx, "mcp:helper/env", nil, "k", nil)
		if want := helperEnv + "=1\nTOKEN=" + envSecret; out.Kind != Succeeded || out.Text != want {
			t.Errorf("env = %v %q, want %q", out.Kind, out.Text, want)
		}
	})
	tests := []struct {
		tool string
		kind Kind
		text string
	}{
		{"exit", OutcomeUnknown, "tools/call"},
		{"internal", OutcomeUnknown, "-32603"},
		{"refused", ToolFailed, "MCP error -32602: bad id"},
		{"leak", ToolFailed, "auth failed with <redacted>"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			out := s.Call(ctx, "mcp:helper/"+tt.tool, nil, "k", nil)
			if out.Kind != tt.kind {
				t.Fatalf("Kind = %v (%q, %v), want %v", out.Kind, out.Text, out.Err, tt.kind)
			}
			got := out.Text
			if out.Err != nil {
				got = out.Err.Error()
			}
			if !strings.Contains(got, tt.text) {
				t.Errorf("outcome %q, want one with %q", got, tt.text)
			}
			if strings.Contains(got, envSecret) {
				t.Errorf("the env secret is in the outcome: %q", got)
			}
		})
	}
}

func TestStdioCommandThatCannotStartIsNeverSent(t *testing.T) {
	s := newSource(t, []Server{{Name: "x", Command: "/nonexistent/mcp-server", Env: map[string]string{"K": envSecret}, ConnectionAttempts: 2}}, Options{})
	out := s.Call(context.Background(), "mcp:x/anything", nil, "k", nil)
	if out.Kind != NotSent || out.Err == nil || !strings.Contains(out.Err.Error(), "2 connection attempts failed") {
		t.Fatalf("Call = %+v, want NotSent after 2 attempts", out)
	}
	tools, err := s.Tools(context.Background())
	if err != nil || len(tools) != 0 {
		t.Errorf("Tools = %v, %v; want none and no error", names(tools), err)
	}
}
