package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// aimockCase is one provider under test against aimock.
type aimockCase struct {
	name   string
	cfg    func(srv *aimock.Server) Config
	path   string
	finish []string // the finish reasons of a text answer and of tool calls
}

const aimockKey = "sk-aimock-secret-0123456789"

var aimockCases = []aimockCase{
	{
		name: ProviderOpenAI,
		cfg: func(srv *aimock.Server) Config {
			return Config{Provider: ProviderOpenAI, Name: "gpt-5-mini", APIBase: srv.URL + "/v1", APIKeyEnv: "TEST_OPENAI_KEY",
				Settings: stepwise.ModelSettings{ReasoningEffort: "low"}}
		},
		path:   "/v1/responses",
		finish: []string{"stop", "tool_calls"},
	},
	{
		name: ProviderOpenAIChat,
		cfg: func(srv *aimock.Server) Config {
			return Config{Provider: ProviderOpenAIChat, Name: "gpt-5-mini", APIBase: srv.URL + "/v1", APIKeyEnv: "TEST_OPENAI_KEY"}
		},
		path:   "/v1/chat/completions",
		finish: []string{"stop", "tool_calls"},
	},
	{
		name: ProviderOpenAICompatible,
		cfg: func(srv *aimock.Server) Config {
			// No key: a local server such as Ollama needs none.
			return Config{Provider: ProviderOpenAICompatible, Name: "qwen3-8b", APIBase: srv.URL + "/v1"}
		},
		path:   "/v1/chat/completions",
		finish: []string{"stop", "tool_calls"},
	},
	{
		name: ProviderAnthropic,
		cfg: func(srv *aimock.Server) Config {
			return Config{Provider: ProviderAnthropic, Name: "claude-sonnet-4-5", APIBase: srv.URL, APIKeyEnv: "TEST_ANTHROPIC_KEY",
				Settings: stepwise.ModelSettings{ThinkingBudget: 2048}}
		},
		path:   "/v1/messages",
		finish: []string{"end_turn", "tool_use"},
	},
}

var aimockEnv = envOf("TEST_OPENAI_KEY", aimockKey, "TEST_ANTHROPIC_KEY", aimockKey)

func fixturesDir() string { return filepath.Join("testdata", "aimock", "fixtures") }

// TestAimockStreamedText: a streamed answer arrives as a few batched
// text_delta events, with usage and metadata.
func TestAimockStreamedText(t *testing.T) {
	for _, tc := range aimockCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := aimock.Start(t, fixturesDir())
			cfg := tc.cfg(srv)
			c := withFakeClock(mustNew(t, cfg, aimockEnv))
			resp, rec, err := call(t, c, &stepwise.ModelRequest{Instructions: "Be brief.", Items: []stepwise.ModelItem{user("say hello")}, Tools: nil})
			if err != nil {
				t.Fatal(err)
			}
			const want = "Hello there! This is a streamed answer. It has three sentences."
			if resp.Output.Text != want || rec.joined(false) != want {
				t.Fatalf("text = %q, streamed %q", resp.Output.Text, rec.joined(false))
			}
			// 13 chunks of 5 characters; the batcher writes one event per sentence.
			var got []string
			for _, e := range rec.events {
				got = append(got, e.text)
			}
			if want := []string{"Hello there! ", "This is a streamed answer. ", "It has three sentences."}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("text_delta events for 13 chunks = %q, want %q", got, want)
			}
			if resp.Usage.InputTokens != 12 || resp.Usage.OutputTokens != 9 || resp.Usage.TotalTokens != 21 || resp.Usage.ModelCalls != 1 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			m := resp.Metadata
			if m == nil || m.RequestModel != cfg.Name || m.ResponseModel != cfg.Name || m.ResponseID == "" || len(m.FinishReasons) != 1 || m.FinishReasons[0] != tc.finish[0] {
				t.Errorf("metadata = %+v", m)
			}
			if len(resp.Output.Items) == 0 || resp.Output.API == "" || resp.Output.Provider == "" {
				t.Errorf("output item = %+v", resp.Output)
			}
			reqs := srv.Requests(tc.path)
			if len(reqs) != 1 {
				t.Fatalf("%d requests to %s, want exactly 1 (no SDK retries)", len(reqs), tc.path)
			}
			assertRequestShape(t, tc.name, reqs[0].Body)
		})
	}
}

