package stepwise

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// TestCancelToolTaskCallsTheToolsCancel: CancelToolTask reaches the cancel
// function of the tool that started the task, with its task ID; a tool
// without one is a no-op; the runner reports the capability.
func TestCancelToolTaskCallsTheToolsCancel(t *testing.T) {
	var got []TaskCancel
	start := func(ctx context.Context, tc ToolCallContext, a struct{}) (string, error) {
		return "", &pluginapi.ToolTaskStarted{TaskID: "job-1"}
	}
	poll := WithTaskPoll(func(ctx context.Context, p TaskPoll) (*pluginapi.ExecuteToolResponse, error) {
		return &pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{}}, nil
	})
	cancellable := MustFunctionTool("print", "Prints.", start, poll, WithTaskCancel(func(ctx context.Context, c TaskCancel) error {
		got = append(got, c)
		if c.TaskID == "job-bad" {
			return errors.New("carrier down")
		}
		return nil
	}))
	plain := MustFunctionTool("build", "Builds.", start, poll)
	r := NewRunner("t", "0", func(ctx context.Context, agent string, cfg json.RawMessage) (*AgentDefinition, error) {
		return &AgentDefinition{Name: agent, Model: NewScriptedModelClient(lookupThenAnswer), Tools: []*Tool{cancellable, plain}}, nil
	})
	if _, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "a", RunnerConfig: []byte("null")}); err != nil {
		t.Fatal(err)
	}
	if !pluginapi.CapabilitiesOf(r).ToolTaskCancelling {
		t.Error("the runner does not report tool_task_cancelling")
	}
	req := func(tool, task string) *pluginapi.CancelToolTaskRequest {
		return &pluginapi.CancelToolTaskRequest{Agent: "a", SessionID: "s", TaskID: task, ToolCall: pluginapi.ToolCall{ToolCallID: "c1", ToolName: tool, TaskID: task}}
	}
	if _, err := r.CancelToolTask(context.Background(), req("print", "job-1")); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (TaskCancel{SessionID: "s", ToolCallID: "c1", TaskID: "job-1"}) {
		t.Errorf("cancel got %+v", got)
	}
	if _, err := r.CancelToolTask(context.Background(), req("print", "job-bad")); err == nil || err.Error() != "carrier down" {
		t.Errorf("a failing cancel = %v; want its error", err)
	}
	if _, err := r.CancelToolTask(context.Background(), req("build", "job-2")); err != nil {
		t.Errorf("a tool without a cancel function = %v; want nil", err)
	}
	if _, err := r.CancelToolTask(context.Background(), &pluginapi.CancelToolTaskRequest{Agent: "nobody"}); err == nil {
		t.Error("an unknown agent: no error")
	}
}

// TestATaskWithoutAPollerIsNotRetried: a tool that starts a task but has no
// poll function (or a host that does not poll) fails permanently with
// MISSING_TOOL_TASK_POLLER: a retry would start the task again, so the
// call's effect decides, as the reference does.
func TestATaskWithoutAPollerIsNotRetried(t *testing.T) {
	start := func(ctx context.Context, tc ToolCallContext, a struct{}) (string, error) {
		return "", &pluginapi.ToolTaskStarted{TaskID: "job-1"}
	}
	noPoller := MustFunctionTool("print", "Prints.", start, WithEffect(pluginapi.EffectRead))
	polled := MustFunctionTool("build", "Builds.", start, WithTaskPoll(func(ctx context.Context, p TaskPoll) (*pluginapi.ExecuteToolResponse, error) {
		return &pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{}}, nil
	}))
	r := NewRunner("t", "0", func(ctx context.Context, agent string, cfg json.RawMessage) (*AgentDefinition, error) {
		return &AgentDefinition{Name: agent, Model: NewScriptedModelClient(lookupThenAnswer), Tools: []*Tool{noPoller, polled}}, nil
	})
	if _, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "a", RunnerConfig: []byte("null")}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool      string
		hostPolls bool
	}{{"print", true}, {"build", false}} {
		_, err := r.ExecuteDeferredToolCall(context.Background(), &pluginapi.ExecuteToolRequest{Agent: "a", SupportsToolTasks: tt.hostPolls,
			ToolCall: pluginapi.ToolCall{ToolCallID: "c1", ToolName: tt.tool, Arguments: "{}"}})
		var perm *pluginapi.PermanentError
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), "MISSING_TOOL_TASK_POLLER") {
			t.Errorf("%s (host polls %v): error = %v, want a permanent MISSING_TOOL_TASK_POLLER", tt.tool, tt.hostPolls, err)
		}
	}
}
