package runnertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/pluginapi/runnertest"
)

// shop is a runner with a scripted model: the first model call of a turn
// defers the calls the user's text names ("lookup", "refund", "cancel"),
// the next one answers with their outcomes.
type shop struct{ refunds int }

func (s *shop) Info(context.Context, *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	return &pluginapi.InfoResponse{Name: "shop", Version: "1"}, nil
}

func (s *shop) Configure(_ context.Context, req *pluginapi.ConfigureRequest) (*pluginapi.ConfigureResponse, error) {
	if !json.Valid(req.RunnerConfig) {
		return nil, fmt.Errorf("runner_config is not JSON")
	}
	return &pluginapi.ConfigureResponse{Tools: []string{"lookup", "refund", "cancel"}}, nil
}

func (s *shop) BuildUserMessage(_ context.Context, req *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	return &pluginapi.BuildUserMessageResponse{Message: pluginapi.FrameworkMessage{Role: pluginapi.RoleUser, Text: req.Text, Item: "{}"}}, nil
}

var effects = map[string]pluginapi.Effect{"lookup": pluginapi.EffectRead, "refund": pluginapi.EffectNonIdempotentWrite, "cancel": pluginapi.EffectIdempotentWrite, "ask_user": ""}

func (s *shop) RunModelStep(_ context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	t := req.Turn
	usage := pluginapi.Usage{InputTokens: 10, OutputTokens: 2, ModelCalls: 1}
	if t.RunState == "" {
		var user string
		for _, m := range t.Messages {
			if m.Role == pluginapi.RoleUser {
				user = m.Text
			}
		}
		var calls []pluginapi.DeferredToolCall
		for _, w := range strings.Fields(user) {
			if e, ok := effects[w]; ok {
				calls = append(calls, pluginapi.DeferredToolCall{
					ToolCallID: fmt.Sprintf("%s-%d", t.TurnID, len(calls)), ToolName: w, Arguments: `{"order_id":"7"}`,
					Policy: t.ResolvePolicy(w, e),
				})
			}
		}
		if len(calls) > 0 {
			req.Events.WriteTextDelta("working")
			return &pluginapi.RunModelStepResponse{ToolCallsRequested: &pluginapi.ToolCallsRequested{
				RunState: "pending", ToolCalls: calls, Usage: usage,
				NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Item: "{}"}},
			}}, nil
		}
	}
	var parts []string
	for _, c := range t.ToolCalls {
		parts = append(parts, c.ToolName+": "+pluginapi.DescribeToolCallOutcome(c))
	}
	text := "nothing to do"
	if len(parts) > 0 {
		text = strings.Join(parts, "; ")
	}
	return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: text, Item: "{}"}}, Usage: usage,
	}}, nil
}

func (s *shop) ExecuteDeferredToolCall(_ context.Context, req *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	switch req.ToolCall.ToolName {
	case "lookup":
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: "delivered"}}, nil
	case "refund":
		s.refunds++
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: "refunded"}}, nil
	case "cancel":
		if len(req.InputAnswers) == 0 {
			return &pluginapi.ExecuteToolResponse{InputRequested: &pluginapi.ToolInputRequested{Question: "Both parcels?", Choices: []string{"both", "one"}, Continuation: "asked"}}, nil
		}
		if req.ToolCall.InputContinuation != "asked" {
			return nil, fmt.Errorf("continuation %q", req.ToolCall.InputContinuation)
		}
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: "cancelled " + req.InputAnswers[0]}}, nil
	}
	return &pluginapi.ExecuteToolResponse{Error: &pluginapi.ToolExecutionError{Message: "unknown tool " + req.ToolCall.ToolName}}, nil
}

func TestATurnWithAnApprovalAndAQuestion(t *testing.T) {
	r := &shop{}
	s := runnertest.New(t, r, runnertest.Options{Agent: "shop", RunnerConfig: `{}`})
	var asked []string
	s.Approve = func(c pluginapi.DeferredToolCall) (bool, string) {
		asked = append(asked, c.ToolName)
		return true, ""
	}
	s.Answer = func(_ pluginapi.DeferredToolCall, q *pluginapi.ToolInputRequested) (string, bool) {
		return q.Choices[0], true
	}
	turn := s.Send("lookup refund cancel")
	if got, want := turn.Text(), "lookup: delivered; refund: refunded; cancel: cancelled both"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	if len(asked) != 1 || asked[0] != "refund" || r.refunds != 1 {
		t.Errorf("approvals asked for %v, refunds %d: want only the write, once", asked, r.refunds)
	}
	if c, ok := turn.Call("refund"); !ok || c.Status != pluginapi.ToolCallSucceeded || !c.RequiresApproval || c.Effect != pluginapi.EffectNonIdempotentWrite {
		t.Errorf("refund record %+v", c)
	}
	if turn.ModelCalls != 2 || turn.Usage.InputTokens != 20 || s.Events().Text() != "working" {
		t.Errorf("model calls %d, usage %+v, text deltas %q", turn.ModelCalls, turn.Usage, s.Events().Text())
	}
	if n := len(s.Messages()); n != 3 {
		t.Errorf("%d messages stored, want user, assistant, assistant", n)
	}
}

func TestARejectionAndTheOperatorsPolicy(t *testing.T) {
	r := &shop{}
	// The operator makes lookup need approval too; the test rejects both.
	s := runnertest.New(t, r, runnertest.Options{Policies: pluginapi.PolicySet{
		Policies:      map[string]pluginapi.ToolPolicy{"lookup": {Effect: pluginapi.EffectRead, RequiresApproval: ptr(true)}},
		DefaultEffect: pluginapi.EffectUnclassified,
	}})
	s.Approve = func(c pluginapi.DeferredToolCall) (bool, string) { return false, "not " + c.ToolName }
	turn := s.Send("lookup refund")
	if got, want := turn.Text(), "lookup: not lookup; refund: not refund"; got != want || r.refunds != 0 {
		t.Errorf("answer %q (want %q), refunds %d", got, want, r.refunds)
	}
	// A declined question is a rejection the model sees.
	turn = s.Send("cancel")
	if c, _ := turn.Call("cancel"); c.Status != pluginapi.ToolCallRejected {
		t.Errorf("a declined question left the call %+v", c)
	}
}

func TestHostToolsAndErrors(t *testing.T) {
	s := runnertest.New(t, &shop{}, runnertest.Options{HostTools: []pluginapi.ToolDefinition{{Name: "ask_user", Effect: pluginapi.EffectRead}}})
	if _, err := s.TrySend("ask_user"); err == nil || !strings.Contains(err.Error(), "no HostTool") {
		t.Errorf("a host tool without HostTool: %v", err)
	}
	s.HostTool = func(c pluginapi.DeferredToolCall) (string, error) { return "the user said yes", nil }
	if got := s.Send("ask_user").Text(); got != "ask_user: the user said yes" {
		t.Errorf("answer %q", got)
	}
	if got := s.Send("hello").Text(); got != "nothing to do" {
		t.Errorf("answer %q", got)
	}
}

func ptr[T any](v T) *T { return &v }
