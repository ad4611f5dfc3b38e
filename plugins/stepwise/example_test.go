package stepwise_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

type cityArgs struct {
	City string `json:"city" description:"The city's name."`
}

// streamed collects a model call's text deltas.
type streamed struct{ deltas []string }

func (s *streamed) WriteTextDelta(text string)     { s.deltas = append(s.deltas, text) }
func (s *streamed) WriteReasoningDelta(string)     {}
func (s *streamed) WriteEvent(string, any) error   { return nil }
func (s *streamed) Heartbeat()                     {}
func (s *streamed) SaveHeartbeatCheckpoint(string) {}

// This example runs one turn of an agent with two tools and a scripted
// model, in process, doing what the worker's session does between the
// calls: it stores the messages the runner returns, runs each deferred tool
// call in its own step, records the results, and calls the model again.
func Example() {
	weather := stepwise.MustFunctionTool("get_weather", "The weather in a city.",
		func(ctx context.Context, tc stepwise.ToolCallContext, a cityArgs) (string, error) {
			return "sunny and 21 C", nil
		}, stepwise.WithEffect(pluginapi.EffectRead))
	clock := stepwise.MustFunctionTool("get_time", "The local time in a city.",
		func(ctx context.Context, tc stepwise.ToolCallContext, a cityArgs) (string, error) {
			return "14:05", nil
		}, stepwise.WithEffect(pluginapi.EffectRead))
	// The script stands in for a model: it asks for both tools, then
	// answers from their results.
	script := func(_ context.Context, req *stepwise.ModelRequest) (stepwise.ScriptedReply, error) {
		results := stepwise.ToolResults(req)
		if len(results) == 0 {
			return stepwise.ScriptedReply{ToolCalls: []stepwise.ScriptedToolCall{
				{Name: "get_weather", Arguments: cityArgs{City: "Paris"}},
				{Name: "get_time", Arguments: cityArgs{City: "Paris"}},
			}}, nil
		}
		return stepwise.ScriptedReply{Text: "In Paris it is " + results[1].Output + ", " + results[0].Output + "."}, nil
	}
	runner := stepwise.NewRunner("cities", "1.0.0", func(ctx context.Context, agent string, _ json.RawMessage) (*stepwise.AgentDefinition, error) {
		return &stepwise.AgentDefinition{
			Name:         agent,
			Instructions: "You answer questions about cities.",
			Model:        stepwise.NewScriptedModelClient(script),
			Tools:        []*stepwise.Tool{weather, clock},
		}, nil
	})

	ctx := context.Background()
	configured, err := runner.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "guide", RunnerConfig: []byte("{}")})
	if err != nil {
		panic(err)
	}
	fmt.Println("tools:", strings.Join(configured.Tools, ", "))

	// turn is what the session hands the runner: its stored messages, the
	// tool call records and the run state of the last model call.
	turn := pluginapi.TurnContext{Agent: "guide", SessionID: "s1", TurnID: "turn-1", Attempt: 1}
	store := func(msgs ...pluginapi.FrameworkMessage) {
		for _, m := range msgs {
			turn.Messages = append(turn.Messages, pluginapi.Message{
				Sequence: int64(len(turn.Messages) + 1), Role: m.Role, Text: m.Text, Item: m.Item,
				ToolCallID: m.ToolCallID, ToolName: m.ToolName, ToolStatus: m.ToolStatus, TurnID: turn.TurnID,
			})
		}
	}
	user, err := runner.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "guide", Text: "Weather and time in Paris?"})
	if err != nil {
		panic(err)
	}
	store(user.Message)

	// The first model call defers both tool calls to the session.
	step, err := runner.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: &streamed{}})
	if err != nil {
		panic(err)
	}
	requested := step.ToolCallsRequested
	store(requested.NewMessages...)
	turn.RunState = requested.RunState
	for _, call := range requested.ToolCalls {
		fmt.Printf("deferred %s %s (effect %s, approval %v)\n", call.ToolName, call.Arguments, call.Policy.Effect, call.Policy.ApprovalRequired())
		// The session runs each call in its own tool Step.
		out, err := runner.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{
			Agent: "guide", SessionID: "s1", TurnID: "turn-1", Attempt: 1,
			ToolCall: pluginapi.ToolCall{ToolCallID: call.ToolCallID, ToolName: call.ToolName, Arguments: call.Arguments, Status: pluginapi.ToolCallApproved},
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("  %s -> %s\n", call.ToolName, out.Result.Output)
		turn.ToolCalls = append(turn.ToolCalls, pluginapi.ToolCall{
			ToolCallID: call.ToolCallID, ToolName: call.ToolName, Arguments: call.Arguments,
			Status: pluginapi.ToolCallSucceeded, Output: out.Result.Output,
		})
	}

	// The second model call stores the results and completes the turn.
	live := &streamed{}
	step, err = runner.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: live})
	if err != nil {
		panic(err)
	}
	for _, m := range step.TurnCompleted.NewMessages {
		fmt.Printf("%s: %s\n", m.Role, m.Text)
	}
	fmt.Printf("(streamed as %q)\n", live.deltas)
	// Output:
	// tools: get_weather, get_time
	// deferred get_weather {"city":"Paris"} (effect read, approval false)
	//   get_weather -> sunny and 21 C
	// deferred get_time {"city":"Paris"} (effect read, approval false)
	//   get_time -> 14:05
	// tool: sunny and 21 C
	// tool: 14:05
	// assistant: In Paris it is 14:05, sunny and 21 C.
	// (streamed as ["In Paris it " "is 14:05, sunny " "and 21 C."])
}
