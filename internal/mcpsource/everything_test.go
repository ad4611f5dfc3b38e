package mcpsource

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// everythingServer returns @modelcontextprotocol/server-everything over
// stdio, installed by testdata/install.sh, or marks the peer missing.
func everythingServer(t *testing.T, env map[string]string) Server {
	t.Helper()
	script, err := filepath.Abs("testdata/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(script); err != nil || serr != nil {
		testpeer.Missing(t, "@modelcontextprotocol/server-everything (and node)", "bash internal/mcpsource/testdata/install.sh")
	}
	return Server{Name: "everything", Command: node, Args: []string{script, "stdio"}, Env: env}
}

func TestServerEverythingOverStdio(t *testing.T) {
	t.Setenv("MCPSOURCE_WORKER_ONLY", "must-not-leak")
	srv := everythingServer(t, map[string]string{"DEX_GRANTED": "yes"})
	s := newSource(t, []Server{srv}, Options{})
	ctx := context.Background()
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	for name, effect := range map[string]pluginapi.Effect{
		"everything__echo":                           pluginapi.EffectRead, // readOnlyHint and idempotentHint
		"everything__trigger-long-running-operation": pluginapi.EffectRead,
		"everything__gzip-file-as-resource":          pluginapi.EffectIdempotentWrite,
		"everything__toggle-subscriber-updates":      "",
	} {
		tool, ok := byName[name]
		if !ok {
			t.Errorf("%s is not listed; got %q", name, names(tools))
			continue
		}
		if tool.Effect != effect {
			t.Errorf("%s effect = %q, want %q", name, tool.Effect, effect)
		}
	}
	echo := byName["everything__echo"]
	if echo.Ref != "mcp:everything/echo" || !strings.Contains(string(echo.InputSchema), `"message"`) {
		t.Errorf("echo = %+v", echo)
	}

	out := s.Call(ctx, echo.Ref, json.RawMessage(`{"message":"hi there"}`), "flow/turn/call-1", nil)
	if out.Kind != Succeeded || !strings.Contains(out.Text, "hi there") {
		t.Errorf("echo = %+v", out)
	}

	// The process gets exactly the granted environment.
	out = s.Call(ctx, "mcp:everything/get-env", nil, "flow/turn/call-2", nil)
	if out.Kind != Succeeded {
		t.Fatalf("get-env = %+v", out)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(out.Text), &env); err != nil {
		t.Fatalf("get-env text %q: %v", out.Text, err)
	}
	if env["DEX_GRANTED"] != "yes" {
		t.Errorf("the granted variable is missing: %v", env)
	}
	if _, leaked := env["MCPSOURCE_WORKER_ONLY"]; leaked {
		t.Errorf("the worker's environment leaked into the server: %v", env)
	}

	var mu sync.Mutex
	var progress []Progress
	out = s.Call(ctx, "mcp:everything/trigger-long-running-operation", json.RawMessage(`{"duration":0.2,"steps":2}`), "flow/turn/call-3",
		func(p Progress) {
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
		})
	if out.Kind != Succeeded || !strings.Contains(out.Text, "completed") {
		t.Errorf("long-running operation = %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(progress, []Progress{{Progress: 1, Total: 2}, {Progress: 2, Total: 2}}) {
		t.Errorf("progress = %+v", progress)
	}

	// An unknown tool is the server's JSON-RPC error (or isError): failed.
	out = s.Call(ctx, "mcp:everything/no-such-tool", nil, "flow/turn/call-4", nil)
	if out.Kind != ToolFailed {
		t.Errorf("no-such-tool = %+v, want ToolFailed", out)
	}
}

// TestServerEverythingResourcesAndPrompts: the resources and prompts tools
// against the real server: every page of its resources (it has more than
// one page), a resource read, a prompt with an argument.
func TestServerEverythingResourcesAndPrompts(t *testing.T) {
	s := newSource(t, []Server{everythingServer(t, nil)}, Options{})
	ctx := context.Background()
	call := func(tool, args string) Outcome {
		t.Helper()
		out := s.CallResourceTool(ctx, tool, json.RawMessage(args), []string{"everything"})
		if out.Kind != Succeeded {
			t.Fatalf("%s %s = %+v", tool, args, out)
		}
		return out
	}
	var listing struct {
		Prompts           []struct{ Name string } `json:"prompts"`
		ResourceTemplates []struct {
			URITemplate string `json:"uriTemplate"`
		} `json:"resource_templates"`
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(call(ListResourcesAndPromptsToolName, `{"server":"everything"}`).Text), &listing); err != nil {
		t.Fatal(err)
	}
	t.Logf("server-everything: %d resources, %d templates, %d prompts", len(listing.Resources), len(listing.ResourceTemplates), len(listing.Prompts))
	if len(listing.Resources) == 0 || len(listing.Prompts) == 0 || len(listing.ResourceTemplates) == 0 {
		t.Fatalf("listing = %+v", listing)
	}
	read := call(ReadResourceToolName, `{"server":"everything","uri":"`+listing.Resources[0].URI+`"}`)
	if !strings.HasPrefix(read.Text, `{"contents":[{`) || !strings.Contains(read.Text, listing.Resources[0].URI) {
		t.Errorf("read = %s", read.Text)
	}
	got := call(GetPromptToolName, `{"server":"everything","name":"args-prompt","arguments":{"city":"Oslo"}}`)
	if !strings.Contains(got.Text, "What's weather in Oslo?") || !strings.Contains(got.Text, `"messages":[`) {
		t.Errorf("args-prompt = %s", got.Text)
	}
}

// TestServerEverythingTaskIn2025Shape: server-everything's
// simulate-research-query has taskSupport "required" (MCP 2025-11-25): the
// listing keeps that, the call is task-augmented, the task is polled with
// tasks/get on the call's connection and its result comes from
// tasks/result.
func TestServerEverythingTaskIn2025Shape(t *testing.T) {
	s := newSource(t, []Server{everythingServer(t, nil)}, Options{})
	ctx := context.Background()
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	support := map[string]string{}
	for _, tool := range tools {
		support[tool.Name] = tool.TaskSupport
	}
	if support["everything__simulate-research-query"] != "required" || support["everything__echo"] != "" {
		t.Fatalf("task support: %v", support)
	}
	out := s.Call(ctx, "mcp:everything/simulate-research-query", json.RawMessage(`{"topic":"durable agents"}`), "k-research", nil)
	if out.Kind != Succeeded || !strings.Contains(out.Text, "# Research Report: durable agents") || !strings.Contains(out.Text, "Stage 4: Generating report") {
		t.Errorf("Call = %+v", out)
	}
}
