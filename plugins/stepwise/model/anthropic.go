package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// anthropicClient calls the Anthropic Messages API.
type anthropicClient struct {
	base
	svc anthropic.MessageService
}

func newAnthropicClient(b base) *anthropicClient {
	baseURL := b.cfg.APIBase
	if baseURL == "" {
		baseURL = DefaultAnthropicBase
	}
	// The SDK appends "v1/messages": accept a base that already ends in /v1.
	baseURL = strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1") + "/"
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(b.http),
		option.WithMaxRetries(0),
		option.WithAPIKey(b.key),
		// The SDK's encoder escapes <, > and & in strings; send them as the
		// provider wrote them, so stored blocks go back byte for byte.
		option.WithMiddleware(unescapeHTMLMiddleware),
	}
	return &anthropicClient{base: b, svc: anthropic.NewMessageService(opts...)}
}

// EstimateInputTokens implements stepwise.ModelClient: the spec's rule.
func (c *anthropicClient) EstimateInputTokens(req *stepwise.ModelRequest) int64 {
	return stepwise.EstimateTokens(req)
}

// SupportsForcedToolChoice implements stepwise.ForcedToolChoiceChecker, as
// the reference's LiteLLM client decides for Anthropic: extended thinking
// (a thinking budget, or a reasoning_effort other than "none") and the
// Claude Opus 5.5 and Sonnet 5.5 models refuse a forced tool choice.
func (c *anthropicClient) SupportsForcedToolChoice(model string, s stepwise.ModelSettings) bool {
	if thinkingBudget(s) > 0 {
		return false
	}
	m := strings.ToLower(model)
	for _, refuses := range []string{"opus-5-5", "opus-5.5", "sonnet-5-5", "sonnet-5.5"} {
		if strings.Contains(m, refuses) {
			return false
		}
	}
	return true
}

// thinkingBudget is the extended thinking budget of the settings (0: off):
// thinking_budget, else reasoning_effort mapped as LiteLLM maps it.
func thinkingBudget(s stepwise.ModelSettings) int64 {
	if s.ThinkingBudget > 0 {
		return s.ThinkingBudget
	}
	switch s.ReasoningEffort {
	case "minimal", "low":
		return 1024
	case "medium":
		return 2048
	case "high":
		return 4096
	case "xhigh", "max":
		return 8192
	}
	return 0
}

// anthropicMessage is one message being built.
type anthropicMessage struct {
	assistant bool
	blocks    []anthropic.ContentBlockParamUnion
	// results are a user message's tool results, which go first.
	results []anthropic.ContentBlockParamUnion
	// firstType is the type of an assistant message's first block.
	firstType string
	toolUse   bool
}

