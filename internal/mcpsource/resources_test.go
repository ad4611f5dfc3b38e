package mcpsource

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// docsServer offers a resource, a resource template and a prompt.
func docsServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "file:///faq.md", Name: "faq", MIMEType: "text/markdown"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# FAQ"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///orders/{id}.md", Name: "order"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if strings.Contains(req.Params.URI, "missing") {
				return nil, &jsonrpc.Error{Code: -32002, Message: "resource not found"}
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "order"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["who"]}},
			}}, nil
		})
	return srv
}

func TestResourceToolsDefinitions(t *testing.T) {
	if got := ResourceTools(nil); got != nil {
		t.Errorf("ResourceTools(nil) = %v, want none", names(got))
	}
	tools := ResourceTools([]string{"docs", "files"})
	if diff := cmp.Diff([]string{ListResourcesAndPromptsToolName, ReadResourceToolName, GetPromptToolName}, names(tools)); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	for _, tool := range tools {
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatalf("%s schema: %v", tool.Name, err)
		}
		enum := schema["properties"].(map[string]any)["server"].(map[string]any)["enum"]
		if diff := cmp.Diff([]any{"docs", "files"}, enum); diff != "" || tool.Effect != pluginapi.EffectRead || !IsResourceToolRef(tool.Ref) {
			t.Errorf("%s: enum %v, effect %q, ref %q", tool.Name, enum, tool.Effect, tool.Ref)
		}
	}
	if IsResourceToolRef("mcp:files/read") {
		t.Error("a server's tool is not a resources tool")
	}
}

// TestResourcesAndPromptsTools: the three tools against a server with
// resources and prompts and one without, over both protocol handshakes;
// outputs are JSON with sorted keys; every failure is a tool error the
// model sees.
func TestResourcesAndPromptsTools(t *testing.T) {
	rec := &recorder{}
	docs := serveHTTP(t, docsServer(), rec, nil)
	old := serveHTTPWith(t, docsServer(), rec, nil, &mcp.StreamableHTTPOptions{})
	plain := serveHTTP(t, newMCPServer(rec), rec, nil)
	s := newSource(t, []Server{{Name: "docs", URL: docs}, {Name: "old", URL: old}, {Name: "plain", URL: plain}, {Name: "other", URL: plain}}, Options{})
	allowed := []string{"docs", "old", "plain"}
	call := func(tool, args string) Outcome {
		return s.CallResourceTool(context.Background(), tool, json.RawMessage(args), allowed)
	}
	const listing = `{"prompts":[{"arguments":[{"name":"who","required":true}],"description":"Greets","name":"greet"}],` +
		`"resource_templates":[{"name":"order","uriTemplate":"file:///orders/{id}.md"}],` +
		`"resources":[{"mimeType":"text/markdown","name":"faq","uri":"file:///faq.md"}]}`
	tests := []struct {
		name, tool, args string
		want             Outcome
	}{
		{"listing", ListResourcesAndPromptsToolName, `{"server":"docs"}`, Outcome{Kind: Succeeded, Text: listing}},
		{"listing over initialize", ListResourcesAndPromptsToolName, `{"server":"old"}`, Outcome{Kind: Succeeded, Text: listing}},
		{"a server without them", ListResourcesAndPromptsToolName, `{"server":"plain"}`, Outcome{Kind: Succeeded, Text: `{"prompts":[],"resource_templates":[],"resources":[]}`}},
		{"read", ReadResourceToolName, `{"server":"docs","uri":"file:///faq.md"}`, Outcome{Kind: Succeeded, Text: `{"contents":[{"mimeType":"text/markdown","text":"# FAQ","uri":"file:///faq.md"}]}`}},
		{"read a template", ReadResourceToolName, `{"server":"docs","uri":"file:///orders/7.md"}`, Outcome{Kind: Succeeded, Text: `{"contents":[{"text":"order","uri":"file:///orders/7.md"}]}`}},
		{"prompt", GetPromptToolName, `{"server":"docs","name":"greet","arguments":{"who":"Ada"}}`, Outcome{Kind: Succeeded, Text: `{"description":"A greeting","messages":[{"content":{"text":"Say hello to Ada","type":"text"},"role":"user"}]}`}},
		{"an MCP error", ReadResourceToolName, `{"server":"docs","uri":"file:///orders/missing.md"}`, Outcome{Kind: ToolFailed, Text: "MCP error -32002: resource not found"}},
		{"no server", ListResourcesAndPromptsToolName, `{}`, Outcome{Kind: ToolFailed, Text: "mcp_list_resources_and_prompts needs server, one of docs, old, plain"}},
		{"a server of another agent", ListResourcesAndPromptsToolName, `{"server":"other"}`, Outcome{Kind: ToolFailed, Text: `MCP server "other" is not configured (want one of docs, old, plain)`}},
		{"no uri", ReadResourceToolName, `{"server":"docs"}`, Outcome{Kind: ToolFailed, Text: "mcp_read_resource needs uri"}},
		{"no name", GetPromptToolName, `{"server":"docs"}`, Outcome{Kind: ToolFailed, Text: "mcp_get_prompt needs name"}},
		{"an unknown argument", ReadResourceToolName, `{"server":"docs","url":"x"}`, Outcome{Kind: ToolFailed, Text: `the arguments of mcp_read_resource are invalid: unknown argument "url"`}},
		{"a non-string prompt argument", GetPromptToolName, `{"server":"docs","name":"greet","arguments":{"who":1}}`, Outcome{Kind: ToolFailed,
			Text: "the arguments of mcp_get_prompt are invalid: arguments.who must be a string, not a number"}},
		{"arguments not an object", GetPromptToolName, `{"server":"docs","name":"greet","arguments":["x"]}`, Outcome{Kind: ToolFailed,
			Text: "the arguments of mcp_get_prompt are invalid: arguments must be an object of strings, not an array"}},
		{"not an object", GetPromptToolName, `["docs"]`, Outcome{Kind: ToolFailed,
			Text: "the arguments of mcp_get_prompt are invalid: want a JSON object, not an array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(tt.tool, tt.args)
			if got.Kind != tt.want.Kind || got.Text != tt.want.Text {
				t.Errorf("got %v %q (err %v)\nwant %v %q", got.Kind, got.Text, got.Err, tt.want.Kind, tt.want.Text)
			}
		})
	}
}

