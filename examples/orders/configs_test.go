package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// TestProviderConfigs: every example in configs/providers loads and
// validates as the worker loads it, and the orders plugin accepts its
// runner_config (the model block decodes strictly and builds a client).
func TestProviderConfigs(t *testing.T) {
	t.Setenv("DEX_DATA_DIR", t.TempDir())
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	files, err := filepath.Glob(filepath.Join("..", "..", "configs", "providers", "*.yaml"))
	if err != nil || len(files) != 4 {
		t.Fatalf("configs/providers: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			agent, ok := cfg.Agent("orders")
			if !ok {
				t.Fatal("no orders agent")
			}
			raw, err := agent.RunnerConfigJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), `"model":{`) {
				t.Fatalf("runner_config has no model: %s", raw)
			}
			r := stepwise.NewRunner("orders", "test", buildAgent)
			if _, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: raw}); err != nil {
				t.Fatalf("the orders plugin refuses %s: %v", raw, err)
			}
			if p := cfg.Plugins["orders"]; strings.Contains(string(raw), "api_key_env") && len(p.Env) == 0 {
				t.Errorf("api_key_env is set but plugins.orders.env lists no variable")
			}
		})
	}
}

// TestModelRunnerConfig: the orders runner_config takes a model; a bad one
// stops Configure with a message naming the field.
func TestModelRunnerConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := `"store_path":"` + filepath.Join(dir, "orders.json") + `"`
	r := stepwise.NewRunner("orders", "test", buildAgent)
	for cfg, want := range map[string]string{
		`{` + store + `,"model":{"provider":"scripted","name":"demo"}}`:                                     "",
		`{` + store + `,"model":{"provider":"openai-compatible","name":"m","api_base":"http://x:1/v1"}}`:    "",
		`{` + store + `,"model":{"provider":"openai","name":"gpt-5-mini","api_key_env":"DEX_NO_SUCH_VAR"}}`: "DEX_NO_SUCH_VAR",
		`{` + store + `,"model":{"provider":"openai-compatible","name":"m"}}`:                               "api_base is required",
		`{` + store + `,"model":{"provider":"openai","name":"m","api_key":"sk-oops"}}`:                      `unknown field "api_key"`,
	} {
		_, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: []byte(cfg)})
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-oops") {
			t.Errorf("the error shows the value: %v", err)
		}
	}
}

// TestMCPConfig: configs/mcp.yaml loads, gives the orders agent the memory
// MCP server, and the orders plugin accepts its runner_config.
func TestMCPConfig(t *testing.T) {
	t.Setenv("DEX_DATA_DIR", t.TempDir())
	cfg, err := config.Load(filepath.Join("..", "..", "configs", "mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	agent, ok := cfg.Agent("orders")
	if !ok || strings.Join(agent.MCP, ",") != "memory" {
		t.Fatalf("orders agent = %+v, %v", agent, ok)
	}
	if srv := cfg.MCPServers["memory"]; srv.Command != "npx" || !slices.Contains(srv.Env, "PATH") {
		t.Errorf("memory server = %+v", srv)
	}
	raw, err := agent.RunnerConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	r := stepwise.NewRunner("orders", "test", buildAgent)
	if _, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "orders", RunnerConfig: raw}); err != nil {
		t.Fatalf("the orders plugin refuses %s: %v", raw, err)
	}
}

// TestMemoryScript: the demo script calls the memory server's tools only
// when the worker offers them, and reports what they return.
func TestMemoryScript(t *testing.T) {
	t.Parallel()
	offered := &stepwise.ModelRequest{Tools: []pluginapi.ToolDefinition{{Name: memoryCreate}, {Name: memoryRead}}}
	reply := memoryScript(offered, nil, memoryCreate, map[string]any{"entities": []any{}})
	if len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Name != memoryCreate {
		t.Errorf("with the tools offered: %+v", reply)
	}
	if reply := memoryScript(&stepwise.ModelRequest{}, nil, memoryRead, map[string]any{}); !strings.Contains(reply.Text, "configs/mcp.yaml") {
		t.Errorf("without them: %+v", reply)
	}
	graph := `{"entities":[{"name":"order 7","entityType":"order","observations":["is a gift"]}],"relations":[]}`
	reply = memoryScript(offered, []stepwise.ToolResult{{ToolName: memoryRead, Status: "succeeded", Output: graph}}, memoryRead, nil)
	if reply.Text != "I remember:\norder 7: is a gift" {
		t.Errorf("read back: %q", reply.Text)
	}
	reply = memoryScript(offered, []stepwise.ToolResult{{ToolName: memoryCreate, Status: "rejected", Output: "no"}}, memoryCreate, nil)
	if !strings.HasPrefix(reply.Text, "The memory server did not do it (rejected)") {
		t.Errorf("rejected: %q", reply.Text)
	}
}

// The demo model follows one instruction, as a real model follows its
// prompt: told to refund "without looking orders up", it asks for the
// refund of the whole amount left at once, then reports it.
func TestDemoModelRefundsWithoutLookupWhenToldTo(t *testing.T) {
	script := demoScript(nil)
	user := stepwise.ModelItem{Kind: stepwise.ItemUserText, Text: "refund order 7"}
	req := &stepwise.ModelRequest{Instructions: "Refund without looking orders up.", Items: []stepwise.ModelItem{user}}
	reply, err := script(context.Background(), req)
	if err != nil || len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Name != "refund_order" || reply.ToolCalls[0].Arguments != (refundArgs{OrderID: "7"}) {
		t.Fatalf("first reply: %+v %v", reply, err)
	}
	req.Items = append(req.Items, stepwise.ModelItem{Kind: stepwise.ItemToolResult, ToolCallID: "c1", ToolName: "refund_order", Status: "succeeded", Text: "Refunded $62.50 of order 7 (office chair); order status: refunded."})
	if reply, err = script(context.Background(), req); err != nil || reply.Text != "Done. Refunded $62.50 of order 7 (office chair); order status: refunded." {
		t.Fatalf("second reply: %+v %v", reply, err)
	}
	// Without the instruction, it looks the order up first.
	req = &stepwise.ModelRequest{Instructions: defaultInstructions, Items: []stepwise.ModelItem{user}}
	if reply, err = script(context.Background(), req); err != nil || len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Name != "lookup_order" {
		t.Fatalf("default instructions: %+v %v", reply, err)
	}
}