// anthropicMessages converts the request's items. Consecutive items of one
// role share a message; a user message lists its tool results first. Content
// blocks of anthropic/messages replay unchanged: thinking and
// redacted_thinking as their exact JSON text, the others through the SDK's
// ToParam.
func anthropicMessages(items []stepwise.ModelItem) ([]anthropicMessage, error) {
	var msgs []anthropicMessage
	cur := func(assistant bool) *anthropicMessage {
		if len(msgs) == 0 || msgs[len(msgs)-1].assistant != assistant {
			msgs = append(msgs, anthropicMessage{assistant: assistant})
		}
		return &msgs[len(msgs)-1]
	}
	addAssistant := func(m *anthropicMessage, typ string, b anthropic.ContentBlockParamUnion) {
		if len(m.blocks) == 0 {
			m.firstType = typ
		}
		if typ == "tool_use" {
			m.toolUse = true
		}
		m.blocks = append(m.blocks, b)
	}
	for i, it := range items {
		switch it.Kind {
		case stepwise.ItemUserText:
			if it.Text != "" {
				m := cur(false)
				m.blocks = append(m.blocks, anthropic.NewTextBlock(it.Text))
			}
		case stepwise.ItemToolResult:
			m := cur(false)
			r := anthropic.ToolResultBlockParam{ToolUseID: anthropicToolID(it.ToolCallID)}
			if it.Text != "" {
				r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: it.Text}}}
			}
			if it.Status == string(pluginapi.ToolCallFailed) {
				r.IsError = param.NewOpt(true)
			}
			m.results = append(m.results, anthropic.ContentBlockParamUnion{OfToolResult: &r})
		case stepwise.ItemModelOutput:
			out := it.Output
			if out == nil {
				continue
			}
			if out.Provider == ProviderAnthropic && out.API == APIMessages && len(out.Items) > 0 {
				m := cur(true)
				for j, raw := range out.Items {
					var head struct {
						Type string `json:"type"`
						Text string `json:"text"`
					}
					if err := json.Unmarshal([]byte(raw), &head); err != nil {
						return nil, fmt.Errorf("item %d: content block %d is not JSON: %w", i, j, err)
					}
					switch head.Type {
					case "thinking", "redacted_thinking":
						addAssistant(m, head.Type, param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(raw)))
					case "text":
						if head.Text != "" { // the API refuses empty text blocks
							addAssistant(m, head.Type, anthropic.NewTextBlock(head.Text))
						}
					default:
						var blk anthropic.ContentBlockUnion
						if err := blk.UnmarshalJSON([]byte(raw)); err != nil {
							return nil, fmt.Errorf("item %d: content block %d: %w", i, j, err)
						}
						addAssistant(m, head.Type, blk.ToParam())
					}
				}
				continue
			}
			// Another provider or API: its text and tool calls, no reasoning.
			if out.Text == "" && len(out.ToolCalls) == 0 {
				continue
			}
			m := cur(true)
			if out.Text != "" {
				addAssistant(m, "text", anthropic.NewTextBlock(out.Text))
			}
			for _, tc := range out.ToolCalls {
				addAssistant(m, "tool_use", anthropic.NewToolUseBlock(anthropicToolID(tc.ID), toolInput(tc.Arguments), tc.Name))
			}
		}
	}
	return msgs, nil
}

// toolInput is a tool call's arguments as the object Anthropic wants.
func toolInput(args string) any {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil || m == nil {
		return map[string]any{}
	}
	return json.RawMessage(args)
}

// anthropicToolID maps a tool call ID to Anthropic's alphabet
// ([a-zA-Z0-9_-]); IDs of Anthropic's own are unchanged.
func anthropicToolID(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "call"
	}
	return b.String()
}

func (c *anthropicClient) params(req *stepwise.ModelRequest, s stepwise.ModelSettings) (anthropic.MessageNewParams, error) {
	msgs, err := anthropicMessages(req.Items)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	budget := thinkingBudget(s)
	if budget > 0 && len(msgs) >= 2 {
		// Thinking cannot start in the middle of a tool loop: when the
		// assistant turn whose tool results this call sends came from
		// another provider (no leading thinking block), think next turn.
		last, prev := msgs[len(msgs)-1], msgs[len(msgs)-2]
		if !last.assistant && len(last.results) > 0 && prev.assistant && prev.toolUse &&
			prev.firstType != "thinking" && prev.firstType != "redacted_thinking" {
			budget = 0
		}
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(c.model(req))}
	for _, m := range msgs {
		blocks := append(m.results, m.blocks...)
		if len(blocks) == 0 {
			continue
		}
		if m.assistant {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		}
	}
	if req.Instructions != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.Instructions}}
	}
	p.MaxTokens = s.MaxOutputTokens
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultAnthropicMaxTokens + budget
	}
	if budget > 0 {
		if p.MaxTokens <= budget {
			return p, pluginapi.Permanent(fmt.Errorf("anthropic messages: max_output_tokens %d must exceed the thinking budget %d", p.MaxTokens, budget))
		}
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(budget)
	}
	for _, t := range req.Tools {
		raw := marshalNoEscape(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{t.Name, t.Description, schemaOrEmpty(t.InputSchema)})
		p.Tools = append(p.Tools, param.Override[anthropic.ToolUnionParam](json.RawMessage(raw)))
	}
	if len(req.Tools) > 0 {
		var disable param.Opt[bool]
		if s.ParallelToolCalls != nil {
			disable = param.NewOpt(!*s.ParallelToolCalls)
		}
		switch s.ToolChoice {
		case "":
			if s.ParallelToolCalls != nil {
				p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
			}
		case "auto":
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
		case "none":
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
		case "required":
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: disable}}
		default:
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: s.ToolChoice, DisableParallelToolUse: disable}}
		}
	}
	return p, nil
}

