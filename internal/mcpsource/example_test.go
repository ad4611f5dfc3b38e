package mcpsource_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// An MCP server with one read-only tool, listed and called through a
// Source the way a tool Step does: by the reference stored on the call.
func Example() {
	server := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{
		Name:        "get_order",
		Description: "Looks up an order.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order 7: shipped"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()

	source, err := mcpsource.New([]mcpsource.Server{
		{Name: "shop", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer not-logged"}},
	}, mcpsource.Options{})
	if err != nil {
		panic(err)
	}
	defer source.Close()

	ctx := context.Background()
	tools, err := source.Tools(ctx)
	if err != nil {
		panic(err)
	}
	policies := pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified}
	for _, tool := range tools {
		p := tool.Policy(policies)
		fmt.Println(tool.Name, tool.Ref, p.Effect, "approval:", p.ApprovalRequired())
	}

	out := source.Call(ctx, tools[0].Ref, []byte(`{"id":"7"}`), "flow-1/turn-1/call-1", nil)
	fmt.Println(out.Kind, out.Text)
	// Output:
	// shop__get_order mcp:shop/get_order read approval: false
	// succeeded order 7: shipped
}
