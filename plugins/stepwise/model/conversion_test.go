package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// mixedTranscript is a session whose model was switched several times:
// scripted, then Anthropic with thinking, then OpenAI Responses with
// encrypted reasoning, then a compatible server and OpenAI Chat Completions
// (both with reasoning_content), each with its tool calls and results.
func mixedTranscript(t *testing.T) []stepwise.ModelItem {
	t.Helper()
	blocks := readStrings(t, "anthropic_thinking_tools.blocks.json")
	respItems := readStrings(t, "openai_responses_reasoning_tools.items.json")
	scripted := stepwise.ModelOutputItem{Provider: "scripted", API: "scripted", Text: "Let me look.",
		Items:     []string{`{"type":"scripted_output","text":"Let me look.","reasoning":"SCRIPTED-REASONING","tool_calls":[{"id":"call_0_0","name":"lookup_order","arguments":"{\"order_id\":\"7\"}"}]}`},
		ToolCalls: []stepwise.ModelToolCall{{ID: "call_0_0", Name: "lookup_order", Arguments: `{"order_id":"7"}`}}}
	claude := stepwise.ModelOutputItem{Provider: ProviderAnthropic, API: APIMessages, Text: "I'll look up both orders.", Items: blocks,
		ToolCalls: []stepwise.ModelToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "lookup_order", Arguments: `{"order_id": "3"}`}, {ID: "toolu_01B7x2Km4Pq9Rs3Tv6Wy8Za1", Name: "lookup_order", Arguments: `{"order_id": "4"}`}}}
	gpt := stepwise.ModelOutputItem{Provider: ProviderOpenAI, API: APIResponses, Items: respItems,
		ToolCalls: []stepwise.ModelToolCall{{ID: "call_Qx7mZ2pL9vK4nR8sT1wY5bC3", Name: "lookup_order", Arguments: `{"order_id":"3"}`}, {ID: "call_Hd2kF8jN3mP6qS9tV4xZ7aB1", Name: "lookup_order", Arguments: `{"order_id":"4"}`}}}
	compat := stepwise.ModelOutputItem{Provider: "openai-compatible:localhost:11434", API: APIChatCompletions, Text: "All done.",
		Items: []string{`{"role":"assistant","content":"All done.","reasoning_content":"COMPAT-REASONING"}`}}
	chat := stepwise.ModelOutputItem{Provider: ProviderOpenAI, API: APIChatCompletions, Text: "Anything else?",
		Items: []string{`{"role":"assistant","content":"Anything else?","reasoning_content":"CHAT-REASONING"}`}}
	return []stepwise.ModelItem{
		user("Refund order 7"),
		output(scripted), result("call_0_0", "lookup_order", "desk lamp"),
		output(claude), result(claude.ToolCalls[0].ID, "lookup_order", "monitor arm"), result(claude.ToolCalls[1].ID, "lookup_order", "headphones"),
		output(gpt), result(gpt.ToolCalls[0].ID, "lookup_order", "monitor arm"), result(gpt.ToolCalls[1].ID, "lookup_order", "headphones"),
		output(compat),
		output(chat),
		user("Yes, order 8 too"),
	}
}

// opaque values of each source in the transcript.
const (
	encryptedPrefix = "gAAAAABor1EwQ7k0Yc2pOAgTzVZ"
	signaturePrefix = "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"
	redactedPrefix  = "EmwKAhgBEgy3va3pzix/LafPsn4a"
)

