package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// TestConfigValidateListsMCPServers: validate lists every MCP server an
// agent uses, prints each agent's MCP tools with the effects its sessions
// give them, and warns about a server it cannot list and a policy for a
// tool a server does not offer.
func TestConfigValidateListsMCPServers(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	schema := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "lookup", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "save", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	cfg, err := config.LoadBytes([]byte(fmt.Sprintf(`
plugins:
  p: {command: /bin/true}
mcp_servers:
  notes: {url: %q}
  gone: {url: "http://127.0.0.1:1/mcp", connection_timeout: 2s, connection_attempts: 1}
agents:
  - name: a
    flow_type: A
    runner: p
    mcp: [notes, gone]
    tool_policies:
      notes__save: {effect: idempotent_write}
      notes__delete: {effect: non_idempotent_write}
`, ts.URL+"/mcp")), "")
	if err != nil {
		t.Fatal(err)
	}
	lines, warnings := checkMCPServers(context.Background(), cfg, "test")
	if len(lines) != 1 || lines[0] != "agent a: 2 MCP tool(s): notes__lookup (read, the MCP server's annotations), notes__save (idempotent_write, tool_policies)" {
		t.Errorf("lines = %q", lines)
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{
		"mcp_servers.gone: agent a gets no tools from it",
		`agents[0].tool_policies.notes__delete: MCP server notes does not offer a tool "notes__delete"; the policy never applies`,
		`mcp: msg="mcp: a server could not be listed; its tools are left out" server=gone`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if lines, warnings := checkMCPServers(context.Background(), &config.Config{}, "test"); lines != nil || warnings != nil {
		t.Errorf("a config without MCP servers: %q %q", lines, warnings)
	}
}
