package model

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// chatClient calls Chat Completions: OpenAI's (openai-chat) or any
// compatible server's (openai-compatible).
type chatClient struct {
	base
	svc openai.ChatCompletionService
	// itemProvider names the items this client stores and replays exactly:
	// "openai", or "openai-compatible:<host>".
	itemProvider string
	// providerName is ModelCallMetadata.ProviderName.
	providerName string
}

func newChatClient(b base) *chatClient {
	c := &chatClient{base: b, svc: openai.NewChatCompletionService(openaiOptions(b, DefaultOpenAIBase)...)}
	if b.cfg.Provider == ProviderOpenAICompatible {
		c.itemProvider = CompatibleItemProvider(b.cfg.APIBase)
		c.providerName = ProviderOpenAICompatible
	} else {
		c.itemProvider = ProviderOpenAI
		c.providerName = ProviderOpenAI
	}
	return c
}

// CompatibleItemProvider is the ModelOutputItem.Provider of the items of an
// openai-compatible server at apiBase: "openai-compatible:<host[:port]>".
func CompatibleItemProvider(apiBase string) string {
	host := apiBase
	if u, err := url.Parse(apiBase); err == nil && u.Host != "" {
		host = u.Host
	}
	return ProviderOpenAICompatible + ":" + strings.ToLower(host)
}

// EstimateInputTokens implements stepwise.ModelClient: the spec's rule.
func (c *chatClient) EstimateInputTokens(req *stepwise.ModelRequest) int64 {
	return stepwise.EstimateTokens(req)
}

