package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// Providers of Config.Provider.
const (
	ProviderOpenAI           = "openai"
	ProviderOpenAIChat       = "openai-chat"
	ProviderOpenAICompatible = "openai-compatible"
	ProviderAnthropic        = "anthropic"
	// ProviderScripted is built by the caller in Go; New refuses it.
	ProviderScripted = "scripted"
)

// APIs of stepwise.ModelOutputItem.API.
const (
	APIResponses       = "responses"
	APIChatCompletions = "chat_completions"
	APIMessages        = "messages"
)

// Default environment variables of the API key.
const (
	DefaultOpenAIKeyEnv    = "OPENAI_API_KEY"
	DefaultAnthropicKeyEnv = "ANTHROPIC_API_KEY"
)

// Default endpoints.
const (
	DefaultOpenAIBase    = "https://api.openai.com/v1/"
	DefaultAnthropicBase = "https://api.anthropic.com/"
)

// DefaultAnthropicMaxTokens is max_tokens when settings.max_output_tokens is
// unset (the Messages API requires one). With thinking it is added to the
// thinking budget.
const DefaultAnthropicMaxTokens = 8192

// Config is a model's configuration in an agent's runner_config:
//
//	model:
//	  provider: openai            # openai | openai-chat | openai-compatible | anthropic | scripted
//	  name: gpt-5-mini
//	  api_base: https://...       # optional; required for openai-compatible
//	  api_key_env: OPENAI_API_KEY # the variable that holds the key; list it in the plugin's env
//	  request_options: {service_tier: flex}   # extra top-level request fields
//	  settings: {temperature: 0.2, max_output_tokens: 2000, reasoning_effort: low, tool_choice: auto}
//
// It decodes strictly: an unknown key is an error.
type Config struct {
	Provider string `json:"provider"`
	// Name is the provider's model name.
	Name string `json:"name"`
	// APIBase overrides the endpoint: for openai and the chat providers the
	// base that "responses" or "chat/completions" is appended to (such as
	// http://localhost:11434/v1), for anthropic the base that "v1/messages"
	// is appended to.
	APIBase string `json:"api_base,omitempty"`
	// APIKeyEnv names the environment variable that holds the API key
	// (default OPENAI_API_KEY or ANTHROPIC_API_KEY; openai-compatible sends
	// no key unless it is set). The worker passes the plugin only the
	// variables its config lists in plugins.<name>.env.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// RequestOptions are extra top-level fields of every request, passed
	// through unchanged (a key with dots sets a nested field).
	RequestOptions map[string]any `json:"request_options,omitempty"`
	// Settings are the sampling settings. Settings.Extra (a JSON object) is
	// merged over RequestOptions.
	Settings stepwise.ModelSettings `json:"settings"`
}

// UnmarshalJSON decodes strictly: unknown keys are errors.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if dec.More() {
		return errors.New("model: trailing data after the object")
	}
	*c = Config(p)
	return nil
}

// ParseConfig decodes a model configuration strictly.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	err := json.Unmarshal(raw, &c)
	return c, err
}

