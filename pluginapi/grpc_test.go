package pluginapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func boolPtr(b bool) *bool { return &b }

// fullTurn sets every field of a TurnContext, so a round trip through the
// converters shows any field they drop.
func fullTurn() TurnContext {
	return TurnContext{
		Agent:     "support",
		SessionID: "acme-1",
		TurnID:    "turn-3",
		Attempt:   2,
		Messages: []Message{
			{Sequence: 1, Role: RoleUser, Text: "refund order 7", Item: `{"type":"message","content":"refund order 7"}`, TurnID: "turn-3"},
			{Sequence: 2, Role: RoleAssistant, Text: "", Item: `{"type":"function_call","id":"c1"}`, TurnID: "turn-3"},
			{Sequence: 3, Role: RoleTool, Text: "ok", Item: "{\"output\":\"ok\"}\n", ToolCallID: "c1", ToolName: "refund_order", TurnID: "turn-3"},
		},
		RunState: `{"step":2,"pending":["c1"]}`,
		ToolCalls: []ToolCall{{
			ToolCallID:          "c1",
			ToolName:            "refund_order",
			Arguments:           `{"order": 7}`,
			Effect:              EffectNonIdempotentWrite,
			RequiresApproval:    true,
			Status:              ToolCallSucceeded,
			DeferralOrder:       1,
			Output:              "ok",
			Error:               "e",
			RejectionMessage:    "r",
			ToolSourceReference: "mcp:tickets",
			CancellationReason:  "c",
		}},
		Policies: PolicySet{
			Policies: map[string]ToolPolicy{
				"refund_order": {Effect: EffectNonIdempotentWrite},
				"lookup":       {Effect: EffectRead, RequiresApproval: boolPtr(true)},
				"note":         {Effect: EffectIdempotentWrite, RequiresApproval: boolPtr(false)},
			},
			DefaultEffect: EffectUnclassified,
		},
		HostTools: []ToolDefinition{
			{Name: "ask_user", Description: "Ask the user.", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: EffectRead},
			{Name: "durable_wait", Description: "Wait."},
		},
		SessionSettings: json.RawMessage(`{"model":"fast","n":1}`),
		ContextSummary:  &ContextSummary{Generation: 2, FirstSequence: 1, LastSequence: 0, Text: "Earlier: a refund.", CreatedAt: "2026-12-01T00:00:00Z"},
	}
}