// chatMessage is the stored assistant message of a Chat Completions call.
type chatMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Reasoning        string         `json:"reasoning,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatMessages converts the request to Chat Completions messages. Items of
// itemProvider's chat_completions API replay as their exact JSON text.
func chatMessages(instructions string, items []stepwise.ModelItem, itemProvider string) []openai.ChatCompletionMessageParamUnion {
	var msgs []openai.ChatCompletionMessageParamUnion
	if instructions != "" {
		msgs = append(msgs, openai.SystemMessage(instructions))
	}
	for _, it := range items {
		switch it.Kind {
		case stepwise.ItemUserText:
			msgs = append(msgs, openai.UserMessage(it.Text))
		case stepwise.ItemToolResult:
			msgs = append(msgs, openai.ToolMessage(it.Text, it.ToolCallID))
		case stepwise.ItemModelOutput:
			out := it.Output
			if out == nil {
				continue
			}
			if out.Provider == itemProvider && out.API == APIChatCompletions && len(out.Items) > 0 {
				for _, raw := range out.Items {
					msgs = append(msgs, param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(raw)))
				}
				continue
			}
			if out.Text == "" && len(out.ToolCalls) == 0 {
				continue
			}
			m := chatMessage{Role: "assistant"}
			if out.Text != "" || len(out.ToolCalls) == 0 {
				text := out.Text
				m.Content = &text
			}
			for _, tc := range out.ToolCalls {
				call := chatToolCall{ID: tc.ID, Type: "function"}
				call.Function.Name = tc.Name
				call.Function.Arguments = argumentsOrEmpty(tc.Arguments)
				m.ToolCalls = append(m.ToolCalls, call)
			}
			msgs = append(msgs, param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(marshalNoEscape(m))))
		}
	}
	return msgs
}

func (c *chatClient) params(req *stepwise.ModelRequest, s stepwise.ModelSettings) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(c.model(req)),
		Messages:      chatMessages(req.Instructions, req.Items, c.itemProvider),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.MaxOutputTokens > 0 {
		if c.cfg.Provider == ProviderOpenAICompatible {
			p.MaxTokens = param.NewOpt(s.MaxOutputTokens) // the field every compatible server knows
		} else {
			p.MaxCompletionTokens = param.NewOpt(s.MaxOutputTokens)
		}
	}
	if s.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	for _, t := range req.Tools {
		var tool struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description,omitempty"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		tool.Type = "function"
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, schemaOrEmpty(t.InputSchema)
		p.Tools = append(p.Tools, param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(marshalNoEscape(tool))))
	}
	if len(req.Tools) > 0 {
		switch s.ToolChoice {
		case "":
		case "auto", "none", "required":
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(s.ToolChoice)}
		default:
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: s.ToolChoice})
		}
		if s.ParallelToolCalls != nil {
			p.ParallelToolCalls = param.NewOpt(*s.ParallelToolCalls)
		}
	}
	return p
}

// CallModel implements stepwise.ModelClient: one streamed Chat Completions call.
func (c *chatClient) CallModel(ctx context.Context, req *stepwise.ModelRequest, output stepwise.ModelOutput) (*stepwise.ModelResponse, error) {
	cerr := callError{provider: c.cfg.Provider, api: APIChatCompletions, key: c.key}
	s := c.settings(req)
	extras, err := c.requestExtras(s)
	if err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	for _, f := range extras {
		opts = append(opts, option.WithJSONSet(f.key, f.value))
	}
	model := c.model(req)
	stream := c.svc.NewStreaming(ctx, c.params(req, s), opts...)
	defer stream.Close()
	b := newBatcher(output, c.clock)
	defer b.Close()

	var (
		id, respModel, finish string
		text, reasoning       strings.Builder
		reasoningKey          string
		calls                 = map[int64]*chatToolCall{}
		usage                 openai.CompletionUsage
		haveUsage             bool
	)
	for stream.Next() {
		chunk := stream.Current()
		if len(chunk.Choices) > 0 {
			// A chunk of the answer (not a usage-only chunk).
			b.Pulse()
		}
		if chunk.ID != "" {
			id = chunk.ID
		}
		if chunk.Model != "" {
			respModel = chunk.Model
		}
		if chunk.JSON.Usage.Valid() && chunk.Usage.JSON.PromptTokens.Valid() {
			usage, haveUsage = chunk.Usage, true
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			d := ch.Delta
			for _, key := range []string{"reasoning_content", "reasoning"} {
				// Extra fields are never Valid (no field of the SDK's
				// type holds them); their raw JSON is what the server sent.
				f, ok := d.JSON.ExtraFields[key]
				if !ok || f.Raw() == "" {
					continue
				}
				var r string
				if json.Unmarshal([]byte(f.Raw()), &r) == nil && r != "" {
					reasoningKey = key
					reasoning.WriteString(r)
					b.Reasoning(r)
				}
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				b.Text(d.Content)
			}
			if d.Refusal != "" {
				text.WriteString(d.Refusal)
				b.Text(d.Refusal)
			}
			for _, tc := range d.ToolCalls {
				call := calls[tc.Index]
				if call == nil {
					call = &chatToolCall{Type: "function"}
					calls[tc.Index] = call
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				call.Function.Name += tc.Function.Name
				call.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, cerr.wrap(err)
	}
	if finish == "" {
		return nil, cerr.truncated("a finish_reason")
	}
	b.Close()

	m := chatMessage{Role: "assistant"}
	out := stepwise.ModelOutputItem{Provider: c.itemProvider, API: APIChatCompletions, Text: text.String()}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		call := *calls[i]
		call.Function.Arguments = argumentsOrEmpty(call.Function.Arguments)
		m.ToolCalls = append(m.ToolCalls, call)
		out.ToolCalls = append(out.ToolCalls, stepwise.ModelToolCall{ID: call.ID, Name: call.Function.Name, Arguments: call.Function.Arguments})
	}
	if out.Text != "" || len(m.ToolCalls) == 0 {
		t := out.Text
		m.Content = &t
	}
	switch reasoningKey {
	case "reasoning_content":
		m.ReasoningContent = reasoning.String()
	case "reasoning":
		m.Reasoning = reasoning.String()
	}
	out.Items = []string{marshalNoEscape(m)}

	u := pluginapi.Usage{ModelCalls: 1}
	if haveUsage {
		u.InputTokens = usage.PromptTokens
		u.OutputTokens = usage.CompletionTokens
		u.CachedInputTokens = usage.PromptTokensDetails.CachedTokens
		u.ReasoningTokens = usage.CompletionTokensDetails.ReasoningTokens
		u.TotalTokens = usage.TotalTokens
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
	}
	return &stepwise.ModelResponse{
		Output: out,
		Usage:  u,
		Metadata: &pluginapi.ModelCallMetadata{
			RequestModel:  model,
			ResponseModel: respModel,
			ProviderName:  c.providerName,
			ResponseID:    id,
			FinishReasons: []string{finish},
		},
	}, nil
}

// marshalNoEscape encodes v as compact JSON without HTML escaping, the way
// providers send it.
func marshalNoEscape(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the stored types always encode
	return strings.TrimSuffix(b.String(), "\n")
}