var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// Validate checks the configuration without the environment. Its error
// lists every problem, each naming its field.
func (c Config) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch c.Provider {
	case ProviderOpenAI, ProviderOpenAIChat, ProviderOpenAICompatible, ProviderAnthropic:
	case ProviderScripted:
		add(`provider "scripted": scripted model clients are built in code (stepwise.NewScriptedModelClient), not by model.New`)
	case "":
		add("provider is required (openai, openai-chat, openai-compatible or anthropic)")
	default:
		add("provider %q is unknown (want openai, openai-chat, openai-compatible, anthropic or scripted)", c.Provider)
	}
	if strings.TrimSpace(c.Name) == "" {
		add("name is required (the provider's model name, such as gpt-5-mini)")
	}
	if c.APIBase != "" {
		if u, err := url.Parse(c.APIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("api_base %q is not an http or https URL", c.APIBase)
		} else if u.User != nil {
			add("api_base must not hold credentials: name the key's variable in api_key_env")
		}
	} else if c.Provider == ProviderOpenAICompatible {
		add("api_base is required for openai-compatible (such as http://localhost:11434/v1)")
	}
	if c.APIKeyEnv != "" && !validEnvName(c.APIKeyEnv) {
		add("api_key_env %q is not an environment variable name", c.APIKeyEnv)
	}
	s := c.Settings
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2 || math.IsNaN(*s.Temperature)) {
		add("settings.temperature %v is outside 0..2", *s.Temperature)
	}
	if s.TopP != nil && (*s.TopP < 0 || *s.TopP > 1 || math.IsNaN(*s.TopP)) {
		add("settings.top_p %v is outside 0..1", *s.TopP)
	}
	if s.MaxOutputTokens < 0 {
		add("settings.max_output_tokens %d is negative", s.MaxOutputTokens)
	}
	if s.ReasoningEffort != "" && !contains(reasoningEfforts, s.ReasoningEffort) {
		add("settings.reasoning_effort %q is unknown (want %s)", s.ReasoningEffort, strings.Join(reasoningEfforts, ", "))
	}
	if s.ThinkingBudget != 0 {
		switch {
		case c.Provider != ProviderAnthropic && c.Provider != "":
			add("settings.thinking_budget is for provider anthropic; use settings.reasoning_effort with %s", c.Provider)
		case s.ThinkingBudget < 1024:
			add("settings.thinking_budget %d is below Anthropic's minimum of 1024", s.ThinkingBudget)
		case s.MaxOutputTokens != 0 && s.MaxOutputTokens <= s.ThinkingBudget:
			add("settings.max_output_tokens %d must be greater than settings.thinking_budget %d", s.MaxOutputTokens, s.ThinkingBudget)
		}
	}
	if c.Provider == ProviderAnthropic && s.Temperature != nil && *s.Temperature != 1 &&
		(s.ThinkingBudget > 0 || (s.ReasoningEffort != "" && s.ReasoningEffort != "none")) {
		add("settings.temperature must be unset (or 1) with Anthropic extended thinking")
	}
	switch s.ToolChoice {
	case "", "auto", "none", "required":
	default:
		if !validToolName(s.ToolChoice) {
			add("settings.tool_choice %q is not auto, none, required or a tool name", s.ToolChoice)
		}
	}
	if s.ToolChoice != "" && s.ToolChoice != "auto" && s.ToolChoice != "none" && !SupportsForcedToolChoice(c) {
		add("settings.tool_choice %q forces a tool, which %s refuses with extended thinking or this model", s.ToolChoice, c.Name)
	}
	if len(s.Extra) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(s.Extra, &m); err != nil || m == nil {
			add("settings.extra must be a JSON object of extra request fields")
		}
	}
	for k := range c.RequestOptions {
		if strings.TrimSpace(k) == "" {
			add("request_options has an empty key")
		}
	}
	if len(problems) > 0 {
		return errors.New("model: " + strings.Join(problems, "; "))
	}
	return nil
}

// SupportsForcedToolChoice reports whether the model accepts a forced tool
// choice ("required" or a tool name). Per the spec, Claude Opus 5.5, Claude
// Sonnet 5.5 and Anthropic extended thinking refuse one: for a Claude model
// (provider anthropic, or a model name containing "claude" behind a
// compatible server) a thinking budget, a thinking option in the extras
// that is not disabled, or a reasoning_effort other than "none" counts as
// extended thinking. OpenAI and Gemini models accept a forced tool choice
// with reasoning.
func SupportsForcedToolChoice(cfg Config) bool {
	name := strings.ToLower(cfg.Name)
	claude := cfg.Provider == ProviderAnthropic || strings.Contains(name, "claude")
	if !claude {
		return true
	}
	for _, refuses := range []string{"claude-opus-5-5", "claude-opus-5.5", "claude-sonnet-5-5", "claude-sonnet-5.5"} {
		if strings.Contains(name, refuses) {
			return false
		}
	}
	s := cfg.Settings
	if s.ThinkingBudget > 0 || (s.ReasoningEffort != "" && s.ReasoningEffort != "none") {
		return false
	}
	extras, _ := mergedExtras(cfg.RequestOptions, s.Extra)
	if t, ok := extras["thinking"]; ok {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t, &v) != nil || v.Type != "disabled" {
			return false
		}
	}
	return true
}

