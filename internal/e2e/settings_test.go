package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestSessionSettingsPickTheModel: a Stepwise agent configured with two
// models; a session started with {"model":"deep"} calls the deep model, an
// update switches the next turn back ({} clears), and a setting that names
// no configured model fails the turn with an error that says so. Each
// model call is recorded by aimock, which speaks the OpenAI wire format.
func TestSessionSettingsPickTheModel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	srv := aimock.Start(t, filepath.Join("testdata", "aimock", "settings.json"))
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/plugins/stepwise/cmd/dex-runner-stepwise")
	s := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  stepwise: {command: %s, env: [OPENAI_API_KEY]}
agents:
  - name: chat
    flow_type: ChatAgent
    runner: stepwise
    runner_config:
      instructions: You answer briefly.
      model: {provider: openai, name: gpt-5-mini, api_base: "%[2]s/v1", api_key_env: OPENAI_API_KEY}
      models:
        deep: {provider: openai, name: gpt-5, api_base: "%[2]s/v1", api_key_env: OPENAI_API_KEY}
`, plugin, srv.URL))
	s.Setenv("OPENAI_API_KEY", "sk-aimock-settings-test")
	s.StartWorker()
	models := func() []string {
		var out []string
		for _, r := range srv.Requests("/v1/responses") {
			var body struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal([]byte(r.Body), &body)
			out = append(out, body.Model)
		}
		return out
	}
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{
		FlowType: "ChatAgent", InitialMessage: "which model 1", SessionSettings: json.RawMessage(`{"model":"deep"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(n int) wire.Snapshot {
		t.Helper()
		return s.WaitForSnapshot(fmt.Sprint("turn ", n), id, func(s wire.Snapshot) bool {
			return s.State != nil && s.State.TurnCount == n && s.State.Status == wire.StatusWaitingForUserMessage
		})
	}
	snap := turn(1)
	if string(snap.SessionSettings) != `{"model":"deep"}` {
		t.Errorf("snapshot settings = %s", snap.SessionSettings)
	}
	if ok, err := s.Sessions.UpdateSessionSettings(ctx(t), id, json.RawMessage(`{}`)); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "which model 2"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if snap = turn(2); string(snap.SessionSettings) != `{}` {
		t.Errorf("snapshot settings after {} = %s", snap.SessionSettings)
	}
	if got, want := strings.Join(models(), " "), "gpt-5 gpt-5-mini"; got != want {
		t.Errorf("models called: %s, want %s", got, want)
	}
	// A model the agent does not have: the turn fails and says why.
	if ok, err := s.Sessions.UpdateSessionSettings(ctx(t), id, json.RawMessage(`{"model":"https://evil.example/v1"}`)); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "which model 3"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = turn(3)
	if want := `the session setting "model" names no model of agent chat (it may name: deep)`; !strings.Contains(snap.State.LastTurnError, want) {
		t.Errorf("last_turn_error = %q, want it to contain %q", snap.State.LastTurnError, want)
	}
	if n := len(models()); n != 2 {
		t.Errorf("%d model calls, want 2 (the refused turn makes none)", n)
	}
	// Over the limit: refused before it is sent.
	if _, err := s.Sessions.UpdateSessionSettings(ctx(t), id, json.RawMessage(`{"k":"`+strings.Repeat("x", 17000)+`"}`)); err == nil || !strings.Contains(err.Error(), "at most 16384") {
		t.Errorf("17 KB of settings: %v", err)
	}
}

// TestAStartWithBadSettingsFailsTheSession: a start (from any Temporal
// client) whose settings are not one object fails the session at once,
// without a retry, with the spec's reason; over HTTP such settings, and an
// update of them, are a 400 that names the problem.
func TestAStartWithBadSettingsFailsTheSession(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	run, err := s.Client.ExecuteWorkflow(ctx(t), temporalclient.StartWorkflowOptions{ID: "bad-settings", TaskQueue: wire.DefaultTaskQueue}, flowType,
		wire.StartInput{InitialMessage: "hello", SessionSettings: json.RawMessage(`["fast"]`)})
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx(t), nil)
	if err == nil || !strings.Contains(err.Error(), wire.InvalidStartSessionSettingsReason+": they must be one JSON object, not an array") {
		t.Fatalf("the session ended with %v", err)
	}
	// httpclient.StartRequest has neither active_step_search_mode nor
	// session_settings: these two starts stay raw.
	if code, body := do(t, "POST", base+"/v1/sessions", tokenAll, `{"agent":"test","active_step_search_mode":"all"}`); code != 400 || !strings.Contains(string(body), `active_step_search_mode \"all\": want`) {
		t.Errorf("unknown search mode: %d %s", code, body)
	}
	code, body := do(t, "POST", base+"/v1/sessions", tokenAll, `{"agent":"test","session_settings":"fast"}`)
	if code != 400 || !strings.Contains(string(body), "session_settings: they must be one JSON object, not a string") {
		t.Errorf("start over HTTP with a string: %d %s", code, body)
	}
	id := start(t, s, "hello")
	c := apiClient(t, base, tokenAll)
	var apiErr *httpclient.APIError
	if ok, err := c.UpdateSettings(ctx(t), id, json.RawMessage(`null`)); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "must be one JSON object") {
		t.Errorf("PUT null: %v, %v", ok, err)
	}
	if ok, err := c.UpdateSettings(ctx(t), id, json.RawMessage(`{"model":"fast"}`)); err != nil || !ok {
		t.Errorf("PUT: %v, %v", ok, err)
	}
	hs, _, err := c.Snapshot(ctx(t), id)
	if err != nil || string(hs.SessionSettings) != `{"model":"fast"}` {
		t.Errorf("snapshot settings: %v %s", err, hs.SessionSettings)
	}
}
