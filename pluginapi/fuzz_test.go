package pluginapi

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

// FuzzRunModelStepResponse decodes bytes a plugin could send as a model
// step's outcome: the decoder and the contract check never panic, and an
// outcome the check accepts has exactly one of its two kinds.
func FuzzRunModelStepResponse(f *testing.F) {
	seed, _ := proto.Marshal(toProtoRunModelStepResponse(&RunModelStepResponse{ToolCallsRequested: &ToolCallsRequested{
		RunState:  "{}",
		ToolCalls: []DeferredToolCall{{ToolCallID: "c1", ToolName: "t", Arguments: "{}", Policy: ToolPolicy{Effect: EffectRead}}},
	}}))
	f.Add(seed)
	done, _ := proto.Marshal(toProtoRunModelStepResponse(&RunModelStepResponse{TurnCompleted: &TurnCompleted{NewMessages: []FrameworkMessage{{Role: RoleAssistant, Text: "hi"}}}}))
	f.Add(done)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var pb runnerpb.RunModelStepResponse
		if proto.Unmarshal(b, &pb) != nil {
			return
		}
		r := fromProtoRunModelStepResponse(&pb)
		if checkRunModelStepResponse(r, &TurnContext{TurnID: "turn-1"}) != "" {
			return
		}
		if (r.TurnCompleted == nil) == (r.ToolCallsRequested == nil) {
			t.Fatalf("accepted outcome with %v turn_completed and %v tool_calls_requested", r.TurnCompleted != nil, r.ToolCallsRequested != nil)
		}
	})
}

// FuzzExecuteToolResponse does the same for a tool call's outcome.
func FuzzExecuteToolResponse(f *testing.F) {
	seed, _ := proto.Marshal(toProtoExecuteToolResponse(&ExecuteToolResponse{Result: &ToolResult{Output: "ok"}}))
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var pb runnerpb.ExecuteToolResponse
		if proto.Unmarshal(b, &pb) != nil {
			return
		}
		r := fromProtoExecuteToolResponse(&pb)
		if checkExecuteToolResponse("ExecuteDeferredToolCall", r, false, false) != "" {
			return
		}
		n := 0
		for _, set := range []bool{r.Result != nil, r.Error != nil, r.InputRequested != nil, r.TaskStarted != nil, r.TaskPending != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("accepted a tool outcome with %d kinds", n)
		}
	})
}
