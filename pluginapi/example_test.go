package pluginapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// echoRunner is a complete runner: it answers every user message with the
// message's own text, streamed word by word. It keeps no state between
// calls.
type echoRunner struct{}

func (echoRunner) Info(context.Context, *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	return &pluginapi.InfoResponse{Name: "echo", Version: "1.0.0"}, nil
}

func (echoRunner) Configure(context.Context, *pluginapi.ConfigureRequest) (*pluginapi.ConfigureResponse, error) {
	return &pluginapi.ConfigureResponse{}, nil
}

func (echoRunner) BuildUserMessage(_ context.Context, req *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	item, err := json.Marshal(map[string]string{"role": "user", "content": req.Text})
	if err != nil {
		return nil, err
	}
	return &pluginapi.BuildUserMessageResponse{Message: pluginapi.FrameworkMessage{
		Role: pluginapi.RoleUser,
		Text: req.Text,
		Item: string(item),
	}}, nil
}

func (echoRunner) RunModelStep(_ context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	last := req.Turn.Messages[len(req.Turn.Messages)-1]
	for i, word := range strings.Fields(last.Text) {
		if i > 0 {
			word = " " + word
		}
		req.Events.WriteTextDelta(word)
	}
	return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: last.Text}},
		Usage:       pluginapi.Usage{ModelCalls: 1},
	}}, nil
}

func (echoRunner) ExecuteDeferredToolCall(context.Context, *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	return nil, &pluginapi.ToolExecutionError{Message: "echo has no tools"}
}

// This example serves a runner in process through the same gRPC shims the
// worker uses with a plugin process, then drives one turn as the worker
// does: the user message, then a model step whose text deltas stream to the
// step's EventWriter before the outcome arrives.
func Example() {
	runner, stop := serveInProcess(echoRunner{})
	defer stop()
	ctx := context.Background()

	user, err := runner.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "demo", Text: "hello plugin world"})
	if err != nil {
		panic(err)
	}
	stored := user.Message
	fmt.Printf("stored %s item %s\n", stored.Role, stored.Item)

	resp, err := runner.RunModelStep(ctx, &pluginapi.RunModelStepRequest{
		Turn: pluginapi.TurnContext{
			Agent:    "demo",
			TurnID:   "turn-1",
			Attempt:  1,
			Messages: []pluginapi.Message{{Sequence: 1, Role: stored.Role, Text: stored.Text, Item: stored.Item, TurnID: "turn-1"}},
		},
		Events: printEvents{},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("answer:", resp.TurnCompleted.NewMessages[0].Text)
	// Output:
	// stored user item {"content":"hello plugin world","role":"user"}
	// text delta "hello"
	// text delta " plugin"
	// text delta " world"
	// answer: hello plugin world
}

// A runner plugin's main is one line. Run by hand, the binary prints a note
// and exits; the worker starts it with the handshake and serves it to every
// agent whose runner names it.
func ExampleServe() {
	pluginapi.Serve(pluginapi.ServeOptions{Runner: echoRunner{}})
}

// toolRunner defers a "weather" tool call on a turn's first model call and
// answers with the tool's output when the session resumes the turn.
type toolRunner struct{ echoRunner }

func (toolRunner) RunModelStep(_ context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	turn := req.Turn
	if !turn.IsResuming() {
		return &pluginapi.RunModelStepResponse{ToolCallsRequested: &pluginapi.ToolCallsRequested{
			RunState: `{"waiting_for":"call-1"}`,
			ToolCalls: []pluginapi.DeferredToolCall{{
				ToolCallID: "call-1",
				ToolName:   "weather",
				Arguments:  `{"city":"Oslo"}`,
				Policy:     turn.ResolvePolicy("weather", pluginapi.EffectRead),
			}},
		}}, nil
	}
	call, _ := turn.ToolCall("call-1")
	answer := "The weather: " + pluginapi.DescribeToolCallOutcome(call)
	return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: answer}},
	}}, nil
}

func (toolRunner) ExecuteDeferredToolCall(_ context.Context, req *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	var args struct{ City string }
	if err := json.Unmarshal([]byte(req.ToolCall.Arguments), &args); err != nil || args.City == "" {
		// The model sees this message; the call is recorded failed.
		return nil, &pluginapi.ToolExecutionError{Message: "city is required"}
	}
	// Remote work can record progress that a retried attempt reads back.
	req.Events.SaveHeartbeatCheckpoint("lookup:" + args.City)
	return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: "8°C and rain in " + args.City}}, nil
}

// This example shows deferred tool calls: the runner asks for a call, the
// session runs it through ExecuteDeferredToolCall and resumes the turn with
// the call's final record. A *ToolExecutionError is a failure the model
// sees, not a failed Step.
func Example_toolCalls() {
	runner, stop := serveInProcess(toolRunner{})
	defer stop()
	ctx := context.Background()
	turn := pluginapi.TurnContext{
		Agent:    "demo",
		TurnID:   "turn-1",
		Messages: []pluginapi.Message{{Sequence: 1, Role: pluginapi.RoleUser, Text: "Weather in Oslo?"}},
		Policies: pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified},
	}

	step, err := runner.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: printEvents{}})
	if err != nil {
		panic(err)
	}
	deferred := step.ToolCallsRequested.ToolCalls[0]
	fmt.Printf("deferred %s %s (effect %s, approval %v)\n",
		deferred.ToolName, deferred.Arguments, deferred.Policy.Effect, deferred.Policy.ApprovalRequired())

	record := pluginapi.ToolCall{
		ToolCallID: deferred.ToolCallID,
		ToolName:   deferred.ToolName,
		Arguments:  deferred.Arguments,
		Effect:     deferred.Policy.Effect,
		Status:     pluginapi.ToolCallApproved,
	}
	result, err := runner.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "demo", ToolCall: record, Events: printEvents{}})
	if err != nil {
		panic(err)
	}
	fmt.Println("tool result:", result.Result.Output)

	bad := record
	bad.Arguments = `{}`
	failed, err := runner.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "demo", ToolCall: bad, Events: printEvents{}})
	if err != nil {
		panic(err)
	}
	fmt.Println("tool error the model sees:", failed.Error.Message)

	record.Status, record.Output = pluginapi.ToolCallSucceeded, result.Result.Output
	turn.RunState = step.ToolCallsRequested.RunState
	turn.ToolCalls = []pluginapi.ToolCall{record}
	final, err := runner.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: printEvents{}})
	if err != nil {
		panic(err)
	}
	fmt.Println("answer:", final.TurnCompleted.NewMessages[0].Text)
	// Output:
	// deferred weather {"city":"Oslo"} (effect read, approval false)
	// heartbeat checkpoint "lookup:Oslo"
	// tool result: 8°C and rain in Oslo
	// tool error the model sees: city is required
	// answer: The weather: 8°C and rain in Oslo
}
