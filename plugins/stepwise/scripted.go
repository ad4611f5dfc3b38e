package stepwise

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// ScriptedReply is what a script answers to one model request.
type ScriptedReply struct {
	Text      string
	Reasoning string
	ToolCalls []ScriptedToolCall
}

// ScriptedToolCall is one tool call of a scripted reply. Arguments is
// marshalled to JSON unless it is already a string or json.RawMessage.
type ScriptedToolCall struct {
	Name      string
	Arguments any
}

// ScriptedModelClient answers each call from a function of the request, so
// an agent runs without a model key: a demo, a tutorial or a test. Keep the
// script deterministic: a crashed RunModel runs it again.
type ScriptedModelClient struct {
	respond     func(ctx context.Context, req *ModelRequest) (ScriptedReply, error)
	maxRecorded int

	mu       sync.Mutex
	requests []*ModelRequest
}

// NewScriptedModelClient returns a client that answers with respond.
func NewScriptedModelClient(respond func(ctx context.Context, req *ModelRequest) (ScriptedReply, error)) *ScriptedModelClient {
	return &ScriptedModelClient{respond: respond, maxRecorded: 100}
}

// Requests returns the latest requests, oldest first (at most 100).
func (c *ScriptedModelClient) Requests() []*ModelRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*ModelRequest(nil), c.requests...)
}

// CallModel runs the script and streams its text in a few deltas.
func (c *ScriptedModelClient) CallModel(ctx context.Context, req *ModelRequest, output ModelOutput) (*ModelResponse, error) {
	c.mu.Lock()
	c.requests = append(c.requests, req)
	if len(c.requests) > c.maxRecorded {
		c.requests = c.requests[len(c.requests)-c.maxRecorded:]
	}
	c.mu.Unlock()
	reply, err := c.respond(ctx, req)
	if err != nil {
		return nil, err
	}
	out := ModelOutputItem{Provider: "scripted", API: "scripted", Text: reply.Text}
	for i, tc := range reply.ToolCalls {
		args, err := argumentsJSON(tc.Arguments)
		if err != nil {
			return nil, fmt.Errorf("scripted tool call %s: %w", tc.Name, err)
		}
		// Deterministic and unique within a turn: the request grows with
		// every response of the turn.
		out.ToolCalls = append(out.ToolCalls, ModelToolCall{ID: fmt.Sprintf("call_%d_%d", len(req.Items), i), Name: tc.Name, Arguments: args})
	}
	raw, err := marshalItem(struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		Reasoning string          `json:"reasoning,omitempty"`
		ToolCalls []ModelToolCall `json:"tool_calls,omitempty"`
	}{"scripted_output", reply.Text, reply.Reasoning, out.ToolCalls})
	if err != nil {
		return nil, err
	}
	out.Items = []string{string(raw)}
	if reply.Reasoning != "" {
		output.WriteReasoningDelta(reply.Reasoning)
	}
	for _, chunk := range chunks(reply.Text, 3) {
		output.WriteTextDelta(chunk)
	}
	in := EstimateTokens(req)
	outTokens := int64((len(raw) + 2) / 3)
	return &ModelResponse{
		Output:   out,
		Usage:    pluginapi.Usage{InputTokens: in, OutputTokens: outTokens, TotalTokens: in + outTokens, ModelCalls: 1},
		Metadata: &pluginapi.ModelCallMetadata{RequestModel: req.Model, ResponseModel: req.Model, ProviderName: "scripted"},
	}, nil
}

// EstimateInputTokens implements ModelClient.
func (c *ScriptedModelClient) EstimateInputTokens(req *ModelRequest) int64 {
	return EstimateTokens(req)
}

func argumentsJSON(v any) (string, error) {
	switch a := v.(type) {
	case nil:
		return "{}", nil
	case string:
		return a, nil
	case json.RawMessage:
		return string(a), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// chunks splits text into about n pieces at word boundaries.
func chunks(text string, n int) []string {
	if text == "" {
		return nil
	}
	words := strings.SplitAfter(text, " ")
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		end := i + per
		if end > len(words) {
			end = len(words)
		}
		out = append(out, strings.Join(words[i:end], ""))
	}
	return out
}

// UserTexts returns the user texts of a request, oldest first.
func UserTexts(req *ModelRequest) []string {
	var out []string
	for _, it := range req.Items {
		if it.Kind == ItemUserText {
			out = append(out, it.Text)
		}
	}
	return out
}

// ToolResult is a tool result as a script reads it.
type ToolResult struct {
	ToolCallID string
	ToolName   string
	Status     string
	Output     string
}

// ToolResults returns the tool results after the last user text: the
// results of the current turn, oldest first.
func ToolResults(req *ModelRequest) []ToolResult {
	var out []ToolResult
	for _, it := range req.Items {
		switch it.Kind {
		case ItemUserText:
			out = nil
		case ItemToolResult:
			out = append(out, ToolResult{ToolCallID: it.ToolCallID, ToolName: it.ToolName, Status: it.Status, Output: it.Text})
		}
	}
	return out
}
