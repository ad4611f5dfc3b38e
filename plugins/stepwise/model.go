package stepwise

import (
	"context"
	"encoding/json"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// ModelClient makes one model request per call. It has no retries of its
// own (the RunModel Step retries), sends the whole input every time with no
// provider-side conversation state, streams text and reasoning to output as
// it arrives, and returns each output item provider-exact.
type ModelClient interface {
	CallModel(ctx context.Context, req *ModelRequest, output ModelOutput) (*ModelResponse, error)
	// EstimateInputTokens estimates req's input size without I/O.
	EstimateInputTokens(req *ModelRequest) int64
}

// ModelOutput receives a model call's streamed output.
type ModelOutput interface {
	WriteTextDelta(text string)
	WriteReasoningDelta(text string)
}

// ModelSettings are provider-neutral sampling settings. A zero field is
// left to the provider's default.
type ModelSettings struct {
	Temperature       *float64        `json:"temperature,omitempty"`
	TopP              *float64        `json:"top_p,omitempty"`
	MaxOutputTokens   int64           `json:"max_output_tokens,omitempty"`
	ReasoningEffort   string          `json:"reasoning_effort,omitempty"`
	ThinkingBudget    int64           `json:"thinking_budget,omitempty"`
	ToolChoice        string          `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	Extra             json.RawMessage `json:"extra,omitempty"`
}

// ItemKind says what a ModelItem holds.
type ItemKind string

// Item kinds.
const (
	// ItemUserText is user text, stored provider-neutral.
	ItemUserText ItemKind = "user_text"
	// ItemModelOutput is one model response, stored provider-exact.
	ItemModelOutput ItemKind = "model_output"
	// ItemToolResult is a tool call's result, stored provider-neutral.
	ItemToolResult ItemKind = "tool_result"
)

// ModelItem is one item of model input.
type ModelItem struct {
	Kind ItemKind `json:"type"`
	// Text is the user text, the model's visible text, or the tool output.
	Text string `json:"text,omitempty"`
	// Output holds a ModelOutputItem for ItemModelOutput.
	Output *ModelOutputItem `json:"output,omitempty"`
	// ToolCallID, ToolName and Status describe an ItemToolResult.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Status     string `json:"status,omitempty"`
}

// ModelOutputItem is one model response as the provider sent it.
type ModelOutputItem struct {
	// Provider and API name where Items came from, such as "openai" and
	// "responses". Items replay unchanged only to the same provider and API.
	Provider string `json:"provider"`
	API      string `json:"api"`
	// Items are the provider's output items as JSON text, byte for byte,
	// opaque fields (encrypted reasoning, signatures) included.
	Items []string `json:"items,omitempty"`
	// Text and ToolCalls are the provider-neutral view, used to replay the
	// item to another provider (reasoning is dropped there).
	Text      string          `json:"text,omitempty"`
	ToolCalls []ModelToolCall `json:"tool_calls,omitempty"`
}

// ModelToolCall is one tool call in a model response.
type ModelToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ModelRequest is one model call's whole input.
type ModelRequest struct {
	Model        string
	Instructions string
	Items        []ModelItem
	Tools        []pluginapi.ToolDefinition
	Settings     ModelSettings
}

// ModelResponse is one model call's result.
type ModelResponse struct {
	Output   ModelOutputItem
	Usage    pluginapi.Usage
	Metadata *pluginapi.ModelCallMetadata
}

// EstimateTokens is the spec's estimate: three UTF-8 bytes per token,
// counting instructions, items and tool definitions.
func EstimateTokens(req *ModelRequest) int64 {
	n := len(req.Instructions)
	for _, it := range req.Items {
		n += len(it.Text) + len(it.ToolCallID) + len(it.ToolName)
		if it.Output != nil {
			for _, raw := range it.Output.Items {
				n += len(raw)
			}
			if len(it.Output.Items) == 0 {
				n += len(it.Output.Text)
				for _, c := range it.Output.ToolCalls {
					n += len(c.Name) + len(c.Arguments) + len(c.ID)
				}
			}
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return int64((n + 2) / 3)
}
