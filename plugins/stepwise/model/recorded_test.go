package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// fakeProvider serves recorded SSE streams in order (the last one again
// when they run out) and keeps every request.
type fakeProvider struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	streams [][]byte
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func newFakeProvider(t *testing.T, streams ...[]byte) *fakeProvider {
	f := &fakeProvider{t: t, streams: streams}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.paths = append(f.paths, r.URL.Path)
		s := f.streams[min(n, len(f.streams)-1)]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(s)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) body(i int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		f.t.Fatalf("request %d was not made (%d requests)", i, len(f.bodies))
	}
	return f.bodies[i]
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readStrings(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal(readTestdata(t, name), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Minimal final answers, to end a replay call.
var (
	responsesText = []byte("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"Done.\"}],\"role\":\"assistant\"}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_2\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-5-mini-2025-08-07\",\"output\":[],\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":12}}}\n\n")
	chatText      = []byte("data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Done.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	anthropicText = []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Done.\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
)

const testKey = "sk-test-0123456789abcdef"

// TestRecordedResponsesStream parses a recorded Responses stream with an
// encrypted reasoning item and two parallel function calls, then replays
// the stored items byte for byte after the tool results.
func TestRecordedResponsesStream(t *testing.T) {
	fp := newFakeProvider(t, readTestdata(t, "openai_responses_reasoning_tools.sse"), responsesText)
	c := mustNew(t, Config{Provider: ProviderOpenAI, Name: "gpt-5-mini", APIBase: fp.srv.URL + "/v1"}, envOf("OPENAI_API_KEY", testKey))
	items := []stepwise.ModelItem{user("What are orders 3 and 4?")}
	req := &stepwise.ModelRequest{Instructions: "You look orders up.", Items: items, Tools: []pluginapi.ToolDefinition{lookupTool}}
	resp, rec, err := call(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	want := readStrings(t, "openai_responses_reasoning_tools.items.json")
	if strings.Join(resp.Output.Items, "\n") != strings.Join(want, "\n") {
		t.Fatalf("items:\n%s\nwant\n%s", strings.Join(resp.Output.Items, "\n"), strings.Join(want, "\n"))
	}
	if resp.Output.Provider != "openai" || resp.Output.API != "responses" || resp.Output.Text != "" {
		t.Errorf("output = %+v", resp.Output)
	}
	wantCalls := []stepwise.ModelToolCall{
		{ID: "call_Qx7mZ2pL9vK4nR8sT1wY5bC3", Name: "lookup_order", Arguments: `{"order_id":"3"}`},
		{ID: "call_Hd2kF8jN3mP6qS9tV4xZ7aB1", Name: "lookup_order", Arguments: `{"order_id":"4"}`},
	}
	if fmt.Sprint(resp.Output.ToolCalls) != fmt.Sprint(wantCalls) {
		t.Errorf("tool calls = %+v", resp.Output.ToolCalls)
	}
	wantUsage := pluginapi.Usage{InputTokens: 2100, OutputTokens: 180, CachedInputTokens: 1024, ReasoningTokens: 64, TotalTokens: 2280, ModelCalls: 1}
	if resp.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", resp.Usage, wantUsage)
	}
	wantMeta := pluginapi.ModelCallMetadata{RequestModel: "gpt-5-mini", ResponseModel: "gpt-5-mini-2025-08-07", ProviderName: "openai",
		ResponseID: "resp_68af5130e1b081a0a2f3b7d4c9e8f0a10c6b1d2e3f4a5b6c", FinishReasons: []string{"tool_calls"}}
	if fmt.Sprint(*resp.Metadata) != fmt.Sprint(wantMeta) {
		t.Errorf("metadata = %+v", *resp.Metadata)
	}
	if got := rec.joined(true); !strings.Contains(got, "**Looking up both orders**") || !strings.Contains(got, "3 & 4 <both>") {
		t.Errorf("reasoning deltas = %q", got)
	}
	if got := fp.headers[0].Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}

	// Replay: the stored items go back byte for byte, in order, between the
	// user text and the function call outputs.
	items = append(items, output(resp.Output), result(wantCalls[0].ID, "lookup_order", "monitor arm"), result(wantCalls[1].ID, "lookup_order", "headphones"))
	req.Items = items
	if _, _, err := call(t, c, req); err != nil {
		t.Fatal(err)
	}
	body := fp.body(1)
	wantInput := `"input":[{"content":"What are orders 3 and 4?","role":"user"},` + strings.Join(want, ",") +
		`,{"output":"monitor arm","call_id":"call_Qx7mZ2pL9vK4nR8sT1wY5bC3","type":"function_call_output"},{"output":"headphones","call_id":"call_Hd2kF8jN3mP6qS9tV4xZ7aB1","type":"function_call_output"}]`
	if !bytes.Contains(body, []byte(wantInput)) {
		t.Errorf("replayed input:\n%s\nwant it to contain\n%s", body, wantInput)
	}
}

