// Command minimalrunner is the smallest useful runner: it answers each
// turn with the user's last message. It exists to keep the runner SDK
// small: pluginapi's tests build it and check its size and what it links
// (no engine, no worker, no OpenTelemetry SDK or exporter).
package main

import (
	"context"
	"encoding/json"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

type echo struct{}

func (echo) Info(context.Context, *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	return &pluginapi.InfoResponse{Name: "minimal", Version: "1.0.0"}, nil
}

func (echo) Configure(context.Context, *pluginapi.ConfigureRequest) (*pluginapi.ConfigureResponse, error) {
	return &pluginapi.ConfigureResponse{}, nil
}

func (echo) BuildUserMessage(_ context.Context, req *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	item, err := json.Marshal(map[string]string{"role": "user", "content": req.Text})
	if err != nil {
		return nil, err
	}
	return &pluginapi.BuildUserMessageResponse{Message: pluginapi.FrameworkMessage{Role: pluginapi.RoleUser, Text: req.Text, Item: string(item)}}, nil
}

func (echo) RunModelStep(_ context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	text := ""
	for _, m := range req.Turn.Messages {
		if m.Role == pluginapi.RoleUser {
			text = m.Text
		}
	}
	item, err := json.Marshal(map[string]string{"role": "assistant", "content": text})
	if err != nil {
		return nil, err
	}
	return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: text, Item: string(item)}},
	}}, nil
}

func (echo) ExecuteDeferredToolCall(context.Context, *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	return nil, &pluginapi.ToolExecutionError{Message: "this runner has no tools"}
}

func main() { pluginapi.Serve(pluginapi.ServeOptions{Runner: echo{}}) }