func TestResourceToolsOfAnUnreachableServerFail(t *testing.T) {
	s := newSource(t, []Server{{Name: "gone", URL: "http://127.0.0.1:1/mcp", ConnectionAttempts: 2}}, Options{})
	out := s.CallResourceTool(context.Background(), ListResourcesAndPromptsToolName, json.RawMessage(`{"server":"gone"}`), []string{"gone"})
	if out.Kind != ToolFailed || !strings.Contains(out.Text, "2 connection attempts failed") {
		t.Errorf("got %+v", out)
	}
}

func TestAgentsWithResourceTools(t *testing.T) {
	rec := &recorder{}
	s := newSource(t, []Server{{Name: "docs", URL: serveHTTP(t, docsServer(), rec, nil)}}, Options{})
	agents := &Agents{Source: s, Servers: map[string][]string{"a": {"docs"}, "b": {"docs"}}, ResourceTools: map[string]bool{"a": true}}
	tools, err := agents.Tools(context.Background(), "a")
	if err != nil || len(tools) != 3 || tools[0].Name != ListResourcesAndPromptsToolName {
		t.Fatalf("Tools(a) = %v, %v", names(tools), err)
	}
	if tools, _ := agents.Tools(context.Background(), "b"); len(tools) != 0 {
		t.Errorf("Tools(b) = %v, want none (docs has no tools, b no resources tools)", names(tools))
	}
	if out := agents.Call(context.Background(), "a", tools[2].Ref, json.RawMessage(`{"server":"docs","name":"greet","arguments":{"who":"Bo"}}`), "k", nil, nil); out.Kind != Succeeded || !strings.Contains(out.Text, "Say hello to Bo") {
		t.Errorf("a's prompt = %+v", out)
	}
	if out := agents.Call(context.Background(), "b", tools[2].Ref, json.RawMessage(`{"server":"docs","name":"greet"}`), "k", nil, nil); out.Kind != NotSent {
		t.Errorf("b's prompt = %+v, want not sent", out)
	}
}