// assertRequestShape checks the provider-specific request fields.
func assertRequestShape(t *testing.T, provider string, body []byte) {
	t.Helper()
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	switch provider {
	case ProviderOpenAI:
		want = map[string]string{"store": `false`, "include": `["reasoning.encrypted_content"]`, "stream": `true`, "instructions": `"Be brief."`}
	case ProviderOpenAIChat, ProviderOpenAICompatible:
		want = map[string]string{"stream": `true`, "stream_options": `{"include_usage":true}`}
	case ProviderAnthropic:
		want = map[string]string{"stream": `true`, "thinking": `{"budget_tokens":2048,"type":"enabled"}`}
	}
	for k, v := range want {
		if string(req[k]) != v {
			t.Errorf("request %s = %s, want %s", k, req[k], v)
		}
	}
	if _, ok := req["previous_response_id"]; ok {
		t.Errorf("request has previous_response_id: no provider-side state")
	}
}

// TestAimockParallelToolCallsAndReasoningReplay: a response with reasoning
// and two parallel tool calls, then the follow-up call with both results.
// The follow-up carries the reasoning items byte for byte (asserted on the
// exact request bytes, since aimock's journal normalizes requests and drops
// reasoning) and both results (asserted on aimock's journal).
func TestAimockParallelToolCallsAndReasoningReplay(t *testing.T) {
	for _, tc := range aimockCases {
		t.Run(tc.name, func(t *testing.T) {
			srv, c, items, tools, resp, rec := twoLookups(t, tc)
			if got := rec.joined(true); !strings.Contains(got, "I need both orders") {
				t.Errorf("reasoning deltas = %q", got)
			}
			if resp.Metadata.FinishReasons[0] != tc.finish[1] {
				t.Errorf("finish reasons = %v", resp.Metadata.FinishReasons)
			}
			if resp.Usage.InputTokens != 40 || resp.Usage.OutputTokens != 25 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			opaque := opaqueItems(t, resp.Output)
			if len(opaque) == 0 {
				t.Fatalf("no reasoning item among %q", resp.Output.Items)
			}

			items = append(items, output(resp.Output), result("call_a", "lookup_order", `{"id":"3","item":"monitor arm"}`), result("call_b", "lookup_order", `{"id":"4","item":"headphones"}`))
			resp2, _, err := call(t, c, &stepwise.ModelRequest{Instructions: "You look orders up.", Items: items, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			if resp2.Output.Text != "Order 3 is a monitor arm and order 4 is headphones." || len(resp2.Output.ToolCalls) != 0 {
				t.Fatalf("answer = %+v", resp2.Output)
			}
			reqs := srv.Requests(tc.path)
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for _, raw := range opaque {
				if !bytes.Contains(reqs[1].Body, []byte(raw)) {
					t.Errorf("the follow-up request does not carry the stored item byte for byte:\nitem %s\nrequest %s", raw, reqs[1].Body)
				}
			}
			j := srv.Journal(t)
			if len(j) != 2 || j[1].Response.Status != 200 {
				t.Fatalf("journal = %+v", j)
			}
			var results []string
			for _, m := range j[1].Body.Messages {
				if m.Role == "tool" {
					results = append(results, m.ToolCallID)
				}
			}
			if strings.Join(results, ",") != "call_a,call_b" {
				t.Errorf("the server saw tool results %v, want call_a,call_b: %+v", results, j[1].Body.Messages)
			}
		})
	}
}

// opaqueItems returns the stored items that hold reasoning: Responses
// reasoning items (encrypted_content), Anthropic thinking (signature) and
// redacted_thinking blocks, and a chat message with reasoning_content.
func opaqueItems(t *testing.T, out stepwise.ModelOutputItem) []string {
	t.Helper()
	var found []string
	for _, raw := range out.Items {
		var it map[string]any
		if err := json.Unmarshal([]byte(raw), &it); err != nil {
			t.Fatal(err)
		}
		switch {
		case it["type"] == "reasoning" && it["encrypted_content"] != nil,
			it["type"] == "thinking" && it["signature"] != "",
			it["type"] == "redacted_thinking",
			it["reasoning_content"] != nil:
			found = append(found, raw)
		}
	}
	return found
}

// TestAimockFaults: a stream cut mid-answer and a 500 or 429 are retryable;
// a 400 and a 401 are permanent, with the provider, the status and the
// reason in the message, and never the key.
func TestAimockFaults(t *testing.T) {
	for _, tc := range aimockCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := aimock.Start(t, fixturesDir())
			c := mustNew(t, tc.cfg(srv), aimockEnv)
			ask := func(text string) (*recorder, error) {
				_, rec, err := call(t, c, &stepwise.ModelRequest{Items: []stepwise.ModelItem{user(text)}})
				if err == nil {
					t.Fatalf("%q: no error", text)
				}
				if tc.name != ProviderOpenAICompatible && strings.Contains(err.Error(), aimockKey) {
					t.Errorf("%q: the error shows the API key: %v", text, err)
				}
				return rec, err
			}
			rec, err := ask("cut me off")
			if isPermanent(err) || strings.Contains(err.Error(), "HTTP 5") {
				t.Errorf("a cut stream: %v (permanent %v)", err, isPermanent(err))
			}
			t.Logf("cut stream: %v", err)
			if rec.joined(false) == "" || strings.Contains(rec.joined(false), "It never ends.") {
				t.Errorf("streamed before the cut: %q", rec.joined(false))
			}
			for _, text := range []string{"fail with 500", "rate limit me"} {
				_, err := ask(text)
				if isPermanent(err) {
					t.Errorf("%q: permanent: %v", text, err)
				}
			}
			_, err = ask("too long a request")
			if !isPermanent(err) || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "context length exceeded") || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("400: %v (permanent %v)", err, isPermanent(err))
			}
			_, err = ask("wrong key")
			if !isPermanent(err) || !strings.Contains(err.Error(), "HTTP 401") {
				t.Errorf("401: %v (permanent %v)", err, isPermanent(err))
			}
			j := srv.Journal(t)
			if len(j) == 0 || !j[0].Response.Interrupted {
				t.Errorf("aimock did not record the cut stream as interrupted: %+v", j)
			}
		})
	}
}

