package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// responsesClient calls the OpenAI Responses API.
type responsesClient struct {
	base
	svc responses.ResponseService
}

func newResponsesClient(b base) *responsesClient {
	return &responsesClient{base: b, svc: responses.NewResponseService(openaiOptions(b, DefaultOpenAIBase)...)}
}

// openaiOptions are the client options of the OpenAI SDK: no environment
// defaults (the service is built directly, so OPENAI_BASE_URL and friends
// are never read), the SDK's retries off, and the key only when there is one.
func openaiOptions(b base, defaultBase string) []option.RequestOption {
	baseURL := b.cfg.APIBase
	if baseURL == "" {
		baseURL = defaultBase
	}
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(b.http),
		option.WithMaxRetries(0),
	}
	if b.key != "" {
		opts = append(opts, option.WithAPIKey(b.key))
	}
	return opts
}

// EstimateInputTokens implements stepwise.ModelClient: the spec's rule.
func (c *responsesClient) EstimateInputTokens(req *stepwise.ModelRequest) int64 {
	return stepwise.EstimateTokens(req)
}

// responsesInput converts the request's items to Responses input items.
// Items of this provider and API replay as their exact JSON text.
func responsesInput(items []stepwise.ModelItem) []responses.ResponseInputItemUnionParam {
	var in []responses.ResponseInputItemUnionParam
	for _, it := range items {
		switch it.Kind {
		case stepwise.ItemUserText:
			in = append(in, responses.ResponseInputItemParamOfMessage(it.Text, responses.EasyInputMessageRoleUser))
		case stepwise.ItemToolResult:
			item := responses.ResponseInputItemParamOfFunctionCallOutput(it.Text)
			item.OfFunctionCallOutput.CallID = param.NewOpt(it.ToolCallID)
			in = append(in, item)
		case stepwise.ItemModelOutput:
			out := it.Output
			if out == nil {
				continue
			}
			if out.Provider == ProviderOpenAI && out.API == APIResponses && len(out.Items) > 0 {
				for _, raw := range out.Items {
					in = append(in, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(raw)))
				}
				continue
			}
			// Another provider or API: its text and tool calls, no reasoning.
			if out.Text != "" {
				in = append(in, responses.ResponseInputItemParamOfMessage(out.Text, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range out.ToolCalls {
				in = append(in, responses.ResponseInputItemParamOfFunctionCall(argumentsOrEmpty(tc.Arguments), tc.ID, tc.Name))
			}
		}
	}
	return in
}

func (c *responsesClient) params(req *stepwise.ModelRequest, s stepwise.ModelSettings) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model:   shared.ResponsesModel(c.model(req)),
		Input:   responses.ResponseNewParamsInputUnion{OfInputItemList: responsesInput(req.Items)},
		Store:   param.NewOpt(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
	if req.Instructions != "" {
		p.Instructions = param.NewOpt(req.Instructions)
	}
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.MaxOutputTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(s.MaxOutputTokens)
	}
	if s.ReasoningEffort != "" {
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(s.ReasoningEffort)}
		if s.ReasoningEffort != "none" {
			p.Reasoning.Summary = shared.ReasoningSummaryAuto
		}
	}
	for _, t := range req.Tools {
		raw, _ := json.Marshal(struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		}{"function", t.Name, t.Description, schemaOrEmpty(t.InputSchema), false})
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](json.RawMessage(raw)))
	}
	if len(req.Tools) > 0 {
		switch s.ToolChoice {
		case "":
		case "auto", "none", "required":
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(responses.ToolChoiceOptions(s.ToolChoice))}
		default:
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: s.ToolChoice}}
		}
		if s.ParallelToolCalls != nil {
			p.ParallelToolCalls = param.NewOpt(*s.ParallelToolCalls)
		}
	}
	return p
}