// TestCrossProviderReplay sends the mixed transcript to each provider:
// its own items go back byte for byte, everyone else's as text and tool
// calls, with their reasoning dropped.
func TestCrossProviderReplay(t *testing.T) {
	items := mixedTranscript(t)
	texts := []string{"Let me look.", "I'll look up both orders.", "All done.", "Anything else?", "desk lamp", "Yes, order 8 too"}
	callIDs := []string{"call_0_0", "toolu_01A09q90qw90lq917835lq9", "toolu_01B7x2Km4Pq9Rs3Tv6Wy8Za1", "call_Qx7mZ2pL9vK4nR8sT1wY5bC3", "call_Hd2kF8jN3mP6qS9tV4xZ7aB1"}
	allOpaque := []string{encryptedPrefix, signaturePrefix, redactedPrefix, "SCRIPTED-REASONING", "COMPAT-REASONING", "CHAT-REASONING"}
	cases := []struct {
		provider string
		stream   []byte
		base     string // appended to the server URL
		exact    []string
		keep     []string // opaque values that must reach this provider
	}{
		{ProviderOpenAI, responsesText, "/v1", readStrings(t, "openai_responses_reasoning_tools.items.json"), []string{encryptedPrefix}},
		{ProviderOpenAIChat, chatText, "/v1", []string{`{"role":"assistant","content":"Anything else?","reasoning_content":"CHAT-REASONING"}`}, []string{"CHAT-REASONING"}},
		{ProviderOpenAICompatible, chatText, "/v1", nil, nil},
		{ProviderAnthropic, anthropicText, "", readStrings(t, "anthropic_thinking_tools.blocks.json")[:2], []string{signaturePrefix, redactedPrefix}},
	}
	for _, tc := range cases {
		t.Run(tc.provider, func(t *testing.T) {
			fp := newFakeProvider(t, tc.stream)
			cfg := Config{Provider: tc.provider, Name: "some-model", APIBase: fp.srv.URL + tc.base}
			c := mustNew(t, cfg, envOf("OPENAI_API_KEY", testKey, "ANTHROPIC_API_KEY", testKey))
			if _, _, err := call(t, c, &stepwise.ModelRequest{Instructions: "Help.", Items: items, Tools: []pluginapi.ToolDefinition{lookupTool}}); err != nil {
				t.Fatal(err)
			}
			body := fp.body(0)
			for _, raw := range tc.exact {
				if !bytes.Contains(body, []byte(raw)) {
					t.Errorf("own item not replayed byte for byte: %s", raw)
				}
			}
			for _, v := range allOpaque {
				if got, want := bytes.Contains(body, []byte(v)), contains(tc.keep, v); got != want {
					t.Errorf("reasoning %q in the request: %v, want %v", v, got, want)
				}
			}
			for _, s := range append(texts, callIDs...) {
				if !bytes.Contains(body, []byte(s)) {
					t.Errorf("the request lacks %q", s)
				}
			}
			if tc.provider == ProviderAnthropic {
				checkAnthropicShape(t, body)
			}
			if tc.provider == ProviderOpenAICompatible {
				// The compatible item came from localhost:11434, not this server.
				if bytes.Contains(body, []byte("COMPAT-REASONING")) {
					t.Errorf("another server's reasoning_content was replayed")
				}
			}
		})
	}
	// The same server as the compatible item: it replays exactly.
	t.Run("openai-compatible same server", func(t *testing.T) {
		fp := newFakeProvider(t, chatText)
		c := mustNew(t, Config{Provider: ProviderOpenAICompatible, Name: "qwen3", APIBase: fp.srv.URL + "/v1"}, envOf())
		it := items[len(items)-3] // the compatible output
		it.Output = &stepwise.ModelOutputItem{Provider: CompatibleItemProvider(fp.srv.URL + "/v1"), API: APIChatCompletions, Text: "All done.", Items: it.Output.Items}
		mixed := append(append(append([]stepwise.ModelItem{}, items[:len(items)-3]...), it), items[len(items)-2:]...)
		if _, _, err := call(t, c, &stepwise.ModelRequest{Items: mixed}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(fp.body(0), []byte(`{"role":"assistant","content":"All done.","reasoning_content":"COMPAT-REASONING"}`)) {
			t.Errorf("same-server item not replayed exactly: %s", fp.body(0))
		}
	})
}

// checkAnthropicShape checks the Messages rules: roles alternate, starting
// with the user; tool results come first in a user message and answer the
// previous assistant message's tool_use blocks.
func checkAnthropicShape(t *testing.T, body []byte) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
				Text      string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var prevUses []string
	for i, m := range req.Messages {
		if want := []string{"user", "assistant"}[i%2]; m.Role != want {
			t.Fatalf("message %d has role %s, want %s: %s", i, m.Role, want, body)
		}
		var uses, results []string
		seenOther := false
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				uses = append(uses, b.ID)
			case "tool_result":
				if seenOther {
					t.Errorf("message %d: a tool_result after other content", i)
				}
				results = append(results, b.ToolUseID)
			case "text":
				seenOther = true
				if b.Text == "" {
					t.Errorf("message %d: an empty text block", i)
				}
			}
		}
		if m.Role == "user" && fmt.Sprint(results) != fmt.Sprint(prevUses) && !(len(results) == 0 && len(prevUses) == 0) {
			t.Errorf("message %d answers %v, want %v", i, results, prevUses)
		}
		prevUses = uses
	}
}