// TestRecordedChatStream assembles two tool calls from their deltas and
// replays the stored assistant message byte for byte.
func TestRecordedChatStream(t *testing.T) {
	fp := newFakeProvider(t, readTestdata(t, "openai_chat_tool_calls.sse"), chatText)
	c := withFakeClock(mustNew(t, Config{Provider: ProviderOpenAIChat, Name: "gpt-4.1-mini", APIBase: fp.srv.URL + "/v1"}, envOf("OPENAI_API_KEY", testKey)))
	req := &stepwise.ModelRequest{Instructions: "You look orders up.", Items: []stepwise.ModelItem{user("What are orders 3 and 4?")}, Tools: []pluginapi.ToolDefinition{lookupTool}}
	resp, rec, err := call(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	wantItem := `{"role":"assistant","content":"Let me check both orders.","tool_calls":[` +
		`{"id":"call_Zk3mQ8vN2pL5rT9wX1yB4cD7","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\": \"3\"}"}},` +
		`{"id":"call_Rb6nT1xK4mP7qV2sY9zC3dF5","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\": \"4\"}"}}]}`
	if len(resp.Output.Items) != 1 || resp.Output.Items[0] != wantItem {
		t.Fatalf("items = %q\nwant %q", resp.Output.Items, wantItem)
	}
	if resp.Output.Text != "Let me check both orders." || len(resp.Output.ToolCalls) != 2 || resp.Output.ToolCalls[1].Arguments != `{"order_id": "4"}` {
		t.Errorf("output = %+v", resp.Output)
	}
	if rec.joined(false) != "Let me check both orders." || rec.count(false) != 1 {
		t.Errorf("text deltas = %+v", rec.events)
	}
	wantUsage := pluginapi.Usage{InputTokens: 1500, OutputTokens: 61, CachedInputTokens: 1280, TotalTokens: 1561, ModelCalls: 1}
	if resp.Usage != wantUsage {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if m := resp.Metadata; m.ResponseID != "chatcmpl-C9xKq2mZbT7vL4nR8sW1yP5dF3hJ6" || m.ResponseModel != "gpt-4.1-mini-2025-04-14" || m.FinishReasons[0] != "tool_calls" || m.ProviderName != "openai" {
		t.Errorf("metadata = %+v", m)
	}
	var sent map[string]json.RawMessage
	_ = json.Unmarshal(fp.body(0), &sent)
	if string(sent["stream_options"]) != `{"include_usage":true}` || string(sent["stream"]) != "true" {
		t.Errorf("stream options = %s %s", sent["stream_options"], sent["stream"])
	}

	req.Items = append(req.Items, output(resp.Output), result(resp.Output.ToolCalls[0].ID, "lookup_order", "monitor arm"), result(resp.Output.ToolCalls[1].ID, "lookup_order", "headphones"))
	if _, _, err := call(t, c, req); err != nil {
		t.Fatal(err)
	}
	wantMsgs := `"messages":[{"content":"You look orders up.","role":"system"},{"content":"What are orders 3 and 4?","role":"user"},` + wantItem +
		`,{"content":"monitor arm","tool_call_id":"call_Zk3mQ8vN2pL5rT9wX1yB4cD7","role":"tool"},{"content":"headphones","tool_call_id":"call_Rb6nT1xK4mP7qV2sY9zC3dF5","role":"tool"}]`
	if body := fp.body(1); !bytes.Contains(body, []byte(wantMsgs)) {
		t.Errorf("replayed messages:\n%s\nwant it to contain\n%s", body, wantMsgs)
	}
}

// TestRecordedAnthropicStream keeps thinking with its signature and
// redacted thinking byte for byte, and replays them first in the assistant
// message, followed by the tool results.
func TestRecordedAnthropicStream(t *testing.T) {
	fp := newFakeProvider(t, readTestdata(t, "anthropic_thinking_tools.sse"), anthropicText)
	c := mustNew(t, Config{Provider: ProviderAnthropic, Name: "claude-sonnet-4-5", APIBase: fp.srv.URL, Settings: stepwise.ModelSettings{ThinkingBudget: 2048}},
		envOf("ANTHROPIC_API_KEY", testKey))
	req := &stepwise.ModelRequest{Instructions: "You look orders up.", Items: []stepwise.ModelItem{user("What are orders 3 and 4?")}, Tools: []pluginapi.ToolDefinition{lookupTool}}
	resp, rec, err := call(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	want := readStrings(t, "anthropic_thinking_tools.blocks.json")
	if strings.Join(resp.Output.Items, "\n") != strings.Join(want, "\n") {
		t.Fatalf("blocks:\n%s\nwant\n%s", strings.Join(resp.Output.Items, "\n"), strings.Join(want, "\n"))
	}
	if resp.Output.Text != "I'll look up both orders." || len(resp.Output.ToolCalls) != 2 ||
		resp.Output.ToolCalls[0] != (stepwise.ModelToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "lookup_order", Arguments: `{"order_id": "3"}`}) {
		t.Errorf("output = %+v", resp.Output)
	}
	if got := rec.joined(true); got != "The user wants orders 3 & 4. I'll look both up <in parallel> and then answer." {
		t.Errorf("thinking deltas = %q", got)
	}
	if rec.events[0].reasoning != true || rec.events[len(rec.events)-1].reasoning {
		t.Errorf("events out of order: %+v", rec.events)
	}
	wantUsage := pluginapi.Usage{InputTokens: 472 + 2048, OutputTokens: 189, CachedInputTokens: 2048, ReasoningTokens: 41, TotalTokens: 472 + 2048 + 189, ModelCalls: 1}
	if resp.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", resp.Usage, wantUsage)
	}
	if m := resp.Metadata; m.ResponseID != "msg_01XFDUDYJgAACzvnptvVoYEL" || m.ResponseModel != "claude-sonnet-4-5-20250929" || m.FinishReasons[0] != "tool_use" || m.ProviderName != "anthropic" {
		t.Errorf("metadata = %+v", m)
	}

	req.Items = append(req.Items, output(resp.Output), result(resp.Output.ToolCalls[0].ID, "lookup_order", "monitor arm"), result(resp.Output.ToolCalls[1].ID, "lookup_order", "headphones"))
	if _, _, err := call(t, c, req); err != nil {
		t.Fatal(err)
	}
	body := fp.body(1)
	// thinking and redacted_thinking go back as their exact text, first.
	wantAssistant := `{"content":[` + want[0] + `,` + want[1] + `,{"text":"I'll look up both orders.","type":"text"},`
	if !bytes.Contains(body, []byte(wantAssistant)) {
		t.Errorf("replayed request:\n%s\nwant it to contain\n%s", body, wantAssistant)
	}
	var sent struct {
		Thinking json.RawMessage `json:"thinking"`
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 3 || sent.Messages[1].Role != "assistant" || sent.Messages[2].Role != "user" {
		t.Fatalf("messages = %s", body)
	}
	for i, blk := range sent.Messages[1].Content[3:] {
		var got, exp any
		_ = json.Unmarshal(blk, &got)
		_ = json.Unmarshal([]byte(want[3+i]), &exp)
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Errorf("tool_use block %d = %s, want %s", i, blk, want[3+i])
		}
	}
	if r := string(sent.Messages[2].Content[0]); !strings.Contains(r, `"tool_use_id":"toolu_01A09q90qw90lq917835lq9"`) || !strings.Contains(r, `"type":"tool_result"`) {
		t.Errorf("first tool result = %s", r)
	}
	if string(sent.Thinking) != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Errorf("thinking = %s", sent.Thinking)
	}
}