// TestAimockSummaryCall: compaction's summary call (Stepwise's
// SummarizeContext) in each wire format: the summary instructions in the
// provider's system slot, the earlier summary behind the spec's header, the
// messages, no tools; and, past the input budget, the oldest messages left
// out with the spec's note.
func TestAimockSummaryCall(t *testing.T) {
	msgs := func(first string) []pluginapi.Message {
		return []pluginapi.Message{
			{Sequence: 11, Role: pluginapi.RoleUser, Text: first},
			{Sequence: 12, Role: pluginapi.RoleAssistant, Text: "Noted: order 7, code 4242."},
			{Sequence: 13, Role: pluginapi.RoleUser, Text: "ship it to Berlin"},
			{Sequence: 14, Role: pluginapi.RoleAssistant, Text: "Shipping order 7 to Berlin."},
		}
	}
	for _, tc := range aimockCases {
		if tc.name == ProviderOpenAICompatible {
			continue // the openai-chat wire format again
		}
		t.Run(tc.name, func(t *testing.T) {
			srv := aimock.Start(t, fixturesDir())
			client := mustNew(t, tc.cfg(srv), aimockEnv)
			r := stepwise.NewRunner("summaries", "0", func(_ context.Context, agent string, _ json.RawMessage) (*stepwise.AgentDefinition, error) {
				return &stepwise.AgentDefinition{Name: agent, Instructions: "You help with orders.", Model: client, ModelName: tc.cfg(srv).Name}, nil
			})
			if _, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "orders"}); err != nil {
				t.Fatal(err)
			}
			summarize := func(first string, budget int64) *pluginapi.SummarizeContextResponse {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				resp, err := r.SummarizeContext(ctx, &pluginapi.SummarizeContextRequest{
					Turn:             pluginapi.TurnContext{Agent: "orders", SessionID: "s1", TurnID: "t9"},
					Messages:         msgs(first),
					PreviousSummary:  "The user is Ana.",
					InputTokenBudget: budget,
					Events:           summaryEvents{&recorder{}},
				})
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}

			resp := summarize("my order is 7; the code is 4242", 100_000)
			if resp.Summary != "Summary: Ana's order 7 (code 4242) ships to Berlin." {
				t.Errorf("summary = %q", resp.Summary)
			}
			if resp.Usage.InputTokens != 300 || resp.Usage.OutputTokens != 20 || resp.Usage.ModelCalls != 1 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			reqs := srv.Requests(tc.path)
			if len(reqs) != 1 {
				t.Fatalf("%d requests to %s, want 1", len(reqs), tc.path)
			}
			body := requestStrings(t, reqs[0].Body)
			for _, want := range []string{
				stepwise.ContextSummaryInstructions,
				stepwise.ContextSummaryNoteHeader + "\nThe user is Ana.",
				"my order is 7; the code is 4242", "Noted: order 7, code 4242.", "ship it to Berlin", "Shipping order 7 to Berlin.",
			} {
				if !slices.Contains(body, want) {
					t.Errorf("the summary request has no %.60q", want)
				}
			}
			if slices.Contains(body, "You help with orders.") {
				t.Error("the summary request carries the agent's instructions, not the summary instructions")
			}
			var top map[string]json.RawMessage
			_ = json.Unmarshal(reqs[0].Body, &top)
			if _, ok := top["tools"]; ok {
				t.Error("the summary request offers tools")
			}

			// A first message of ~12,000 tokens and a 2,000-token budget: that
			// message is left out (the fewest that fit; its answer is a whole
			// model response and stays).
			summarize("my order is 7 "+strings.Repeat("filler ", 5000), 2000)
			reqs = srv.Requests(tc.path)
			body = requestStrings(t, reqs[len(reqs)-1].Body)
			if !slices.Contains(body, fmt.Sprintf(stepwise.ContextSummaryOmissionFormat, 1)) {
				t.Errorf("no omission note in %q", body)
			}
			for _, s := range body {
				if strings.Contains(s, "filler") {
					t.Errorf("the left-out message is in the request: %.60q", s)
				}
			}
			if !slices.Contains(body, "Noted: order 7, code 4242.") || !slices.Contains(body, "ship it to Berlin") {
				t.Error("the kept messages are missing")
			}
		})
	}
}