// TestAnthropicThinkingAfterAnotherProvidersToolCall: thinking cannot start
// in the middle of a tool loop, so a call that sends the results of another
// provider's tool calls goes without thinking; the next turn thinks again.
func TestAnthropicThinkingAfterAnotherProvidersToolCall(t *testing.T) {
	fp := newFakeProvider(t, anthropicText)
	c := mustNew(t, Config{Provider: ProviderAnthropic, Name: "claude-sonnet-4-5", APIBase: fp.srv.URL, Settings: stepwise.ModelSettings{ThinkingBudget: 1024}}, envOf("ANTHROPIC_API_KEY", testKey))
	gpt := stepwise.ModelOutputItem{Provider: ProviderOpenAI, API: APIResponses, Items: readStrings(t, "openai_responses_reasoning_tools.items.json"),
		ToolCalls: []stepwise.ModelToolCall{{ID: "call_Qx7mZ2pL9vK4nR8sT1wY5bC3", Name: "lookup_order", Arguments: `{"order_id":"3"}`}, {ID: "call_Hd2kF8jN3mP6qS9tV4xZ7aB1", Name: "lookup_order", Arguments: `{"order_id":"4"}`}}}
	items := []stepwise.ModelItem{user("orders 3 and 4?"), output(gpt), result(gpt.ToolCalls[0].ID, "lookup_order", "a"), result(gpt.ToolCalls[1].ID, "lookup_order", "b")}
	tools := []pluginapi.ToolDefinition{lookupTool}
	if _, _, err := call(t, c, &stepwise.ModelRequest{Items: items, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(fp.body(0), []byte(`"thinking"`)) {
		t.Errorf("thinking enabled in the middle of another provider's tool loop: %s", fp.body(0))
	}
	items = append(items, output(stepwise.ModelOutputItem{Provider: ProviderAnthropic, API: APIMessages, Text: "Done.", Items: []string{`{"type":"text","text":"Done."}`}}), user("and order 5?"))
	if _, _, err := call(t, c, &stepwise.ModelRequest{Items: items, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(fp.body(1), []byte(`"thinking":{"budget_tokens":1024,"type":"enabled"}`)) {
		t.Errorf("the next turn does not think: %s", fp.body(1))
	}
}

func TestUnescapeHTMLJSON(t *testing.T) {
	in := `{"a":"x \u003c y \\u003c z \u0026 \u003E \\\u0026","b":"\u00e9"}`
	want := `{"a":"x < y \\u003c z & > \\&","b":"\u00e9"}`
	got := string(unescapeHTMLJSON([]byte(in)))
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var a, b any
	if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the JSON value changed: %v vs %v", a, b)
	}
}

// TestNeutralFormsOfAScriptedItem: a scripted item (no provider items) with
// text and a tool call reaches each provider in its own shape.
func TestNeutralFormsOfAScriptedItem(t *testing.T) {
	scripted := stepwise.ModelOutputItem{Provider: "scripted", API: "scripted", Text: "Checking.", ToolCalls: []stepwise.ModelToolCall{{ID: "call_1_0", Name: "lookup_order", Arguments: `{"order_id":"7"}`}}}
	items := []stepwise.ModelItem{user("order 7?"), output(scripted), result("call_1_0", "lookup_order", "desk lamp")}
	want := map[string]string{
		ProviderOpenAI:     `{"content":"Checking.","role":"assistant"},{"arguments":"{\"order_id\":\"7\"}","call_id":"call_1_0","name":"lookup_order","type":"function_call"},{"output":"desk lamp","call_id":"call_1_0","type":"function_call_output"}`,
		ProviderOpenAIChat: `{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1_0","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":\"7\"}"}}]},{"content":"desk lamp","tool_call_id":"call_1_0","role":"tool"}`,
		ProviderAnthropic:  `{"content":[{"text":"Checking.","type":"text"},{"id":"call_1_0","input":{"order_id":"7"},"name":"lookup_order","type":"tool_use"}],"role":"assistant"},{"content":[{"tool_use_id":"call_1_0","content":[{"text":"desk lamp","type":"text"}],"type":"tool_result"}],"role":"user"}`,
	}
	streams := map[string][]byte{ProviderOpenAI: responsesText, ProviderOpenAIChat: chatText, ProviderAnthropic: anthropicText}
	for provider, w := range want {
		t.Run(provider, func(t *testing.T) {
			fp := newFakeProvider(t, streams[provider])
			base := fp.srv.URL + "/v1"
			if provider == ProviderAnthropic {
				base = fp.srv.URL
			}
			c := mustNew(t, Config{Provider: provider, Name: "m", APIBase: base}, envOf("OPENAI_API_KEY", testKey, "ANTHROPIC_API_KEY", testKey))
			if _, _, err := call(t, c, &stepwise.ModelRequest{Items: items}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(fp.body(0), []byte(w)) {
				t.Errorf("request:\n%s\nwant it to contain\n%s", fp.body(0), w)
			}
		})
	}
}

// TestAnthropicToolIDs: IDs of other providers that Anthropic's alphabet
// refuses are mapped the same way in tool_use and tool_result.
func TestAnthropicToolIDs(t *testing.T) {
	if got := anthropicToolID("call.1/2:x"); got != "call_1_2_x" {
		t.Errorf("anthropicToolID = %q", got)
	}
	if got := anthropicToolID("toolu_01A09q90qw90lq917835lq9"); got != "toolu_01A09q90qw90lq917835lq9" {
		t.Errorf("anthropicToolID changed a valid ID: %q", got)
	}
	if strings.Contains(anthropicToolID(""), " ") || anthropicToolID("") == "" {
		t.Errorf("empty ID")
	}
}
