package model

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// providerBases returns a config of each provider against url.
func providerConfigs(url string) []Config {
	return []Config{
		{Provider: ProviderOpenAI, Name: "gpt-5-mini", APIBase: url + "/v1"},
		{Provider: ProviderOpenAIChat, Name: "gpt-4.1-mini", APIBase: url + "/v1"},
		{Provider: ProviderOpenAICompatible, Name: "llama3", APIBase: url + "/v1", APIKeyEnv: "OPENAI_API_KEY"},
		{Provider: ProviderAnthropic, Name: "claude-sonnet-4-5", APIBase: url},
	}
}

var keyEnv = envOf("OPENAI_API_KEY", testKey, "ANTHROPIC_API_KEY", testKey)

// TestHTTPStatusErrors: 400/401/403/404/422 are permanent, the rest are
// retryable; each error names the provider, the API and the status, says
// when the context is too long, never shows the key, and comes from exactly
// one request (the SDK's retries are off).
func TestHTTPStatusErrors(t *testing.T) {
	var status atomic.Int32
	var hits atomic.Int32
	body := `{"error":{"message":"Bad thing for key ` + testKey + `","type":"invalid_request_error","code":"bad"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	for _, cfg := range providerConfigs(srv.URL) {
		c := mustNew(t, cfg, keyEnv)
		for _, code := range []int{400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 529} {
			status.Store(int32(code))
			hits.Store(0)
			_, _, err := call(t, c, &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}})
			if err == nil {
				t.Fatalf("%s %d: no error", cfg.Provider, code)
			}
			wantPerm := code == 400 || code == 401 || code == 403 || code == 404 || code == 422
			if isPermanent(err) != wantPerm {
				t.Errorf("%s %d: permanent = %v, want %v: %v", cfg.Provider, code, isPermanent(err), wantPerm, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, cfg.Provider+" ") || !strings.Contains(msg, fmt.Sprintf("HTTP %d", code)) || !strings.Contains(msg, "Bad thing") {
				t.Errorf("%s %d: message %q", cfg.Provider, code, msg)
			}
			if strings.Contains(msg, testKey) {
				t.Errorf("%s %d: the key is in the error: %q", cfg.Provider, code, msg)
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("%s %d: %d requests, want 1", cfg.Provider, code, n)
			}
		}
	}
	// Context length.
	body = `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`
	status.Store(400)
	for _, cfg := range providerConfigs(srv.URL) {
		_, _, err := call(t, mustNew(t, cfg, keyEnv), &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}})
		if !isPermanent(err) || !strings.Contains(err.Error(), "HTTP 400: context length exceeded") {
			t.Errorf("%s: %v", cfg.Provider, err)
		}
	}
	body = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`
	_, _, err := call(t, mustNew(t, providerConfigs(srv.URL)[3], keyEnv), &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}})
	if !isPermanent(err) || !strings.Contains(err.Error(), "context length exceeded") || !strings.Contains(err.Error(), "prompt is too long") {
		t.Errorf("anthropic prompt too long: %v", err)
	}
}

// TestStreamFaults: streams that end early, error events inside a stream,
// and a refused connection.
func TestStreamFaults(t *testing.T) {
	cases := []struct {
		name      string
		provider  string
		stream    string
		permanent bool
		want      string
	}{
		{"responses ends without completed", ProviderOpenAI,
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}\n\n", false, "the stream ended before response.completed"},
		{"responses failed", ProviderOpenAI,
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"r\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed.\"}}}\n\n", false, "server_error"},
		{"responses error event", ProviderOpenAI,
			"event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_prompt\",\"message\":\"Invalid prompt.\"}\n\n", true, "invalid_prompt"},
		{"chat ends without finish_reason", ProviderOpenAIChat,
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n", false, "the stream ended before a finish_reason"},
		{"anthropic overloaded", ProviderAnthropic,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", false, "overloaded_error"},
		{"anthropic ends without message_stop", ProviderAnthropic,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n", false, "the stream ended before message_stop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, []byte(tc.stream))
			base := fp.srv.URL + "/v1"
			if tc.provider == ProviderAnthropic {
				base = fp.srv.URL
			}
			_, _, err := call(t, mustNew(t, Config{Provider: tc.provider, Name: "m", APIBase: base}, keyEnv), &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}})
			if err == nil || isPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (permanent %v), want %q permanent %v", err, isPermanent(err), tc.want, tc.permanent)
			}
		})
	}
	// Nothing listens: retryable.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	for _, cfg := range providerConfigs("http://" + addr) {
		_, _, err := call(t, mustNew(t, cfg, keyEnv), &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}})
		if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s refused: %v", cfg.Provider, err)
		}
	}
}

// TestRetryAfter: a 429 or 503 whose response says when to retry
// (Retry-After in seconds or as a date, or OpenAI's retry-after-ms) comes
// back as a pluginapi.RetryAfterError with that delay from every provider,
// so the session's Step waits it out; a permanent status keeps no delay.
func TestRetryAfter(t *testing.T) {
	var header, value atomic.Value
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(header.Load().(string), value.Load().(string))
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
	}))
	defer srv.Close()
	for _, cfg := range providerConfigs(srv.URL) {
		c := mustNew(t, cfg, keyEnv)
		for _, tt := range []struct {
			code          int
			header, value string
			want          time.Duration
		}{
			{429, "Retry-After", "7", 7 * time.Second},
			{503, "Retry-After-Ms", "1500", 1500 * time.Millisecond},
			{429, "X-Other", "1", 0},
			{400, "Retry-After", "7", 0},
		} {
			status.Store(int32(tt.code))
			header.Store(tt.header)
			value.Store(tt.value)
			_, _, err := call(t, c, &stepwise.ModelRequest{Items: []stepwise.ModelItem{user("hi")}})
			var ra *pluginapi.RetryAfterError
			got := time.Duration(0)
			if errors.As(err, &ra) {
				got = ra.Delay
			}
			if got != tt.want || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", tt.code)) {
				t.Errorf("%s %d %s: %s: delay %v, want %v (%v)", cfg.Provider, tt.code, tt.header, tt.value, got, tt.want, err)
			}
		}
	}
}

func TestRetryAfterDelay(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": "Wed, 02 Dec 2026 12:00:30 GMT"}, 30 * time.Second, true},
		{map[string]string{"Retry-After": "Wed, 02 Dec 2026 11:59:00 GMT"}, 0, false},
		{map[string]string{"Retry-After": "999999"}, pluginapi.MaxRetryAfter, true},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, 9 * time.Second, true},
		{map[string]string{}, 0, false},
	} {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, ok := RetryAfterDelay(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%v: %v %v, want %v %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}