// requestStrings returns every string value of a JSON request body.
func requestStrings(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// summaryEvents is a recorder as a full pluginapi.EventWriter.
type summaryEvents struct{ *recorder }

func (summaryEvents) WriteEvent(string, any) error { return nil }
func (summaryEvents) Heartbeat()                   {}

// TestAimockRepairedTranscript: a transcript broken by a crash (a call
// without its result, a result given twice, a result without a call) is
// repaired before the provider call: the server sees exactly one result
// per call, the missing one as outcome unknown, and answers. (The real
// APIs refuse the transcript as it was: a function call or tool_use
// without its result, a result without its call.)
func TestAimockRepairedTranscript(t *testing.T) {
	for _, tc := range aimockCases {
		t.Run(tc.name, func(t *testing.T) {
			srv, c, items, tools, resp, _ := twoLookups(t, tc)
			broken := append(items, output(resp.Output),
				result("call_a", "lookup_order", `{"id":"3","item":"monitor arm"}`),
				result("call_a", "lookup_order", `{"id":"3","item":"monitor arm"}`),
				result("call_zz", "lookup_order", `{"id":"9"}`))
			// call_b's result is missing: its Step's worker died.
			resp2, _, err := call(t, c, &stepwise.ModelRequest{Instructions: "You look orders up.", Items: stepwise.RepairItems(broken), Tools: tools})
			if err != nil {
				t.Fatalf("the repaired transcript was refused: %v", err)
			}
			if resp2.Output.Text == "" {
				t.Fatalf("answer = %+v", resp2.Output)
			}
			j := srv.Journal(t)
			if len(j) != 2 {
				t.Fatalf("journal = %+v", j)
			}
			var results []string
			for _, m := range j[1].Body.Messages {
				if m.Role == "tool" {
					results = append(results, fmt.Sprintf("%s=%v", m.ToolCallID, m.Content))
				}
			}
			want := []string{`call_a={"id":"3","item":"monitor arm"}`, "call_b=" + pluginapi.OutcomeUnknownToolResult}
			if !slices.Equal(results, want) {
				t.Errorf("the server saw tool results %q, want %q", results, want)
			}
		})
	}
}

// twoLookups asks tc's provider, through aimock, to look up orders 3 and 4
// and checks it answers with the two parallel calls call_a and call_b.
func twoLookups(t *testing.T, tc aimockCase) (*aimock.Server, stepwise.ModelClient, []stepwise.ModelItem, []pluginapi.ToolDefinition, *stepwise.ModelResponse, *recorder) {
	t.Helper()
	srv := aimock.Start(t, fixturesDir())
	c := mustNew(t, tc.cfg(srv), aimockEnv)
	items := []stepwise.ModelItem{user("look up orders 3 and 4")}
	tools := []pluginapi.ToolDefinition{lookupTool}
	resp, rec, err := call(t, c, &stepwise.ModelRequest{Instructions: "You look orders up.", Items: items, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Output.ToolCalls
	if len(calls) != 2 || calls[0].ID != "call_a" || calls[1].ID != "call_b" || calls[0].Name != "lookup_order" ||
		calls[0].Arguments != `{"order_id":"3"}` || calls[1].Arguments != `{"order_id":"4"}` {
		t.Fatalf("tool calls = %+v", calls)
	}
	return srv, c, items, tools, resp, rec
}
