package stepwise

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// refusing is a model client that refuses a forced tool choice.
type refusing struct{ *ScriptedModelClient }

func (refusing) SupportsForcedToolChoice(string, ModelSettings) bool { return false }

func planRunner(t *testing.T, choice string, model ModelClient, resolve func(json.RawMessage) (*ModelChoice, error)) (*Runner, error) {
	t.Helper()
	r := NewRunner("test", "0", func(ctx context.Context, agent string, _ json.RawMessage) (*AgentDefinition, error) {
		return &AgentDefinition{Name: agent, Instructions: `model {{with index .SessionSettings "model"}}{{.}}{{else}}default{{end}}`, Model: model,
			PlanningToolChoice: choice, ResolveModel: resolve}, nil
	})
	_, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "a", RunnerConfig: []byte("null")})
	return r, err
}

// TestPlanningToolChoice: "required" forces write_todos on a planning
// turn's first model call while no draft exists, and nowhere else; "auto"
// never forces it. An unknown value, and "required" with a model that
// refuses a forced choice, are definition errors.
func TestPlanningToolChoice(t *testing.T) {
	writeTodos := pluginapi.ToolDefinition{Name: "write_todos", InputSchema: json.RawMessage(`{"type":"object"}`)}
	tests := []struct {
		name     string
		choice   string
		mode     string
		runState string
		plan     *pluginapi.Plan
		want     string
	}{
		{"required, first planning call", "required", "planning", "", nil, "required"},
		{"required, a replaced active plan", "required", "planning", "", &pluginapi.Plan{Revision: 1, Status: "active"}, "required"},
		{"required, a draft exists", "required", "planning", "", &pluginapi.Plan{Revision: 1, Status: "draft"}, ""},
		{"required, a later call of the turn", "required", "planning", `{"model_calls":1}`, nil, ""},
		{"required, a chat turn", "required", "chat", "", nil, ""},
		{"auto", "auto", "planning", "", nil, ""},
		{"default", "", "planning", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := NewScriptedModelClient(func(context.Context, *ModelRequest) (ScriptedReply, error) {
				return ScriptedReply{Text: "a question first"}, nil
			})
			r, err := planRunner(t, tt.choice, model, nil)
			if err != nil {
				t.Fatal(err)
			}
			turn := pluginapi.TurnContext{Agent: "a", SessionID: "s", TurnID: "turn-1", Attempt: 1, RunState: tt.runState,
				Messages:        []pluginapi.Message{{Sequence: 1, Role: pluginapi.RoleUser, Text: "plan it"}},
				InteractionMode: tt.mode, Plan: tt.plan, HostTools: []pluginapi.ToolDefinition{writeTodos},
				Policies: pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified}}
			if _, err := r.RunModelStep(context.Background(), &pluginapi.RunModelStepRequest{Turn: turn, Events: &recorder{}}); err != nil {
				t.Fatal(err)
			}
			if got := model.Requests()[0].Settings.ToolChoice; got != tt.want {
				t.Errorf("tool_choice = %q, want %q", got, tt.want)
			}
		})
	}

	if _, err := planRunner(t, "always", NewScriptedModelClient(nil), nil); err == nil || !strings.Contains(err.Error(), `planning_tool_choice: "always" is neither "auto" nor "required"`) {
		t.Errorf("an unknown choice: %v", err)
	}
	if _, err := planRunner(t, "required", refusing{NewScriptedModelClient(nil)}, nil); err == nil || !strings.Contains(err.Error(), "refuses a forced tool choice") {
		t.Errorf("required with a refusing model: %v", err)
	}
	if _, err := planRunner(t, "auto", refusing{NewScriptedModelClient(nil)}, nil); err != nil {
		t.Errorf("auto with a refusing model: %v", err)
	}
}

// TestInstructionsSeeTheSessionSettings and a resolve_model error that
// RunModel retries (not a permanent failure), as the reference does.
func TestInstructionsSeeTheSessionSettingsAndResolveModelErrorsRetry(t *testing.T) {
	model := NewScriptedModelClient(func(context.Context, *ModelRequest) (ScriptedReply, error) { return ScriptedReply{Text: "ok"}, nil })
	fail := false
	r, err := planRunner(t, "", model, func(raw json.RawMessage) (*ModelChoice, error) {
		if fail {
			return nil, errors.New("no model named deep")
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	turn := pluginapi.TurnContext{Agent: "a", SessionID: "s", TurnID: "turn-1", Attempt: 1,
		Messages:        []pluginapi.Message{{Sequence: 1, Role: pluginapi.RoleUser, Text: "hi"}},
		SessionSettings: json.RawMessage(`{"model":"deep"}`)}
	if _, err := r.RunModelStep(context.Background(), &pluginapi.RunModelStepRequest{Turn: turn, Events: &recorder{}}); err != nil {
		t.Fatal(err)
	}
	if got := model.Requests()[0].Instructions; got != "model deep" {
		t.Errorf("instructions = %q, want the setting", got)
	}
	turn.SessionSettings = nil
	if _, err := r.RunModelStep(context.Background(), &pluginapi.RunModelStepRequest{Turn: turn, Events: &recorder{}}); err != nil {
		t.Fatal(err)
	}
	if got := model.Requests()[1].Instructions; got != "model default" {
		t.Errorf("instructions without settings = %q", got)
	}
	fail = true
	_, err = r.RunModelStep(context.Background(), &pluginapi.RunModelStepRequest{Turn: turn, Events: &recorder{}})
	var perm *pluginapi.PermanentError
	if err == nil || errors.As(err, &perm) || !strings.Contains(err.Error(), "resolve_model: no model named deep") {
		t.Errorf("error = %v, want a retryable resolve_model error", err)
	}
}
