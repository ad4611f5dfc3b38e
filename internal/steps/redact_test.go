package steps

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/redact"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

const secret = "sk-live-0123456789abcdef"

// leakyRunner puts the secret in every error text it returns.
type leakyRunner struct {
	pluginapi.Runner
	modelErr error
	toolErr  error
}

func (r leakyRunner) Info(context.Context, *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	return &pluginapi.InfoResponse{Name: "leaky"}, nil
}

func (r leakyRunner) RunModelStep(context.Context, *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	return nil, r.modelErr
}

func (r leakyRunner) ExecuteDeferredToolCall(context.Context, *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	return nil, r.toolErr
}

func (r leakyRunner) BuildUserMessage(context.Context, *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	return nil, r.modelErr
}

type oneRunner struct{ r pluginapi.Runner }

func (o oneRunner) Runner(string) (pluginapi.Runner, pluginapi.Capabilities, error) {
	return o.r, pluginapi.Capabilities{}, nil
}

func activityEnv(t *testing.T, r pluginapi.Runner) *testsuite.TestActivityEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := &Activities{Runners: oneRunner{r}, Redact: redact.New(secret).String}
	env.RegisterActivityWithOptions(a.RunModel, activity.RegisterOptions{Name: "RunModel"})
	env.RegisterActivityWithOptions(a.BuildUserMessage, activity.RegisterOptions{Name: "BuildUserMessage"})
	return env
}

// TestRunnerErrorTextsAreRedacted: a runner's error texts reach the
// session's history (last_turn_error, turn_failed, the model) only after
// the config's secrets were removed; a permanent error stays permanent.
func TestRunnerErrorTextsAreRedacted(t *testing.T) {
	leak := errors.New("provider refused key " + secret)
	tests := []struct {
		name          string
		runner        leakyRunner
		activity      string
		input         any
		wantPermanent bool
	}{
		{"model failure", leakyRunner{modelErr: leak}, "RunModel", session.TurnInput{Agent: "a"}, false},
		{"permanent model failure", leakyRunner{modelErr: pluginapi.Permanent(leak)}, "RunModel", session.TurnInput{Agent: "a"}, true},
		{"user message failure", leakyRunner{modelErr: leak}, "BuildUserMessage", session.BuildUserMessageInput{Agent: "a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activityEnv(t, tt.runner)
			_, err := env.ExecuteActivity(tt.activity, tt.input)
			if err == nil {
				t.Fatal("the activity succeeded")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the secret reached the Step's error: %v", err)
			}
			if !strings.Contains(err.Error(), "provider refused key "+redact.Placeholder) {
				t.Errorf("error = %v, want the redacted text", err)
			}
			var app *temporal.ApplicationError
			if !errors.As(err, &app) {
				t.Fatalf("error %T is not an application error", err)
			}
			if app.NonRetryable() != tt.wantPermanent {
				t.Errorf("non-retryable = %v, want %v", app.NonRetryable(), tt.wantPermanent)
			}
		})
	}
}

type sinkFunc func(events.Event)

func (f sinkFunc) Publish(e events.Event) { f(e) }

// TestRunnerEventsTheSessionAccepts: a runner (in any language: the host
// checks what arrives over the wire) may write the standard types runners
// write and prefixed custom types; the session's own types are dropped.
func TestRunnerEventsTheSessionAccepts(t *testing.T) {
	var got []string
	a := &Activities{Events: sinkFunc(func(e events.Event) { got = append(got, e.Type+" "+string(e.Payload)) })}
	w := &writer{a: a, session: "s", turn: "turn-1"}
	for _, e := range []struct {
		typ     string
		payload string
	}{
		{"tool_call_started", `{"tool_call_id":"c9","tool_name":"calc"}`},
		{"tool_call_finished", `{"tool_call_id":"c9","tool_name":"calc","status":"failed"}`},
		{"lc.handoff", `{"to":"b"}`},
		{"turn_completed", `{"message_count":3}`},
		{"tool_call_finished", `{"tool_call_id":"c9","tool_name":"calc","status":"approved"}`},
		{"handoff", `{}`},
	} {
		_ = w.WriteEvent(e.typ, json.RawMessage(e.payload))
	}
	want := []string{
		`tool_call_started {"tool_call_id":"c9","tool_name":"calc"}`,
		`tool_call_finished {"tool_call_id":"c9","tool_name":"calc","status":"failed"}`,
		`lc.handoff {"to":"b"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("published:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Step's own log lines carry its session, turn, Step type, execution ID
// and attempt, and the runner's error text in them is redacted.
func TestStepLogLinesCarryTheStepAndNoSecret(t *testing.T) {
	var buf strings.Builder
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := &Activities{Runners: oneRunner{leakyRunner{modelErr: errors.New("provider refused key " + secret)}}, Redact: redact.New(secret).String,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	env.RegisterActivityWithOptions(a.RecordTurnFailure, activity.RegisterOptions{Name: "RecordTurnFailure"})
	if _, err := env.ExecuteActivity("RecordTurnFailure", session.TurnFailureInput{
		Turn: session.TurnInput{Agent: "a", SessionID: "s-1", TurnID: "turn-4"}, Note: "the turn failed",
	}); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if !strings.Contains(line, "build_user_message failed") {
		t.Fatalf("no log line: %q", line)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"session_id", "turn_id", "step", "step_execution_id", "attempt"} {
		if rec[k] == nil || rec[k] == "" {
			t.Errorf("the line has no %s: %s", k, line)
		}
	}
	if rec["turn_id"] != "turn-4" || rec["step"] != "RecordTurnFailure" || rec["attempt"] != float64(1) {
		t.Errorf("turn %v, step %v, attempt %v", rec["turn_id"], rec["step"], rec["attempt"])
	}
	if strings.Contains(line, secret) {
		t.Errorf("the secret reached the log: %s", line)
	}
}