// CallModel implements stepwise.ModelClient: one streamed Messages call.
func (c *anthropicClient) CallModel(ctx context.Context, req *stepwise.ModelRequest, output stepwise.ModelOutput) (*stepwise.ModelResponse, error) {
	cerr := callError{provider: ProviderAnthropic, api: APIMessages, key: c.key}
	s := c.settings(req)
	extras, err := c.requestExtras(s)
	if err != nil {
		return nil, err
	}
	p, err := c.params(req, s)
	if err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	// The SDK has no sampling fields (newer models refuse them); older
	// models take them as extra fields.
	if s.Temperature != nil {
		opts = append(opts, option.WithJSONSet("temperature", *s.Temperature))
	}
	if s.TopP != nil {
		opts = append(opts, option.WithJSONSet("top_p", *s.TopP))
	}
	for _, f := range extras {
		opts = append(opts, option.WithJSONSet(f.key, f.value))
	}
	model := c.model(req)
	stream := c.svc.NewStreaming(ctx, p, opts...)
	defer stream.Close()
	b := newBatcher(output, c.clock)
	defer b.Close()

	var (
		msg  anthropic.Message
		done bool
	)
	for stream.Next() {
		ev := stream.Current()
		if t := string(ev.Type); t == "content_block_delta" || t == "content_block_start" {
			// A chunk of the answer (not the message's start or end).
			b.Pulse()
		}
		if err := msg.Accumulate(ev); err != nil {
			return nil, cerr.wrap(fmt.Errorf("malformed stream: %w", err))
		}
		switch ev.Type {
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				b.Text(ev.Delta.Text)
			case "thinking_delta":
				b.Reasoning(ev.Delta.Thinking)
			}
		case "message_stop":
			done = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, cerr.wrap(err)
	}
	if !done {
		return nil, cerr.truncated("message_stop")
	}
	b.Close()

	out := stepwise.ModelOutputItem{Provider: ProviderAnthropic, API: APIMessages}
	var text strings.Builder
	for _, blk := range msg.Content {
		out.Items = append(out.Items, compactJSON(blk.RawJSON()))
		switch blk.Type {
		case "text":
			text.WriteString(blk.Text)
		case "tool_use":
			args := strings.TrimSpace(string(blk.Input))
			out.ToolCalls = append(out.ToolCalls, stepwise.ModelToolCall{ID: blk.ID, Name: blk.Name, Arguments: argumentsOrEmpty(args)})
		}
	}
	out.Text = text.String()
	u := msg.Usage
	in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	usage := pluginapi.Usage{
		InputTokens:       in,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.CacheReadInputTokens,
		ReasoningTokens:   u.OutputTokensDetails.ThinkingTokens,
		TotalTokens:       in + u.OutputTokens,
		ModelCalls:        1,
	}
	var finish []string
	if msg.StopReason != "" {
		finish = []string{string(msg.StopReason)}
	}
	return &stepwise.ModelResponse{
		Output: out,
		Usage:  usage,
		Metadata: &pluginapi.ModelCallMetadata{
			RequestModel:  model,
			ResponseModel: string(msg.Model),
			ProviderName:  ProviderAnthropic,
			ResponseID:    msg.ID,
			FinishReasons: finish,
		},
	}, nil
}

// unescapeHTMLMiddleware rewrites the request body's \u003c, \u003e and
// \u0026 escapes back to <, > and &: the same JSON value, in the bytes the
// provider sent.
func unescapeHTMLMiddleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return next(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	body = unescapeHTMLJSON(body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	return next(req)
}

// unescapeHTMLJSON replaces the escapes \u003c, \u003e and \u0026 (any case)
// in JSON text with the characters; an escaped backslash before "u003c" is
// left alone.
func unescapeHTMLJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		// An escape: \uXXXX or a two-byte escape such as \\ or \".
		if i+5 < len(b) && b[i+1] == 'u' && b[i+2] == '0' && b[i+3] == '0' {
			switch strings.ToLower(string(b[i+4 : i+6])) {
			case "3c":
				out = append(out, '<')
				i += 5
				continue
			case "3e":
				out = append(out, '>')
				i += 5
				continue
			case "26":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i])
		if i+1 < len(b) {
			i++
			out = append(out, b[i])
		}
	}
	return out
}
