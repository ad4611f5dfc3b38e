package steps

import (
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestCheckModelResponse(t *testing.T) {
	done := &pluginapi.TurnCompleted{NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: "hi", Item: `{"a":1}`}}}
	tools := &pluginapi.ToolCallsRequested{RunState: "x"}
	tests := []struct {
		name string
		resp *pluginapi.RunModelStepResponse
		want string
	}{
		{"ok", &pluginapi.RunModelStepResponse{TurnCompleted: done}, ""},
		{"nil", nil, "no response"},
		{"both", &pluginapi.RunModelStepResponse{TurnCompleted: done, ToolCallsRequested: tools}, "both turn_completed and tool_calls_requested"},
		{"neither", &pluginapi.RunModelStepResponse{}, "neither turn_completed nor tool_calls_requested"},
		{"bad role", &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{NewMessages: []pluginapi.FrameworkMessage{{Role: "system"}}}}, `new_messages[0] has unknown role "system"`},
		{"bad item", &pluginapi.RunModelStepResponse{ToolCallsRequested: &pluginapi.ToolCallsRequested{NewMessages: []pluginapi.FrameworkMessage{{Role: "assistant", Item: "{"}}}}, "framework_item is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkModelResponse(tt.resp)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "runner returned a malformed outcome") {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestToolOutcome(t *testing.T) {
	in := session.ToolInput{ToolCall: wire.ToolCall{ToolName: "report"}}
	out, err := toolOutcome(in, &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: "ok"}}, false)
	if err != nil || out.Output == nil || *out.Output != "ok" {
		t.Errorf("result: %+v %v", out, err)
	}
	out, err = toolOutcome(in, &pluginapi.ExecuteToolResponse{Error: &pluginapi.ToolExecutionError{Message: "bad"}}, false)
	if err != nil || out.Error == nil || *out.Error != "bad" {
		t.Errorf("tool error: %+v %v", out, err)
	}
	out, err = toolOutcome(in, &pluginapi.ExecuteToolResponse{InputRequested: &pluginapi.ToolInputRequested{Question: "Which one?", Choices: []string{"a"}, Continuation: "k"}}, false)
	if err != nil || out.Error != nil || out.Output != nil || out.InputRequested == nil ||
		out.InputRequested.Question != "Which one?" || out.InputRequested.Continuation != "k" || len(out.InputRequested.Choices) != 1 {
		t.Errorf("input request: %+v %v", out, err)
	}
	if _, err = toolOutcome(in, &pluginapi.ExecuteToolResponse{TaskStarted: &pluginapi.ToolTaskStarted{TaskID: "job-1"}}, false); err == nil || !strings.Contains(err.Error(), "MISSING_TOOL_TASK_POLLER") {
		t.Errorf("task without poller: %v", err)
	}
	out, err = toolOutcome(in, &pluginapi.ExecuteToolResponse{TaskStarted: &pluginapi.ToolTaskStarted{TaskID: "job-1", PollIntervalSeconds: 5}}, true)
	if err != nil || out.TaskStarted == nil || out.TaskStarted.TaskID != "job-1" || out.TaskStarted.PollIntervalSeconds != 5 {
		t.Errorf("task with a poller: %+v %v", out, err)
	}
	out, err = pollOutcome(&pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{PollIntervalSeconds: 9, Continuation: "q1"}})
	if err != nil || out.TaskPending == nil || out.TaskPending.PollIntervalSeconds != 9 || out.TaskPending.Continuation != "q1" {
		t.Errorf("poll pending: %+v %v", out, err)
	}
	if _, err = pollOutcome(&pluginapi.ExecuteToolResponse{TaskStarted: &pluginapi.ToolTaskStarted{TaskID: "job-2"}}); err == nil {
		t.Errorf("a poll that starts a task was accepted")
	}
	if _, err = pollOutcome(&pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{}, Result: &pluginapi.ToolResult{}}); err == nil {
		t.Errorf("a poll with two outcomes was accepted")
	}
	if _, err = toolOutcome(in, &pluginapi.ExecuteToolResponse{}, false); err == nil {
		t.Errorf("empty outcome accepted")
	}
	if _, err = toolOutcome(in, &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{}, Error: &pluginapi.ToolExecutionError{}}, false); err == nil {
		t.Errorf("two outcomes accepted")
	}
}