// CallModel implements stepwise.ModelClient: one streamed Responses call.
func (c *responsesClient) CallModel(ctx context.Context, req *stepwise.ModelRequest, output stepwise.ModelOutput) (*stepwise.ModelResponse, error) {
	cerr := callError{provider: ProviderOpenAI, api: APIResponses, key: c.key}
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
		done       bool
		final      responses.Response
		itemsByIdx = map[int64]string{}
	)
	for stream.Next() {
		ev := stream.Current()
		if strings.HasSuffix(ev.Type, ".delta") {
			// A chunk of the answer (not response.created and the like).
			b.Pulse()
		}
		switch ev.Type {
		case "response.output_text.delta":
			b.Text(ev.Delta)
		case "response.refusal.delta":
			b.Text(ev.Delta)
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			b.Reasoning(ev.Delta)
		case "response.reasoning_summary_part.done":
			b.Reasoning("\n\n")
		case "response.output_item.done":
			itemsByIdx[ev.OutputIndex] = ev.JSON.Item.Raw()
		case "response.completed", "response.incomplete":
			final = ev.Response
			done = true
		case "response.failed":
			e := ev.Response.Error
			return nil, cerr.streamError(string(e.Code), e.Message, ev.Response.RawJSON())
		case "error":
			return nil, cerr.streamError(ev.Code, ev.Message, ev.RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		return nil, cerr.wrap(err)
	}
	if !done {
		return nil, cerr.truncated("response.completed")
	}
	b.Close()

	var raws []string
	if len(final.Output) > 0 {
		for _, it := range final.Output {
			raws = append(raws, it.RawJSON())
		}
	} else {
		idx := make([]int64, 0, len(itemsByIdx))
		for i := range itemsByIdx {
			idx = append(idx, i)
		}
		sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
		for _, i := range idx {
			raws = append(raws, itemsByIdx[i])
		}
	}
	out, err := responsesOutput(raws)
	if err != nil {
		return nil, cerr.wrap(err)
	}
	u := final.Usage
	usage := pluginapi.Usage{
		InputTokens:       u.InputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.InputTokensDetails.CachedTokens,
		ReasoningTokens:   u.OutputTokensDetails.ReasoningTokens,
		TotalTokens:       u.TotalTokens,
		ModelCalls:        1,
	}
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	finish := "stop"
	switch {
	case final.Status == "incomplete" && final.IncompleteDetails.Reason == "max_output_tokens":
		finish = "length"
	case final.Status == "incomplete" && final.IncompleteDetails.Reason != "":
		finish = string(final.IncompleteDetails.Reason)
	case len(out.ToolCalls) > 0:
		finish = "tool_calls"
	}
	return &stepwise.ModelResponse{
		Output: out,
		Usage:  usage,
		Metadata: &pluginapi.ModelCallMetadata{
			RequestModel:  model,
			ResponseModel: string(final.Model),
			ProviderName:  ProviderOpenAI,
			ResponseID:    final.ID,
			FinishReasons: []string{finish},
		},
	}, nil
}

// responsesOutput builds the stored item from the Responses output items.
func responsesOutput(raws []string) (stepwise.ModelOutputItem, error) {
	out := stepwise.ModelOutputItem{Provider: ProviderOpenAI, API: APIResponses}
	var text strings.Builder
	for _, raw := range raws {
		raw = compactJSON(raw)
		var it struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(raw), &it); err != nil {
			return out, fmt.Errorf("output item is not JSON: %w", err)
		}
		out.Items = append(out.Items, raw)
		switch it.Type {
		case "message":
			for _, part := range it.Content {
				switch part.Type {
				case "output_text":
					text.WriteString(part.Text)
				case "refusal":
					text.WriteString(part.Refusal)
				}
			}
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, stepwise.ModelToolCall{ID: it.CallID, Name: it.Name, Arguments: argumentsOrEmpty(it.Arguments)})
		}
	}
	out.Text = text.String()
	return out, nil
}

// compactJSON removes insignificant whitespace, so the stored text is what
// the SDK sends back; providers already send compact JSON.
func compactJSON(raw string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return raw
	}
	return b.String()
}

func argumentsOrEmpty(a string) string {
	if strings.TrimSpace(a) == "" {
		return "{}"
	}
	return a
}

func schemaOrEmpty(s json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(s)) == 0 || string(bytes.TrimSpace(s)) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}
