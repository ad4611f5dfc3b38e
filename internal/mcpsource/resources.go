package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// The names of the resources and prompts tools (the spec's). They are
// reserved while an agent has them; key a tool policy by them to require
// approval.
const (
	ListResourcesAndPromptsToolName = "mcp_list_resources_and_prompts"
	ReadResourceToolName            = "mcp_read_resource"
	GetPromptToolName               = "mcp_get_prompt"
)

// resourceToolsServer is the server part of the three tools' references:
// no configured server can have it (names have no '*').
const resourceToolsServer = "*"

// IsResourceToolRef reports whether ref is one of the resources and
// prompts tools, which take their server as an argument.
func IsResourceToolRef(ref string) bool {
	server, _, ok := ParseRef(ref)
	return ok && server == resourceToolsServer
}

// ResourceTools are the resources and prompts tools over servers (in
// order): read tools whose server argument is an enum of the names. There
// are none without servers.
func ResourceTools(servers []string) []Tool {
	if len(servers) == 0 {
		return nil
	}
	enum, _ := json.Marshal(servers)
	server := `"server":{"type":"string","enum":` + string(enum) + `,"description":"The MCP server to ask."}`
	def := func(name, description, props string, required ...string) Tool {
		req, _ := json.Marshal(append([]string{"server"}, required...))
		schema := `{"type":"object","properties":{` + server + props + `},"required":` + string(req) + `,"additionalProperties":false}`
		return Tool{Name: name, Description: description, InputSchema: json.RawMessage(schema),
			Ref: Ref(resourceToolsServer, name), Server: resourceToolsServer, MCPName: name, Effect: pluginapi.EffectRead}
	}
	return []Tool{
		def(ListResourcesAndPromptsToolName, "Lists the resources, resource templates and prompts of an MCP server.", ""),
		def(ReadResourceToolName, "Reads a resource of an MCP server by its URI.",
			`,"uri":{"type":"string","description":"The resource's URI."}`, "uri"),
		def(GetPromptToolName, "Gets a prompt of an MCP server, filled in with its arguments.",
			`,"name":{"type":"string","description":"The prompt's name."},"arguments":{"type":"object","additionalProperties":{"type":"string"},"description":"The prompt's arguments, strings by name."}`, "name"),
	}
}

// resourceArgs are the three tools' arguments.
type resourceArgs struct {
	Server    string            `json:"server"`
	URI       string            `json:"uri"`
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments"`
}

// CallResourceTool runs one of the resources and prompts tools (mcpName)
// on the server its arguments name, which must be one of allowed. It opens
// a new connection with the server's connection attempts, and bounds each
// request by the server's connection timeout. Every failure (bad
// arguments, a server not allowed or unreachable, an MCP error answer) is
// ToolFailed, with a text the model sees; a result is JSON with sorted
// keys.
func (s *Source) CallResourceTool(ctx context.Context, mcpName string, arguments json.RawMessage, allowed []string) Outcome {
	var args resourceArgs
	if len(strings.TrimSpace(string(arguments))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(arguments)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			return Outcome{Kind: ToolFailed, Text: fmt.Sprintf("the arguments of %s are invalid: %s", mcpName, argumentError(err))}
		}
	}
	missing := func(field string) Outcome {
		return Outcome{Kind: ToolFailed, Text: fmt.Sprintf("%s needs %s", mcpName, field)}
	}
	switch {
	case args.Server == "":
		return missing("server, one of " + strings.Join(allowed, ", "))
	case !slices.Contains(allowed, args.Server) || s.byName[args.Server] == nil:
		return Outcome{Kind: ToolFailed, Text: fmt.Sprintf("MCP server %q is not configured (want one of %s)", args.Server, strings.Join(allowed, ", "))}
	case mcpName == ReadResourceToolName && args.URI == "":
		return missing("uri")
	case mcpName == GetPromptToolName && args.Name == "":
		return missing("name")
	case mcpName != ListResourcesAndPromptsToolName && mcpName != ReadResourceToolName && mcpName != GetPromptToolName:
		return Outcome{Kind: NotSent, Err: fmt.Errorf("mcp: %q is not a resources and prompts tool", mcpName)}
	}
	srv := s.byName[args.Server]
	conn, err := s.connect(ctx, srv, nil, nil)
	if err != nil {
		return Outcome{Kind: ToolFailed, Text: err.Error()}
	}
	defer conn.close()
	rctx, cancel := context.WithTimeout(ctx, srv.connectionTimeout())
	defer cancel()
	var out any
	switch mcpName {
	case ListResourcesAndPromptsToolName:
		out, err = listResourcesAndPrompts(rctx, conn.session)
	case ReadResourceToolName:
		var res *mcp.ReadResourceResult
		if res, err = conn.session.ReadResource(rctx, &mcp.ReadResourceParams{URI: args.URI}); err == nil {
			out = map[string]any{"contents": nonNil(res.Contents)}
		}
	case GetPromptToolName:
		var res *mcp.GetPromptResult
		if res, err = conn.session.GetPrompt(rctx, &mcp.GetPromptParams{Name: args.Name, Arguments: args.Arguments}); err == nil {
			out = map[string]any{"description": res.Description, "messages": nonNil(res.Messages)}
		}
	}
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return Outcome{Kind: ToolFailed, Text: srv.redactor.String(fmt.Sprintf("MCP error %d: %s", werr.Code, werr.Message))}
		}
		return Outcome{Kind: ToolFailed, Text: srv.errorf("mcp server %q: %s: %v", srv.Name, mcpName, err).Error()}
	}
	return Outcome{Kind: Succeeded, Text: sortedJSON(out)}
}

// listResourcesAndPrompts reads every page of the server's resources,
// resource templates and prompts; a kind the server does not offer is an
// empty list.
func listResourcesAndPrompts(ctx context.Context, cs *mcp.ClientSession) (map[string]any, error) {
	var caps *mcp.ServerCapabilities
	if init := cs.InitializeResult(); init != nil {
		caps = init.Capabilities
	}
	resources, templates, prompts := []*mcp.Resource{}, []*mcp.ResourceTemplate{}, []*mcp.Prompt{}
	if caps != nil && caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return nil, err
			}
			resources = append(resources, r)
		}
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return nil, err
			}
			templates = append(templates, t)
		}
	}
	if caps != nil && caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, err
			}
			prompts = append(prompts, p)
		}
	}
	return map[string]any{"prompts": prompts, "resource_templates": templates, "resources": resources}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// argumentError describes a decoding error of the tools' arguments in the
// model's terms (argument names, JSON types), never Go's.
func argumentError(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		want := "a string"
		if typ.Type != nil && typ.Type.Kind().String() == "map" {
			want = "an object of strings"
		}
		field := typ.Field
		if field == "" {
			return "want a JSON object, not " + article(typ.Value)
		}
		return field + " must be " + want + ", not " + article(typ.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown argument " + name
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func article(jsonType string) string {
	switch jsonType {
	case "array", "object":
		return "an " + jsonType
	}
	return "a " + jsonType
}
