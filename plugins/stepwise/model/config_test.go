package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

func f64(v float64) *float64 { return &v }
func bptr(v bool) *bool      { return &v }

func TestParseConfigIsStrict(t *testing.T) {
	good := `{"provider":"openai","name":"gpt-5-mini","api_key_env":"MY_KEY","request_options":{"service_tier":"flex"},"settings":{"temperature":0.2,"reasoning_effort":"low","extra":{"user":"u1"}}}`
	cfg, err := ParseConfig([]byte(good))
	if err != nil || cfg.Name != "gpt-5-mini" || *cfg.Settings.Temperature != 0.2 || cfg.RequestOptions["service_tier"] != "flex" {
		t.Fatalf("ParseConfig = %+v, %v", cfg, err)
	}
	for _, bad := range []string{
		`{"provider":"openai","nam":"x"}`,
		`{"provider":"openai","name":"x","settings":{"temprature":1}}`,
		`{"provider":"openai","name":"x","api_key":"sk-123"}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// Strict inside a caller's struct too.
	var outer struct {
		Model Config `json:"model"`
	}
	if err := json.Unmarshal([]byte(`{"model":{"provider":"openai","name":"x","bogus":1}}`), &outer); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("nested: %v", err)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Provider: "openai", Name: "gpt-5-mini"}, ""},
		{Config{Provider: "", Name: "x"}, "provider is required"},
		{Config{Provider: "gemini", Name: "x"}, `provider "gemini" is unknown`},
		{Config{Provider: "scripted", Name: "echo"}, "scripted model clients are built in code"},
		{Config{Provider: "openai"}, "name is required"},
		{Config{Provider: "openai-compatible", Name: "llama3"}, "api_base is required for openai-compatible"},
		{Config{Provider: "openai-compatible", Name: "llama3", APIBase: "localhost:11434"}, "api_base \"localhost:11434\" is not an http or https URL"},
		{Config{Provider: "openai", Name: "x", APIBase: "https://user:pw@example.com/v1"}, "api_base must not hold credentials"},
		{Config{Provider: "openai", Name: "x", APIKeyEnv: "MY-KEY"}, `api_key_env "MY-KEY"`},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{Temperature: f64(3)}}, "settings.temperature 3 is outside 0..2"},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{TopP: f64(1.5)}}, "settings.top_p"},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{MaxOutputTokens: -1}}, "settings.max_output_tokens -1 is negative"},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{ReasoningEffort: "extreme"}}, `settings.reasoning_effort "extreme" is unknown`},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{ThinkingBudget: 2048}}, "settings.thinking_budget is for provider anthropic"},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ThinkingBudget: 100}}, "below Anthropic's minimum of 1024"},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ThinkingBudget: 2048, MaxOutputTokens: 2000}}, "settings.max_output_tokens 2000 must be greater than settings.thinking_budget 2048"},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{ToolChoice: "any tool"}}, `settings.tool_choice "any tool"`},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ThinkingBudget: 2048, ToolChoice: "required"}}, "forces a tool"},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ToolChoice: "required"}}, ""},
		{Config{Provider: "openai", Name: "x", Settings: stepwise.ModelSettings{Extra: json.RawMessage(`[1]`)}}, "settings.extra must be a JSON object"},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ReasoningEffort: "low", Temperature: f64(0.2)}}, "settings.temperature must be unset (or 1) with Anthropic extended thinking"},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{Temperature: f64(0.2)}}, ""},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "model: ") {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// Every problem at once.
	err := Config{Provider: "openai-compatible", Settings: stepwise.ModelSettings{TopP: f64(2)}}.Validate()
	if err == nil || strings.Count(err.Error(), ";") != 2 {
		t.Errorf("several problems: %v", err)
	}
}

func TestNewCredentials(t *testing.T) {
	_, err := New(Config{Provider: "openai", Name: "x"}, envOf())
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "plugins.<plugin>.env") {
		t.Errorf("missing default key: %v", err)
	}
	_, err = New(Config{Provider: "anthropic", Name: "x", APIKeyEnv: "CLAUDE_KEY"}, envOf("ANTHROPIC_API_KEY", "k"))
	if err == nil || !strings.Contains(err.Error(), "CLAUDE_KEY") {
		t.Errorf("missing named key: %v", err)
	}
	if _, err := New(Config{Provider: "openai-compatible", Name: "x", APIBase: "http://localhost:11434/v1"}, envOf()); err != nil {
		t.Errorf("compatible without a key: %v", err)
	}
	if _, err := New(Config{Provider: "openai-compatible", Name: "x", APIBase: "http://localhost:11434/v1", APIKeyEnv: "VLLM_KEY"}, envOf()); err == nil {
		t.Errorf("compatible with a named, unset key: no error")
	}
	if _, err := New(Config{Provider: "scripted", Name: "echo"}, envOf()); err == nil || !strings.Contains(err.Error(), "built in code") {
		t.Errorf("scripted: %v", err)
	}
	if _, err := New(Config{Provider: "openai", Name: "x"}, nil); err == nil {
		t.Errorf("nil getenv: no error")
	}
}

// TestNoEnvironmentDefaults: the SDKs' own variables (OPENAI_BASE_URL,
// OPENAI_API_KEY, ANTHROPIC_*) are never read; only api_key_env is.
func TestNoEnvironmentDefaults(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-process-env")
	t.Setenv("OPENAI_ORG_ID", "org-leak")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-the-process-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-the-process-env")
	for _, tc := range []struct {
		provider string
		stream   []byte
		base     string
	}{{ProviderOpenAI, responsesText, "/v1"}, {ProviderOpenAIChat, chatText, "/v1"}, {ProviderAnthropic, anthropicText, ""}} {
		fp := newFakeProvider(t, tc.stream)
		c := mustNew(t, Config{Provider: tc.provider, Name: "m", APIBase: fp.srv.URL + tc.base, APIKeyEnv: "MY_KEY"}, envOf("MY_KEY", testKey))
		if _, _, err := call(t, c, &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}}); err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		h := fp.headers[0]
		all := fmt.Sprint(h)
		if !strings.Contains(all, testKey) || strings.Contains(all, "process-env") || strings.Contains(all, "org-leak") {
			t.Errorf("%s: headers %v", tc.provider, h)
		}
		if tc.provider == ProviderAnthropic && h.Get("anthropic-version") == "" {
			t.Errorf("no anthropic-version header: %v", h)
		}
	}
}

func TestSupportsForcedToolChoice(t *testing.T) {
	cases := []struct {
		cfg  Config
		want bool
	}{
		{Config{Provider: "openai", Name: "gpt-5", Settings: stepwise.ModelSettings{ReasoningEffort: "high"}}, true},
		{Config{Provider: "openai-chat", Name: "gpt-4.1"}, true},
		{Config{Provider: "openai-compatible", Name: "gemini-2.5-pro", Settings: stepwise.ModelSettings{ReasoningEffort: "high"}}, true},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5"}, true},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ThinkingBudget: 1024}}, false},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ReasoningEffort: "low"}}, false},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ReasoningEffort: "none"}}, true},
		{Config{Provider: "anthropic", Name: "claude-opus-5-5"}, false},
		{Config{Provider: "anthropic", Name: "claude-sonnet-5-5-20270101"}, false},
		{Config{Provider: "openai-compatible", Name: "anthropic/claude-opus-5.5"}, false},
		{Config{Provider: "openai-compatible", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{ReasoningEffort: "medium"}}, false},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", RequestOptions: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2000}}}, false},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", RequestOptions: map[string]any{"thinking": map[string]any{"type": "disabled"}}}, true},
		{Config{Provider: "anthropic", Name: "claude-sonnet-4-5", Settings: stepwise.ModelSettings{Extra: json.RawMessage(`{"thinking":{"type":"adaptive"}}`)}}, false},
	}
	for _, tc := range cases {
		if got := SupportsForcedToolChoice(tc.cfg); got != tc.want {
			t.Errorf("SupportsForcedToolChoice(%s %+v %v) = %v", tc.cfg.Name, tc.cfg.Settings, tc.cfg.RequestOptions, got)
		}
	}
}

// TestSettingsMapping: each provider's request carries the settings in its
// own fields, plus request_options and settings.extra.
func TestSettingsMapping(t *testing.T) {
	settings := stepwise.ModelSettings{Temperature: f64(0.3), TopP: f64(0.9), MaxOutputTokens: 500, ReasoningEffort: "low",
		ToolChoice: "lookup_order", ParallelToolCalls: bptr(false), Extra: json.RawMessage(`{"metadata":{"k":"v"}}`)}
	opts := map[string]any{"service_tier": "flex"}
	cases := []struct {
		provider string
		stream   []byte
		base     string
		settings stepwise.ModelSettings
		want     map[string]string
	}{
		{ProviderOpenAI, responsesText, "/v1", settings, map[string]string{
			"temperature": `0.3`, "top_p": `0.9`, "max_output_tokens": `500`, "reasoning": `{"effort":"low","summary":"auto"}`,
			"tool_choice": `{"name":"lookup_order","type":"function"}`, "parallel_tool_calls": `false`, "service_tier": `"flex"`, "metadata": `{"k":"v"}`,
			"store": `false`, "include": `["reasoning.encrypted_content"]`, "instructions": `"Be brief."`}},
		{ProviderOpenAIChat, chatText, "/v1", settings, map[string]string{
			"temperature": `0.3`, "top_p": `0.9`, "max_completion_tokens": `500`, "reasoning_effort": `"low"`,
			"tool_choice": `{"function":{"name":"lookup_order"},"type":"function"}`, "parallel_tool_calls": `false`, "service_tier": `"flex"`, "metadata": `{"k":"v"}`}},
		{ProviderOpenAICompatible, chatText, "/v1", settings, map[string]string{"max_tokens": `500`, "reasoning_effort": `"low"`, "service_tier": `"flex"`}},
		{ProviderAnthropic, anthropicText, "", func() stepwise.ModelSettings { s := settings; s.ReasoningEffort = ""; return s }(), map[string]string{
			"temperature": `0.3`, "top_p": `0.9`, "max_tokens": `500`, "tool_choice": `{"name":"lookup_order","disable_parallel_tool_use":true,"type":"tool"}`,
			"service_tier": `"flex"`, "metadata": `{"k":"v"}`, "system": `[{"text":"Be brief.","type":"text"}]`}},
	}
	for _, tc := range cases {
		t.Run(tc.provider, func(t *testing.T) {
			fp := newFakeProvider(t, tc.stream)
			c := mustNew(t, Config{Provider: tc.provider, Name: "m", APIBase: fp.srv.URL + tc.base, RequestOptions: opts, Settings: tc.settings}, keyEnv)
			if _, _, err := call(t, c, &stepwise.ModelRequest{Instructions: "Be brief.", Items: []stepwise.ModelItem{user("hi")}, Tools: []pluginapi.ToolDefinition{lookupTool}}); err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(fp.body(0), &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
			if got["model"] == nil || string(got["stream"]) != "true" {
				t.Errorf("model %s stream %s", got["model"], got["stream"])
			}
		})
	}
	// Without tools, no tool_choice or parallel_tool_calls (providers refuse them).
	fp := newFakeProvider(t, chatText)
	c := mustNew(t, Config{Provider: ProviderOpenAIChat, Name: "m", APIBase: fp.srv.URL + "/v1", Settings: settings}, keyEnv)
	if _, _, err := call(t, c, &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	if b := string(fp.body(0)); strings.Contains(b, "tool_choice") || strings.Contains(b, "parallel_tool_calls") {
		t.Errorf("tool settings without tools: %s", b)
	}
	// The request's model and settings win over the configured ones.
	fp = newFakeProvider(t, chatText)
	c = mustNew(t, Config{Provider: ProviderOpenAIChat, Name: "configured", APIBase: fp.srv.URL + "/v1", Settings: settings}, keyEnv)
	if _, _, err := call(t, c, &stepwise.ModelRequest{Model: "requested", Settings: stepwise.ModelSettings{Temperature: f64(1)}, Items: []stepwise.ModelItem{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	if b := string(fp.body(0)); !strings.Contains(b, `"model":"requested"`) || !strings.Contains(b, `"temperature":1`) || !strings.Contains(b, `"top_p":0.9`) {
		t.Errorf("request overrides: %s", b)
	}
}

func TestEstimateInputTokens(t *testing.T) {
	req := &stepwise.ModelRequest{Instructions: "Help.", Items: mixedTranscript(t), Tools: []pluginapi.ToolDefinition{lookupTool}}
	for _, cfg := range providerConfigs("http://127.0.0.1:1") {
		if got, want := mustNew(t, cfg, keyEnv).EstimateInputTokens(req), stepwise.EstimateTokens(req); got != want || got == 0 {
			t.Errorf("%s: %d, want %d", cfg.Provider, got, want)
		}
	}
}