func TestInfo(t *testing.T) {
	tests := []struct {
		name   string
		runner Runner
		want   Capabilities
	}{
		// Every Go runner gets the SDK's transcript cache.
		{"core only", &mockRunner{}, Capabilities{TranscriptCache: true}},
		{"every optional interface", &mockFullRunner{}, Capabilities{
			UnfinishedTurnMessages: true,
			ToolTaskPolling:        true,
			ToolTaskCancelling:     true,
			InputTokenEstimation:   true,
			Compaction:             true,
			TranscriptCache:        true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := connect(t, tt.runner)
			info, caps, versions, err := c.Describe(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&InfoResponse{Name: "mock", Version: "0.0.1"}, info); diff != "" {
				t.Errorf("info (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, caps); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int{ProtocolVersion}, versions); diff != "" {
				t.Errorf("protocol versions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	var got *ConfigureRequest
	m := &mockRunner{ConfigureF: func(_ context.Context, req *ConfigureRequest) (*ConfigureResponse, error) {
		got = req
		switch req.Agent {
		case "bad":
			return nil, errors.New(`runner_config.model: "name" is required`)
		case "old":
			return nil, nil // a runner written before ConfigureResponse had fields
		case "empty-name":
			return &ConfigureResponse{Tools: []string{"lookup", ""}}, nil
		case "twice":
			return &ConfigureResponse{Tools: []string{"lookup", "refund", "lookup"}}, nil
		case "not-utf8":
			return &ConfigureResponse{Tools: []string{"\xff"}}, nil
		case "choice-twice":
			return &ConfigureResponse{SettingChoices: []SettingChoice{{Key: "model", Values: []string{"a"}}, {Key: "model", Values: []string{"b"}}}}, nil
		case "choice-empty":
			return &ConfigureResponse{SettingChoices: []SettingChoice{{Key: "model"}}}, nil
		}
		return &ConfigureResponse{Tools: []string{"lookup_order", "refund_order"},
			SettingChoices: []SettingChoice{{Key: "model", Values: []string{"deep", "fast"}, Default: "gpt-5-mini"}}}, nil
	}}
	c, _ := connect(t, m)
	ctx := testContext(t)

	want := &ConfigureRequest{Agent: "support", RunnerConfig: []byte(`{"model":{"name":"gpt"}}`), ProtocolVersion: 1}
	resp, err := c.Configure(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&ConfigureResponse{Tools: []string{"lookup_order", "refund_order"},
		SettingChoices: []SettingChoice{{Key: "model", Values: []string{"deep", "fast"}, Default: "gpt-5-mini"}}}, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	resp, err = c.Configure(ctx, &ConfigureRequest{Agent: "old"})
	if err != nil || resp == nil || resp.Tools != nil {
		t.Errorf("nil response: %+v, %v; want no tools (unknown) and no error", resp, err)
	}
	for agent, want := range map[string]string{
		"empty-name":   "runner returned a malformed outcome: Configure: Tools[1] is empty",
		"twice":        `runner returned a malformed outcome: Configure: Tools[2] "lookup" is listed twice`,
		"not-utf8":     "runner returned a malformed outcome: Configure: tools[0] is not valid UTF-8",
		"choice-twice": `runner returned a malformed outcome: Configure: SettingChoices[1] "model" is listed twice`,
		"choice-empty": `runner returned a malformed outcome: Configure: SettingChoices[0] "model" has no values`,
	} {
		if _, err := c.Configure(ctx, &ConfigureRequest{Agent: agent}); err == nil || err.Error() != want {
			t.Errorf("Configure(%s): error = %v, want %q", agent, err, want)
		}
	}

	_, err = c.Configure(ctx, &ConfigureRequest{Agent: "bad", RunnerConfig: []byte("null")})
	if err == nil || err.Error() != `runner_config.model: "name" is required` {
		t.Errorf("error = %v, want the runner's message unchanged", err)
	}
}

func TestBuildUserMessage(t *testing.T) {
	role := RoleUser
	m := &mockRunner{BuildUserMessageF: func(_ context.Context, req *BuildUserMessageRequest) (*BuildUserMessageResponse, error) {
		return &BuildUserMessageResponse{Message: FrameworkMessage{Role: role, Text: req.Text, Item: `{"text":"` + req.Agent + `"}`}}, nil
	}}
	c, _ := connect(t, m)
	ctx := testContext(t)

	got, err := c.BuildUserMessage(ctx, &BuildUserMessageRequest{Agent: "a", Text: "héllo"})
	if err != nil {
		t.Fatal(err)
	}
	want := &BuildUserMessageResponse{Message: FrameworkMessage{Role: RoleUser, Text: "héllo", Item: `{"text":"a"}`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}

	role = RoleAssistant
	_, err = c.BuildUserMessage(ctx, &BuildUserMessageRequest{Agent: "a", Text: "x"})
	wantMalformed(t, err, `Message.Role is "assistant", want "user"`)
}

func TestRunModelStepRoundTrip(t *testing.T) {
	metadata := &ModelCallMetadata{RequestModel: "m", ResponseModel: "m-1", ProviderName: "openai", ResponseID: "r1", FinishReasons: []string{"tool_calls"}}
	usage := Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 2, ReasoningTokens: 1, TotalTokens: 15, ModelCalls: 1}
	outcomes := map[string]*RunModelStepResponse{
		"turn completed": {TurnCompleted: &TurnCompleted{
			NewMessages: []FrameworkMessage{{Role: RoleAssistant, Text: "Done.", Item: `{"role":"assistant"}`}},
			Usage:       usage,
			Metadata:    metadata,
		}},
		"turn completed without metadata": {TurnCompleted: &TurnCompleted{}},
		"tool calls requested": {ToolCallsRequested: &ToolCallsRequested{
			RunState: `{"step":3}`,
			ToolCalls: []DeferredToolCall{
				{ToolCallID: "c2", ToolName: "lookup", Arguments: `{"q":"x"}`, Policy: ToolPolicy{Effect: EffectRead, RequiresApproval: boolPtr(true)}, ToolSourceReference: "ref"},
				{ToolCallID: "c3", ToolName: "note", Arguments: `{}`, Policy: ToolPolicy{Effect: EffectIdempotentWrite}},
			},
			NewMessages: []FrameworkMessage{{Role: RoleAssistant, Item: `{"calls":2}`}},
			Usage:       usage,
			Metadata:    metadata,
		}},
	}
	for name, outcome := range outcomes {
		t.Run(name, func(t *testing.T) {
			var got TurnContext
			m := &mockRunner{RunModelStepF: func(_ context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
				got = req.Turn
				return outcome, nil
			}}
			c, _ := connect(t, m)
			want := fullTurn()
			resp, err := c.RunModelStep(testContext(t), &RunModelStepRequest{Turn: want})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("turn the runner saw (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(outcome, resp); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunModelStepEventsInOrder(t *testing.T) {
	var writeErrs []string
	var late EventWriter
	m := &mockRunner{RunModelStepF: func(_ context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
		w := req.Events
		w.WriteTextDelta("Hel")
		w.WriteReasoningDelta("thinking")
		if err := w.WriteEvent("mock.handoff", map[string]any{"to": "billing"}); err != nil {
			writeErrs = append(writeErrs, err.Error())
		}
		w.Heartbeat()
		w.WriteTextDelta("lo")
		for _, bad := range []any{[]int{1}, "text", make(chan int)} {
			if err := w.WriteEvent("mock.bad", bad); err != nil {
				writeErrs = append(writeErrs, "rejected")
			}
		}
		if err := w.WriteEvent("", struct{}{}); err != nil {
			writeErrs = append(writeErrs, "rejected")
		}
		if err := w.WriteEvent("mock.struct", struct {
			N int `json:"n"`
		}{7}); err != nil {
			writeErrs = append(writeErrs, err.Error())
		}
		// A tool the runner runs itself, reported with the standard types.
		if err := WriteToolCallStarted(w, "inline-1", "calculator"); err != nil {
			writeErrs = append(writeErrs, err.Error())
		}
		if err := WriteToolCallFinished(w, "inline-1", "calculator", ToolCallSucceeded); err != nil {
			writeErrs = append(writeErrs, err.Error())
		}
		// The session's own types and unprefixed custom ones are refused.
		for _, typ := range []string{"turn_completed", "handoff"} {
			if err := w.WriteEvent(typ, map[string]any{}); err != nil {
				writeErrs = append(writeErrs, "rejected "+typ)
			}
		}
		late = w
		return &RunModelStepResponse{TurnCompleted: &TurnCompleted{}}, nil
	}}
	c, _ := connect(t, m)
	rec := &recorder{}
	if _, err := c.RunModelStep(testContext(t), &RunModelStepRequest{Turn: TurnContext{Agent: "a"}, Events: rec}); err != nil {
		t.Fatal(err)
	}
	// Writes after the call returned are dropped, not sent nor panicking.
	late.WriteTextDelta("late")
	if err := late.WriteEvent("mock.late", map[string]int{}); err != nil {
		t.Errorf("late WriteEvent: %v", err)
	}

	want := []string{
		"text Hel",
		"reasoning thinking",
		`event mock.handoff {"to":"billing"}`,
		"heartbeat",
		"text lo",
		`event mock.struct {"n":7}`,
		`event tool_call_started {"tool_call_id":"inline-1","tool_name":"calculator"}`,
		`event tool_call_finished {"tool_call_id":"inline-1","tool_name":"calculator","status":"succeeded"}`,
	}
	if diff := cmp.Diff(want, rec.got()); diff != "" {
		t.Errorf("host-side writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rejected", "rejected", "rejected", "rejected", "rejected turn_completed", "rejected handoff"}, writeErrs); diff != "" {
		t.Errorf("plugin-side WriteEvent errors (-want +got):\n%s", diff)
	}
}

func TestExecuteToolCallCheckpointsAndOutcomes(t *testing.T) {
	req := &ExecuteToolRequest{
		Agent:               "a",
		SessionID:           "s",
		TurnID:              "turn-1",
		ToolCall:            ToolCall{ToolCallID: "c1", ToolName: "t", Arguments: `{"a":1}`, Effect: EffectRead, Status: ToolCallApproved, DeferralOrder: 1},
		IdempotencyKey:      "s/turn-1/c1",
		Attempt:             3,
		HeartbeatCheckpoint: "job-41",
		InputAnswers:        []string{"yes", "blue"},
		SupportsToolTasks:   true,
	}
	outcomes := []struct {
		name     string
		respond  func() (*ExecuteToolResponse, error)
		want     *ExecuteToolResponse
		wantErr  string
		wantCode codes.Code
	}{
		{name: "result", respond: func() (*ExecuteToolResponse, error) {
			return &ExecuteToolResponse{Result: &ToolResult{Output: "42"}}, nil
		}, want: &ExecuteToolResponse{Result: &ToolResult{Output: "42"}}},
		{name: "error outcome", respond: func() (*ExecuteToolResponse, error) {
			return &ExecuteToolResponse{Error: &ToolExecutionError{Message: "not found"}}, nil
		}, want: &ExecuteToolResponse{Error: &ToolExecutionError{Message: "not found"}}},
		{name: "ToolExecutionError returned as the error", respond: func() (*ExecuteToolResponse, error) {
			return nil, fmt.Errorf("lookup: %w", &ToolExecutionError{Message: "disk full"})
		}, want: &ExecuteToolResponse{Error: &ToolExecutionError{Message: "disk full"}}},
		{name: "input requested", respond: func() (*ExecuteToolResponse, error) {
			return &ExecuteToolResponse{InputRequested: &ToolInputRequested{Question: "Color?", Choices: []string{"red", "blue"}, AllowsFreeText: true, Continuation: "k"}}, nil
		}, want: &ExecuteToolResponse{InputRequested: &ToolInputRequested{Question: "Color?", Choices: []string{"red", "blue"}, AllowsFreeText: true, Continuation: "k"}}},
		{name: "task started", respond: func() (*ExecuteToolResponse, error) {
			return &ExecuteToolResponse{TaskStarted: &ToolTaskStarted{TaskID: "job-42", PollIntervalSeconds: 5}}, nil
		}, want: &ExecuteToolResponse{TaskStarted: &ToolTaskStarted{TaskID: "job-42", PollIntervalSeconds: 5}}},
		{name: "plain error fails the step", respond: func() (*ExecuteToolResponse, error) {
			return nil, errors.New("connection refused")
		}, wantErr: "connection refused", wantCode: codes.Unknown},
	}
	for _, tt := range outcomes {
		t.Run(tt.name, func(t *testing.T) {
			var got *ExecuteToolRequest
			m := &mockRunner{ExecuteDeferredToolCallF: func(_ context.Context, r *ExecuteToolRequest) (*ExecuteToolResponse, error) {
				got = r
				r.Events.SaveHeartbeatCheckpoint("job-42")
				r.Events.WriteTextDelta("working")
				r.Events.Heartbeat()
				r.Events.SaveHeartbeatCheckpoint("job-42:half")
				return tt.respond()
			}}
			c, _ := connect(t, m)
			rec := &recorder{}
			call := *req
			call.Events = rec
			resp, err := c.ExecuteDeferredToolCall(testContext(t), &call)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || status.Code(err) != tt.wantCode {
					t.Fatalf("error = %v (code %v), want %q (code %v)", err, status.Code(err), tt.wantErr, tt.wantCode)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			got.Events = nil
			if diff := cmp.Diff(req, got); diff != "" {
				t.Errorf("request the runner saw (-want +got):\n%s", diff)
			}
			wantWrites := []string{"checkpoint job-42", "text working", "heartbeat", "checkpoint job-42:half"}
			if diff := cmp.Diff(wantWrites, rec.got()); diff != "" {
				t.Errorf("host-side writes (-want +got):\n%s", diff)
			}
		})
	}
}

// wantMalformed checks that err is a malformed-outcome error with reason.
func wantMalformed(t *testing.T, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want a malformed outcome (%s)", reason)
	}
	if !strings.HasPrefix(err.Error(), "runner returned a malformed outcome: ") || !strings.Contains(err.Error(), reason) {
		t.Errorf("error = %q, want a malformed outcome containing %q", err, reason)
	}
	if got := status.Code(err); got != codes.InvalidArgument {
		t.Errorf("status code = %v, want InvalidArgument", got)
	}
}

func TestMalformedOutcomesFromGoRunner(t *testing.T) {
	modelSteps := []struct {
		name   string
		resp   *RunModelStepResponse
		reason string
	}{
		{"nil response", nil, "RunModelStep returned no response"},
		{"no outcome", &RunModelStepResponse{}, "RunModelStep returned no outcome"},
		{"two outcomes", &RunModelStepResponse{TurnCompleted: &TurnCompleted{}, ToolCallsRequested: &ToolCallsRequested{RunState: "s"}}, "two outcomes"},
		{"empty run state", &RunModelStepResponse{ToolCallsRequested: &ToolCallsRequested{}}, "RunState is empty"},
		{"empty tool call id", &RunModelStepResponse{ToolCallsRequested: &ToolCallsRequested{RunState: "s", ToolCalls: []DeferredToolCall{{ToolName: "t", Policy: ToolPolicy{Effect: EffectRead}}}}}, "ToolCalls[0].ToolCallID is empty"},
		{"slash in tool call id", &RunModelStepResponse{ToolCallsRequested: &ToolCallsRequested{RunState: "s", ToolCalls: []DeferredToolCall{{ToolCallID: "a/b", ToolName: "t", Policy: ToolPolicy{Effect: EffectRead}}}}}, `"a/b" contains '/'`},
		{"tool call id used earlier in the turn", &RunModelStepResponse{ToolCallsRequested: &ToolCallsRequested{RunState: "s", ToolCalls: []DeferredToolCall{{ToolCallID: "old", ToolName: "t", Policy: ToolPolicy{Effect: EffectRead}}}}}, `"old" is not unique within the turn`},
		{"invalid effect", &RunModelStepResponse{ToolCallsRequested: &ToolCallsRequested{RunState: "s", ToolCalls: []DeferredToolCall{{ToolCallID: "c", ToolName: "t"}}}}, `Policy.Effect "" is not an effect class`},
		{"invalid role", &RunModelStepResponse{TurnCompleted: &TurnCompleted{NewMessages: []FrameworkMessage{{Role: "system"}}}}, `NewMessages[0].Role is "system"`},
		{"invalid UTF-8", &RunModelStepResponse{TurnCompleted: &TurnCompleted{NewMessages: []FrameworkMessage{{Role: RoleAssistant, Item: "\xff"}}}}, "turn_completed.new_messages[0].framework_item is not valid UTF-8"},
	}
	for _, tt := range modelSteps {
		t.Run("RunModelStep/"+tt.name, func(t *testing.T) {
			m := &mockRunner{RunModelStepF: func(context.Context, *RunModelStepRequest) (*RunModelStepResponse, error) { return tt.resp, nil }}
			c, _ := connect(t, m)
			turn := TurnContext{Agent: "a", ToolCalls: []ToolCall{{ToolCallID: "old"}}}
			_, err := c.RunModelStep(testContext(t), &RunModelStepRequest{Turn: turn})
			wantMalformed(t, err, tt.reason)
		})
	}

	toolCalls := []struct {
		name          string
		resp          *ExecuteToolResponse
		supportsTasks bool
		reason        string
	}{
		{"nil response", nil, true, "ExecuteDeferredToolCall returned no response"},
		{"no outcome", &ExecuteToolResponse{}, true, "ExecuteDeferredToolCall returned no outcome"},
		{"two outcomes", &ExecuteToolResponse{Result: &ToolResult{}, Error: &ToolExecutionError{}}, true, "2 outcomes (Result, Error)"},
		{"task pending", &ExecuteToolResponse{TaskPending: &ToolTaskPending{}}, true, "only PollToolTask may return"},
		{"task started without support", &ExecuteToolResponse{TaskStarted: &ToolTaskStarted{TaskID: "t"}}, false, "SupportsToolTasks is false"},
		{"task started without an id", &ExecuteToolResponse{TaskStarted: &ToolTaskStarted{}}, true, "TaskStarted.TaskID is empty"},
	}
	for _, tt := range toolCalls {
		t.Run("ExecuteDeferredToolCall/"+tt.name, func(t *testing.T) {
			m := &mockRunner{ExecuteDeferredToolCallF: func(context.Context, *ExecuteToolRequest) (*ExecuteToolResponse, error) { return tt.resp, nil }}
			c, _ := connect(t, m)
			_, err := c.ExecuteDeferredToolCall(testContext(t), &ExecuteToolRequest{Agent: "a", SupportsToolTasks: tt.supportsTasks})
			wantMalformed(t, err, tt.reason)
		})
	}
}

func TestOptionalCalls(t *testing.T) {
	turn := fullTurn()
	var seen []string
	see := func(format string, args ...any) { seen = append(seen, fmt.Sprintf(format, args...)) }
	m := &mockFullRunner{
		BuildUnfinishedTurnMessagesF: func(_ context.Context, got *TurnContext) ([]FrameworkMessage, error) {
			see("unfinished %s", cmp.Diff(&turn, got))
			return []FrameworkMessage{{Role: RoleAssistant, Item: "{}"}}, nil
		},
		PollToolTaskF: func(_ context.Context, req *PollToolTaskRequest) (*ExecuteToolResponse, error) {
			see("poll %s %s %+v %d", req.TaskID, req.Continuation, req.PendingAnswer, req.Attempt)
			req.Events.SaveHeartbeatCheckpoint("cp")
			return &ExecuteToolResponse{TaskPending: &ToolTaskPending{PollIntervalSeconds: 3, Continuation: "k2"}}, nil
		},
		CancelToolTaskF: func(_ context.Context, req *CancelToolTaskRequest) error {
			see("cancel %s %s %s %s", req.Agent, req.SessionID, req.ToolCall.ToolCallID, req.TaskID)
			return nil
		},
		EstimateInputTokensF: func(_ context.Context, got *TurnContext) (int64, error) {
			see("estimate %s", cmp.Diff(&turn, got))
			return 1234, nil
		},
		SelectCompactionCutoffF: func(_ context.Context, req *CompactionCutoffRequest) (*CompactionCutoffResponse, error) {
			see("cutoff %d", req.RetainedTokenBudget)
			return &CompactionCutoffResponse{ThroughSequence: 2}, nil
		},
		SummarizeContextF: func(_ context.Context, req *SummarizeContextRequest) (*SummarizeContextResponse, error) {
			see("summarize %d %s %d", len(req.Messages), req.PreviousSummary, req.InputTokenBudget)
			req.Events.WriteTextDelta("Sum")
			return &SummarizeContextResponse{Summary: "Summary.", Usage: Usage{InputTokens: 9, ModelCalls: 1}, Metadata: &ModelCallMetadata{RequestModel: "m-small", ResponseModel: "m-small-2026"}}, nil
		},
	}
	c, _ := connect(t, m)
	ctx := testContext(t)
	rec := &recorder{}

	unfinished, err := c.BuildUnfinishedTurnMessages(ctx, &BuildUnfinishedTurnMessagesRequest{Turn: turn})
	if err != nil || len(unfinished.Messages) != 1 || unfinished.Messages[0].Item != "{}" {
		t.Errorf("BuildUnfinishedTurnMessages = %+v, %v", unfinished, err)
	}
	poll, err := c.PollToolTask(ctx, &PollToolTaskRequest{
		Agent: "a", TaskID: "job", Continuation: "k1", Attempt: 2,
		PendingAnswer: &QuestionAnswer{Resolution: "answered", Answer: "yes"}, Events: rec,
	})
	if diff := cmp.Diff(&ExecuteToolResponse{TaskPending: &ToolTaskPending{PollIntervalSeconds: 3, Continuation: "k2"}}, poll); err != nil || diff != "" {
		t.Errorf("PollToolTask: %v (-want +got):\n%s", err, diff)
	}
	if _, err := c.PollToolTask(ctx, &PollToolTaskRequest{Agent: "a", TaskID: "job2"}); err != nil {
		t.Errorf("PollToolTask without an answer: %v", err)
	}
	if _, err := c.CancelToolTask(ctx, &CancelToolTaskRequest{Agent: "a", SessionID: "s", ToolCall: ToolCall{ToolCallID: "c1"}, TaskID: "job"}); err != nil {
		t.Errorf("CancelToolTask: %v", err)
	}
	if n, err := c.EstimateInputTokens(ctx, &EstimateInputTokensRequest{Turn: turn}); err != nil || n.InputTokens != 1234 {
		t.Errorf("EstimateInputTokens = %+v, %v", n, err)
	}
	if cut, err := c.SelectCompactionCutoff(ctx, &CompactionCutoffRequest{Turn: turn, RetainedTokenBudget: 3000}); err != nil || cut.ThroughSequence != 2 {
		t.Errorf("SelectCompactionCutoff = %+v, %v", cut, err)
	}
	sum, err := c.SummarizeContext(ctx, &SummarizeContextRequest{Turn: turn, Messages: turn.Messages, PreviousSummary: "Before.", InputTokenBudget: 8000, Events: rec})
	if diff := cmp.Diff(&SummarizeContextResponse{Summary: "Summary.", Usage: Usage{InputTokens: 9, TotalTokens: 9, ModelCalls: 1}, Metadata: &ModelCallMetadata{RequestModel: "m-small", ResponseModel: "m-small-2026"}}, sum); err != nil || diff != "" {
		t.Errorf("SummarizeContext: %v (-want +got):\n%s", err, diff)
	}

	wantSeen := []string{
		"unfinished ",
		"poll job k1 &{Resolution:answered Answer:yes} 2",
		"poll job2  <nil> 0",
		"cancel a s c1 job",
		"estimate ",
		"cutoff 3000",
		"summarize 3 Before. 8000",
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("what the runner saw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"checkpoint cp", "text Sum"}, rec.got()); diff != "" {
		t.Errorf("host-side writes (-want +got):\n%s", diff)
	}
}

func TestOptionalCallsUnimplemented(t *testing.T) {
	c, _ := connect(t, &mockRunner{})
	ctx := testContext(t)
	calls := map[string]func() error{
		"BuildUnfinishedTurnMessages": func() error {
			_, err := c.BuildUnfinishedTurnMessages(ctx, &BuildUnfinishedTurnMessagesRequest{})
			return err
		},
		"PollToolTask":           func() error { _, err := c.PollToolTask(ctx, &PollToolTaskRequest{}); return err },
		"CancelToolTask":         func() error { _, err := c.CancelToolTask(ctx, &CancelToolTaskRequest{}); return err },
		"EstimateInputTokens":    func() error { _, err := c.EstimateInputTokens(ctx, &EstimateInputTokensRequest{}); return err },
		"SelectCompactionCutoff": func() error { _, err := c.SelectCompactionCutoff(ctx, &CompactionCutoffRequest{}); return err },
		"SummarizeContext":       func() error { _, err := c.SummarizeContext(ctx, &SummarizeContextRequest{}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if status.Code(err) != codes.Unimplemented {
				t.Errorf("error = %v (code %v), want Unimplemented", err, status.Code(err))
			}
			if want := "runner does not implement " + name; err == nil || err.Error() != want {
				t.Errorf("error = %v, want %q", err, want)
			}
		})
	}
}

func TestRunnerPanicIsAnError(t *testing.T) {
	m := &mockRunner{BuildUserMessageF: func(context.Context, *BuildUserMessageRequest) (*BuildUserMessageResponse, error) {
		panic("boom")
	}}
	c, _ := connect(t, m)
	_, err := c.BuildUserMessage(testContext(t), &BuildUserMessageRequest{})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "runner panicked in BuildUserMessage: boom") {
		t.Errorf("error = %v (code %v), want an Internal panic error", err, status.Code(err))
	}
}

func TestCallerCancel(t *testing.T) {
	started := make(chan struct{})
	m := &mockRunner{RunModelStepF: func(ctx context.Context, _ *RunModelStepRequest) (*RunModelStepResponse, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	c, _ := connect(t, m)
	ctx, cancel := context.WithCancel(testContext(t))
	go func() {
		<-started
		cancel()
	}()
	_, err := c.RunModelStep(ctx, &RunModelStepRequest{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if status.Code(err) == codes.Unavailable {
		t.Errorf("error = %v is classified as a shutdown", err)
	}
}

func TestPluginGoesAway(t *testing.T) {
	t.Run("server stops", func(t *testing.T) {
		started := make(chan struct{})
		m := &mockRunner{RunModelStepF: func(ctx context.Context, _ *RunModelStepRequest) (*RunModelStepResponse, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		c, server := connect(t, m)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			<-started
			server.Stop()
		}()
		_, err := c.RunModelStep(testContext(t), &RunModelStepRequest{})
		<-stopped // before the cleanup stops the server again
		if status.Code(err) != codes.Unavailable || !strings.HasPrefix(err.Error(), "runner plugin went away: ") {
			t.Errorf("error = %v (code %v), want Unavailable", err, status.Code(err))
		}
	})
	t.Run("plugin ctx ends", func(t *testing.T) {
		started := make(chan struct{})
		m := &mockRunner{RunModelStepF: func(ctx context.Context, _ *RunModelStepRequest) (*RunModelStepResponse, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		conn, server := plugin.TestGRPCConn(t, func(s *grpc.Server) { runnerpb.RegisterRunnerServer(s, newGRPCServer(m)) })
		t.Cleanup(func() {
			_ = conn.Close()
			server.Stop()
		})
		pluginCtx, exited := context.WithCancel(testContext(t))
		c := newGRPCClient(pluginCtx, runnerpb.NewRunnerClient(conn))
		go func() {
			<-started
			exited() // what go-plugin does when the process exits
		}()
		_, err := c.RunModelStep(testContext(t), &RunModelStepRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("error = %v (code %v), want Unavailable", err, status.Code(err))
		}
	})
}

// rawServer is a runner that speaks the wire protocol directly, as a runner
// in another language would, to break it in ways a Go runner cannot.
type rawServer struct {
	runnerpb.UnimplementedRunnerServer
	frames []*runnerpb.RunModelStepFrame
	tools  []string
}

func (s *rawServer) Configure(context.Context, *runnerpb.ConfigureRequest) (*runnerpb.ConfigureResponse, error) {
	return &runnerpb.ConfigureResponse{Tools: s.tools}, nil
}

func (s *rawServer) RunModelStep(_ *runnerpb.RunModelStepRequest, stream runnerpb.Runner_RunModelStepServer) error {
	for _, f := range s.frames {
		if err := stream.Send(f); err != nil {
			return err
		}
	}
	return nil
}

func TestProtocolViolationsFromOtherRunners(t *testing.T) {
	text := func(s string) *runnerpb.RunModelStepFrame {
		return &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_TextDelta{TextDelta: &runnerpb.TextDelta{Text: s}}}
	}
	event := func(typ, payload string) *runnerpb.RunModelStepFrame {
		return &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_Event{Event: &runnerpb.Event{Type: typ, PayloadJson: payload}}}
	}
	done := &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_Outcome{Outcome: &runnerpb.RunModelStepResponse{
		Outcome: &runnerpb.RunModelStepResponse_TurnCompleted{TurnCompleted: &runnerpb.TurnCompleted{}},
	}}}
	empty := &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_Outcome{Outcome: &runnerpb.RunModelStepResponse{}}}
	unknown := &runnerpb.RunModelStepFrame{} // a frame kind from a newer protocol

	tests := []struct {
		name       string
		frames     []*runnerpb.RunModelStepFrame
		wantErr    string // "" for success
		wantWrites []string
	}{
		{"valid", []*runnerpb.RunModelStepFrame{text("a"), unknown, event("x.y", ""), done}, "", []string{"text a", "event x.y {}"}},
		{"no outcome", []*runnerpb.RunModelStepFrame{text("a")}, "RunModelStep ended its stream without an outcome", []string{"text a"}},
		{"empty stream", nil, "RunModelStep ended its stream without an outcome", nil},
		{"two outcomes", []*runnerpb.RunModelStepFrame{done, done}, "RunModelStep sent a second outcome", nil},
		{"frame after the outcome", []*runnerpb.RunModelStepFrame{done, text("late")}, "RunModelStep sent a live frame after its outcome", nil},
		{"outcome without an outcome", []*runnerpb.RunModelStepFrame{empty}, "RunModelStep returned no outcome", nil},
		{"event payload not an object", []*runnerpb.RunModelStepFrame{event("x.y", "[1]"), done}, `event "x.y" whose payload_json is not a JSON object`, nil},
		{"event payload not JSON", []*runnerpb.RunModelStepFrame{event("x.y", "{"), done}, `event "x.y" whose payload_json is not a JSON object`, nil},
		{"event without a type", []*runnerpb.RunModelStepFrame{event("", "{}"), done}, "RunModelStep sent an event without a type", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, server := plugin.TestGRPCConn(t, func(s *grpc.Server) {
				runnerpb.RegisterRunnerServer(s, &rawServer{frames: tt.frames})
			})
			t.Cleanup(func() {
				_ = conn.Close()
				server.Stop()
			})
			c := newGRPCClient(t.Context(), runnerpb.NewRunnerClient(conn))
			rec := &recorder{}
			_, err := c.RunModelStep(testContext(t), &RunModelStepRequest{Events: rec})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				wantMalformed(t, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantWrites, rec.got()); diff != "" {
				t.Errorf("host-side writes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigureToolsFromOtherRunners checks the tool list of a runner that
// never passed through the Go plugin side.
func TestConfigureToolsFromOtherRunners(t *testing.T) {
	tests := []struct {
		tools   []string
		want    []string
		wantErr string
	}{
		{tools: nil, want: nil},
		{tools: []string{"a", "b"}, want: []string{"a", "b"}},
		{tools: []string{"a", ""}, wantErr: "Configure: Tools[1] is empty"},
		{tools: []string{"a", "a"}, wantErr: `Configure: Tools[1] "a" is listed twice`},
	}
	for _, tt := range tests {
		conn, server := plugin.TestGRPCConn(t, func(s *grpc.Server) {
			runnerpb.RegisterRunnerServer(s, &rawServer{tools: tt.tools})
		})
		c := newGRPCClient(t.Context(), runnerpb.NewRunnerClient(conn))
		resp, err := c.Configure(testContext(t), &ConfigureRequest{Agent: "a"})
		_ = conn.Close()
		server.Stop()
		if tt.wantErr != "" {
			wantMalformed(t, err, tt.wantErr)
			continue
		}
		if err != nil {
			t.Fatalf("tools %q: %v", tt.tools, err)
		}
		if diff := cmp.Diff(tt.want, resp.Tools); diff != "" {
			t.Errorf("tools %q (-want +got):\n%s", tt.tools, diff)
		}
	}
}

func TestLiveStream(t *testing.T) {
	t.Run("writes never block and drop beyond the bound", func(t *testing.T) {
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		var sent []liveFrame
		s := startLiveStream(func(f liveFrame) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release // the host reads nothing until released
			sent = append(sent, f)
			return nil
		})
		s.WriteTextDelta("first")
		<-entered // the sender holds "first"; the queue is empty
		for range maxQueuedFrames + 100 {
			s.WriteTextDelta("x")
		}
		s.SaveHeartbeatCheckpoint("kept")
		close(release)
		if err := s.finish(); err != nil {
			t.Fatal(err)
		}
		if got, want := len(sent), 1+maxQueuedFrames+1; got != want {
			t.Errorf("%d frames sent, want %d", got, want)
		}
		if last := sent[len(sent)-1]; last.kind != liveCheckpoint || last.text != "kept" {
			t.Errorf("last frame = %+v, want the checkpoint", last)
		}
	})
	t.Run("writes after finish are dropped", func(t *testing.T) {
		var sent int
		s := startLiveStream(func(liveFrame) error { sent++; return nil })
		s.Heartbeat()
		if err := s.finish(); err != nil {
			t.Fatal(err)
		}
		s.Heartbeat()
		s.SaveHeartbeatCheckpoint("late")
		if sent != 1 {
			t.Errorf("%d frames sent, want 1", sent)
		}
		s.mu.Lock()
		queued := len(s.queue)
		s.mu.Unlock()
		if queued != 0 {
			t.Errorf("%d frames queued after finish, want 0", queued)
		}
	})
	t.Run("the first send error is returned and stops sending", func(t *testing.T) {
		var sent int
		s := startLiveStream(func(liveFrame) error { sent++; return errors.New("gone") })
		s.Heartbeat()
		s.Heartbeat()
		if err := s.finish(); err == nil || err.Error() != "gone" {
			t.Errorf("finish = %v, want gone", err)
		}
		if sent != 1 {
			t.Errorf("%d sends, want 1", sent)
		}
	})
}

// TestRetryAfterCrossesTheWire: a Go runner's RetryAfter error reaches the
// host with its delay (a RESOURCE_EXHAUSTED status with RetryInfo), and so
// does the RetryInfo of a runner in another language on any status; a
// permanent error stays permanent without a delay.
func TestRetryAfterCrossesTheWire(t *testing.T) {
	for _, tt := range []struct {
		name      string
		err       error
		wantDelay time.Duration
		permanent bool
	}{
		{"retry after", RetryAfter(errors.New("openai responses: HTTP 429: rate limited"), 7*time.Second), 7 * time.Second, false},
		{"cut to the most", RetryAfter(errors.New("quota"), 30*time.Hour), MaxRetryAfter, false},
		{"a plain error", errors.New("HTTP 500"), 0, false},
		{"permanent wins", Permanent(RetryAfter(errors.New("HTTP 400"), time.Second)), 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &mockRunner{RunModelStepF: func(context.Context, *RunModelStepRequest) (*RunModelStepResponse, error) { return nil, tt.err }}
			c, _ := connect(t, m)
			_, err := c.RunModelStep(testContext(t), &RunModelStepRequest{})
			var ra *RetryAfterError
			var perm *PermanentError
			gotDelay := time.Duration(0)
			if errors.As(err, &ra) {
				gotDelay = ra.Delay
			}
			if gotDelay != tt.wantDelay || errors.As(err, &perm) != tt.permanent || !strings.Contains(err.Error(), tt.err.Error()) {
				t.Errorf("error %v: delay %v permanent %v; want %v %v", err, gotDelay, errors.As(err, &perm), tt.wantDelay, tt.permanent)
			}
		})
	}
	t.Run("another language's RetryInfo", func(t *testing.T) {
		st, err := status.New(codes.Unknown, "rate limited").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		conn, server := plugin.TestGRPCConn(t, func(s *grpc.Server) {
			runnerpb.RegisterRunnerServer(s, &failingServer{err: st.Err()})
		})
		t.Cleanup(func() {
			_ = conn.Close()
			server.Stop()
		})
		c := newGRPCClient(t.Context(), runnerpb.NewRunnerClient(conn))
		_, err = c.RunModelStep(testContext(t), &RunModelStepRequest{})
		var ra *RetryAfterError
		if !errors.As(err, &ra) || ra.Delay != 1500*time.Millisecond {
			t.Errorf("error %v, want a RetryAfterError of 1.5s", err)
		}
	})
	if RetryAfter(nil, time.Second) != nil {
		t.Error("RetryAfter(nil) is not nil")
	}
	if e := errors.New("x"); RetryAfter(e, 0) != e {
		t.Error("RetryAfter with no delay changed the error")
	}
}

type failingServer struct {
	runnerpb.UnimplementedRunnerServer
	err error
}

func (s *failingServer) RunModelStep(*runnerpb.RunModelStepRequest, runnerpb.Runner_RunModelStepServer) error {
	return s.err
}