// New returns the model client of cfg. getenv reads the plugin's
// environment (pass os.Getenv); the API key comes only from the variable
// cfg.APIKeyEnv names, or the provider's default.
func New(cfg Config, getenv func(string) string) (stepwise.ModelClient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if getenv == nil {
		return nil, errors.New("model: New needs getenv (pass os.Getenv)")
	}
	extras, err := mergedExtras(cfg.RequestOptions, cfg.Settings.Extra)
	if err != nil {
		return nil, err
	}
	keyEnv := cfg.APIKeyEnv
	if keyEnv == "" {
		switch cfg.Provider {
		case ProviderOpenAI, ProviderOpenAIChat:
			keyEnv = DefaultOpenAIKeyEnv
		case ProviderAnthropic:
			keyEnv = DefaultAnthropicKeyEnv
		}
	}
	var key string
	if keyEnv != "" {
		key = getenv(keyEnv)
		if key == "" {
			return nil, fmt.Errorf("model: provider %s: the API key variable %s (api_key_env) is not set in the plugin's environment; set it and list it in the worker config under plugins.<plugin>.env", cfg.Provider, keyEnv)
		}
	}
	b := base{cfg: cfg, key: key, extras: extras, http: newHTTPClient()}
	switch cfg.Provider {
	case ProviderOpenAI:
		return newResponsesClient(b), nil
	case ProviderOpenAIChat, ProviderOpenAICompatible:
		return newChatClient(b), nil
	default:
		return newAnthropicClient(b), nil
	}
}

// base is what every client shares.
type base struct {
	cfg    Config
	key    string
	extras map[string]json.RawMessage
	http   *http.Client
	// clock drives the delta batching; nil is the real clock.
	clock clock
}

func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 10 * time.Minute
	return &http.Client{Transport: t}
}

// settings returns the request's settings over the configured ones.
func (b *base) settings(req *stepwise.ModelRequest) stepwise.ModelSettings {
	s := b.cfg.Settings
	r := req.Settings
	if r.Temperature != nil {
		s.Temperature = r.Temperature
	}
	if r.TopP != nil {
		s.TopP = r.TopP
	}
	if r.MaxOutputTokens != 0 {
		s.MaxOutputTokens = r.MaxOutputTokens
	}
	if r.ReasoningEffort != "" {
		s.ReasoningEffort = r.ReasoningEffort
	}
	if r.ThinkingBudget != 0 {
		s.ThinkingBudget = r.ThinkingBudget
	}
	if r.ToolChoice != "" {
		s.ToolChoice = r.ToolChoice
	}
	if r.ParallelToolCalls != nil {
		s.ParallelToolCalls = r.ParallelToolCalls
	}
	if len(r.Extra) > 0 {
		s.Extra = r.Extra
	}
	return s
}

// model returns the request's model name, else the configured one.
func (b *base) model(req *stepwise.ModelRequest) string {
	if req.Model != "" {
		return req.Model
	}
	return b.cfg.Name
}

// requestExtras are the extra fields of one request, sorted by key.
func (b *base) requestExtras(s stepwise.ModelSettings) ([]extraField, error) {
	extras := b.extras
	if len(s.Extra) > 0 && !bytes.Equal(s.Extra, b.cfg.Settings.Extra) {
		var err error
		if extras, err = mergedExtras(b.cfg.RequestOptions, s.Extra); err != nil {
			return nil, err
		}
	}
	out := make([]extraField, 0, len(extras))
	for k, v := range extras {
		out = append(out, extraField{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}

type extraField struct {
	key   string
	value json.RawMessage
}

// mergedExtras merges settings.extra over request_options.
func mergedExtras(opts map[string]any, extra json.RawMessage) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for k, v := range opts {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("model: request_options.%s: %w", k, err)
		}
		out[k] = b
	}
	if len(extra) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(extra, &m); err != nil {
			return nil, fmt.Errorf("model: settings.extra must be a JSON object: %w", err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

func validEnvName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z'):
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
