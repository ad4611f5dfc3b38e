package stepwise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

type lookupArgs struct {
	OrderID string   `json:"order_id" description:"The order's ID."`
	Fields  []string `json:"fields,omitempty"`
	Mode    string   `json:"mode,omitempty" enum:"fast,full"`
	Limit   *int     `json:"limit"`
}

func TestFunctionToolSchema(t *testing.T) {
	tool := MustFunctionTool("lookup", "Look up.", func(ctx context.Context, tc ToolCallContext, a lookupArgs) (string, error) {
		return a.OrderID, nil
	}, WithEffect(pluginapi.EffectRead))
	want := `{"type":"object","properties":{"order_id":{"type":"string","description":"The order's ID."},"fields":{"type":"array","items":{"type":"string"}},"mode":{"type":"string","enum":["fast","full"]},"limit":{"type":"integer"}},"required":["order_id"],"additionalProperties":false}`
	if diff := cmp.Diff(want, string(tool.Definition().InputSchema)); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	if tool.Definition().Effect != pluginapi.EffectRead {
		t.Errorf("effect = %q", tool.Definition().Effect)
	}
}

func TestFunctionToolDefinitionErrors(t *testing.T) {
	fn := func(ctx context.Context, tc ToolCallContext, a int) (string, error) { return "", nil }
	if _, err := FunctionTool("x", "", fn); err == nil || !strings.Contains(err.Error(), "must be a struct") {
		t.Errorf("non-struct args: %v", err)
	}
	ok := func(ctx context.Context, tc ToolCallContext, a lookupArgs) (string, error) { return "", nil }
	if _, err := FunctionTool("bad name", "", ok); err == nil {
		t.Errorf("bad name accepted")
	}
	if _, err := FunctionTool("x", "", ok, WithEffect("write")); err == nil {
		t.Errorf("bad effect accepted")
	}
}

func TestFunctionToolArguments(t *testing.T) {
	tool := MustFunctionTool("lookup", "", func(ctx context.Context, tc ToolCallContext, a lookupArgs) (map[string]any, error) {
		if a.OrderID == "boom" {
			return nil, &pluginapi.ToolExecutionError{Message: "no such order"}
		}
		return map[string]any{"id": a.OrderID, "key": tc.IdempotencyKey}, nil
	})
	tests := []struct {
		name, args, want, wantErr string
	}{
		{"ok", `{"order_id":"7"}`, `{"id":"7","key":"k"}`, ""},
		{"null optional", `{"order_id":"7","limit":null,"mode":null}`, `{"id":"7","key":"k"}`, ""},
		{"not json", `{"order_id":`, "", "invalid arguments for lookup: arguments are not valid JSON"},
		{"not an object", `[1]`, "", "invalid arguments for lookup: arguments must be a JSON object"},
		{"missing required", `{}`, "", `invalid arguments for lookup: missing required argument "order_id"`},
		{"wrong type", `{"order_id":7}`, "", `invalid arguments for lookup: argument "order_id": want a string, got number`},
		{"unknown field", `{"order_id":"7","x":1}`, "", `invalid arguments for lookup: unknown argument "x"`},
		{"tool error", `{"order_id":"boom"}`, "", "no such order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tool.call(context.Background(), ToolCallContext{IdempotencyKey: "k"}, json.RawMessage(tt.args))
			if tt.wantErr != "" {
				var te *pluginapi.ToolExecutionError
				if !errors.As(err, &te) || te.Message != tt.wantErr {
					t.Fatalf("err = %v, want tool error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

type recorder struct {
	mu     sync.Mutex
	deltas []string
}

func (r *recorder) WriteTextDelta(s string) {
	r.mu.Lock()
	r.deltas = append(r.deltas, s)
	r.mu.Unlock()
}
func (r *recorder) WriteReasoningDelta(s string)   {}
func (r *recorder) WriteEvent(string, any) error   { return nil }
func (r *recorder) Heartbeat()                     {}
func (r *recorder) SaveHeartbeatCheckpoint(string) {}

// newTestRunner runs one agent whose script looks up order 7, then answers
// with what the lookup returned.
func newTestRunner(t *testing.T, maxCalls int, script func(ctx context.Context, req *ModelRequest) (ScriptedReply, error)) (*Runner, *ScriptedModelClient) {
	t.Helper()
	model := NewScriptedModelClient(script)
	lookup := MustFunctionTool("lookup", "Look up.", func(ctx context.Context, tc ToolCallContext, a lookupArgs) (string, error) {
		return "order " + a.OrderID + " costs $20", nil
	}, WithEffect(pluginapi.EffectRead))
	refund := MustFunctionTool("refund", "Refund.", func(ctx context.Context, tc ToolCallContext, a lookupArgs) (string, error) {
		return "refunded", nil
	}, WithEffect(pluginapi.EffectNonIdempotentWrite))
	r := NewRunner("test", "0", func(ctx context.Context, agent string, cfg json.RawMessage) (*AgentDefinition, error) {
		return &AgentDefinition{Name: agent, Instructions: "Agent {{.Agent}} in {{.TurnID}}.", Model: model, Tools: []*Tool{lookup, refund}, MaxModelCallsPerTurn: maxCalls}, nil
	})
	resp, err := r.Configure(context.Background(), &pluginapi.ConfigureRequest{Agent: "a", RunnerConfig: []byte("null")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"lookup", "refund"}, resp.Tools); diff != "" {
		t.Errorf("Configure reported tools (-want +got):\n%s", diff)
	}
	return r, model
}

func lookupThenAnswer(ctx context.Context, req *ModelRequest) (ScriptedReply, error) {
	if results := ToolResults(req); len(results) > 0 {
		return ScriptedReply{Text: "Found: " + results[len(results)-1].Output}, nil
	}
	return ScriptedReply{ToolCalls: []ScriptedToolCall{{Name: "lookup", Arguments: map[string]string{"order_id": "7"}}, {Name: "refund", Arguments: map[string]string{"order_id": "7"}}}}, nil
}

// store simulates the session: it stores what the runner returns.
type store struct {
	msgs []pluginapi.Message
}

func (s *store) add(ms []pluginapi.FrameworkMessage) {
	for _, m := range ms {
		s.msgs = append(s.msgs, pluginapi.Message{Sequence: int64(len(s.msgs) + 1), Role: m.Role, Text: m.Text, Item: m.Item, ToolCallID: m.ToolCallID, ToolName: m.ToolName, ToolStatus: m.ToolStatus})
	}
}

func TestRunnerTurn(t *testing.T) {
	ctx := context.Background()
	r, model := newTestRunner(t, 0, lookupThenAnswer)
	var s store
	u, _ := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: "a", Text: "look up 7"})
	s.add([]pluginapi.FrameworkMessage{u.Message})
	turn := pluginapi.TurnContext{Agent: "a", SessionID: "s", TurnID: "turn-1", Attempt: 1, Messages: s.msgs,
		Policies: pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified}}
	resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	req := resp.ToolCallsRequested
	if req == nil || len(req.ToolCalls) != 2 {
		t.Fatalf("want two tool calls, got %+v", resp)
	}
	if got := req.ToolCalls[0].Policy; got.Effect != pluginapi.EffectRead || got.ApprovalRequired() {
		t.Errorf("lookup policy = %+v", got)
	}
	if got := req.ToolCalls[1].Policy; got.Effect != pluginapi.EffectNonIdempotentWrite || !got.ApprovalRequired() {
		t.Errorf("refund policy = %+v", got)
	}
	if got := model.Requests()[0].Instructions; got != "Agent a in turn-1." {
		t.Errorf("instructions = %q", got)
	}
	s.add(req.NewMessages)

	// The session runs the tools and records them; then the model resumes.
	out, err := r.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "a", ToolCall: pluginapi.ToolCall{ToolCallID: req.ToolCalls[0].ToolCallID, ToolName: "lookup", Arguments: req.ToolCalls[0].Arguments}})
	if err != nil || out.Result == nil || out.Result.Output != "order 7 costs $20" {
		t.Fatalf("execute = %+v, %v", out, err)
	}
	turn.Messages = s.msgs
	turn.RunState = req.RunState
	turn.ToolCalls = []pluginapi.ToolCall{
		{ToolCallID: req.ToolCalls[0].ToolCallID, ToolName: "lookup", Status: pluginapi.ToolCallSucceeded, Output: out.Result.Output},
		{ToolCallID: req.ToolCalls[1].ToolCallID, ToolName: "refund", Status: pluginapi.ToolCallRejected, RejectionMessage: "no"},
	}
	ub, err := r.BuildUnfinishedTurnMessages(ctx, &pluginapi.BuildUnfinishedTurnMessagesRequest{Turn: turn})
	var unfinished []pluginapi.FrameworkMessage
	if ub != nil {
		unfinished = ub.Messages
	}
	if err != nil || len(unfinished) != 2 || unfinished[1].Text != "no" || unfinished[1].ToolStatus != pluginapi.ToolCallRejected || unfinished[0].ToolStatus != pluginapi.ToolCallSucceeded {
		t.Fatalf("unfinished = %+v, %v", unfinished, err)
	}
	rec := &recorder{}
	resp, err = r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: rec})
	if err != nil || resp.TurnCompleted == nil {
		t.Fatalf("resume = %+v, %v", resp, err)
	}
	var roles []string
	for _, m := range resp.TurnCompleted.NewMessages {
		roles = append(roles, string(m.Role)+":"+m.Text)
	}
	want := []string{"tool:order 7 costs $20", "tool:no", "assistant:Found: no"}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("new messages (-want +got):\n%s", diff)
	}
	if strings.Join(rec.deltas, "") != "Found: no" {
		t.Errorf("deltas = %q", rec.deltas)
	}
	// The second request paired each call with its result.
	items := model.Requests()[1].Items
	if len(items) != 4 || items[2].Kind != ItemToolResult || items[3].Text != "no" {
		t.Errorf("second request items = %+v", items)
	}
}

func TestRunnerModelCallLimit(t *testing.T) {
	ctx := context.Background()
	r, model := newTestRunner(t, 1, func(ctx context.Context, req *ModelRequest) (ScriptedReply, error) {
		return ScriptedReply{Text: "again", ToolCalls: []ScriptedToolCall{{Name: "lookup", Arguments: `{"order_id":"1"}`}}}, nil
	})
	turn := pluginapi.TurnContext{Agent: "a", TurnID: "turn-1", RunState: `{"model_calls":1,"pending":["c0"]}`,
		Messages:  []pluginapi.Message{{Sequence: 1, Role: "user", Text: "hi"}},
		ToolCalls: []pluginapi.ToolCall{{ToolCallID: "c0", ToolName: "lookup", Status: pluginapi.ToolCallSucceeded, Output: "x"}}}
	resp, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: &recorder{}})
	if err != nil || resp.TurnCompleted == nil {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
	if tools := model.Requests()[0].Tools; len(tools) != 0 {
		t.Errorf("tools offered after the limit: %d", len(tools))
	}
	msgs := resp.TurnCompleted.NewMessages
	last := msgs[len(msgs)-1]
	if want := fmt.Sprintf(pluginapi.ModelCallLimitToolResultFormat, 1); last.Text != want || last.Role != pluginapi.RoleTool {
		t.Errorf("last message = %+v", last)
	}
}

func TestOrphanedCallsGetOutcomeUnknown(t *testing.T) {
	out, _ := outputMessage(ModelOutputItem{ToolCalls: []ModelToolCall{{ID: "c1", Name: "lookup"}, {ID: "c2", Name: "lookup"}}})
	res, _ := resultMessage("c1", "lookup", "succeeded", "ok")
	msgs := []pluginapi.Message{
		{Sequence: 1, Role: "user", Text: "hi"},
		{Sequence: 2, Role: out.Role, Item: out.Item},
		{Sequence: 3, Role: res.Role, Text: res.Text, Item: res.Item, ToolCallID: res.ToolCallID, ToolName: res.ToolName, ToolStatus: res.ToolStatus},
		{Sequence: 4, Role: "user", Text: "[Dex] note"},
	}
	items, err := itemsFromMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range items {
		kinds = append(kinds, string(it.Kind)+":"+it.ToolCallID)
	}
	want := []string{"user_text:", "model_output:", "tool_result:c1", "tool_result:c2", "user_text:"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if items[3].Text != pluginapi.OutcomeUnknownToolResult {
		t.Errorf("orphan result = %q", items[3].Text)
	}
}

func TestRepairItemsDropsExtraResults(t *testing.T) {
	items := []ModelItem{
		{Kind: ItemUserText, Text: "hi"},
		{Kind: ItemToolResult, ToolCallID: "early"}, // before any call
		{Kind: ItemModelOutput, Output: &ModelOutputItem{ToolCalls: []ModelToolCall{{ID: "c1", Name: "lookup"}, {ID: "c2", Name: "lookup"}}}},
		{Kind: ItemToolResult, ToolCallID: "c2", Text: "two"},
		{Kind: ItemToolResult, ToolCallID: "c2", Text: "two again"},
		{Kind: ItemToolResult, ToolCallID: "c9", Text: "no such call"},
		{Kind: ItemModelOutput, Output: &ModelOutputItem{Text: "done"}},
		{Kind: ItemToolResult, ToolCallID: "c1", Text: "late: its turn moved on"},
	}
	var got []string
	for _, it := range RepairItems(items) {
		got = append(got, string(it.Kind)+":"+it.ToolCallID+":"+it.Text)
	}
	want := []string{"user_text::hi", "model_output::", "tool_result:c2:two", "tool_result:c1:" + pluginapi.OutcomeUnknownToolResult, "model_output::"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repaired (-want +got):\n%s", diff)
	}
}

func TestUnknownToolAndConfigErrors(t *testing.T) {
	ctx := context.Background()
	r, _ := newTestRunner(t, 0, lookupThenAnswer)
	out, err := r.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{Agent: "a", ToolCall: pluginapi.ToolCall{ToolName: "nope"}})
	if err != nil || out.Error == nil || out.Error.Message != "unknown tool nope" {
		t.Errorf("unknown tool = %+v, %v", out, err)
	}
	if _, err := r.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: pluginapi.TurnContext{Agent: "other"}}); err == nil {
		t.Errorf("unconfigured agent accepted")
	}
	bad := NewRunner("t", "0", func(ctx context.Context, agent string, cfg json.RawMessage) (*AgentDefinition, error) {
		return &AgentDefinition{Name: agent, Instructions: "{{.Nope", MaxModelCallsPerTurn: -1}, nil
	})
	_, err = bad.Configure(ctx, &pluginapi.ConfigureRequest{Agent: "a"})
	if err == nil || !strings.Contains(err.Error(), "model: a ModelClient is required") || !strings.Contains(err.Error(), "instructions:") {
		t.Errorf("config error = %v", err)
	}
}

// TestStoredMessagesDoNotRepeatTheirText: a user text and a tool result are
// stored without an item, a model output's item leaves its text to the
// message, and each decodes back to the item the model saw.
func TestStoredMessagesDoNotRepeatTheirText(t *testing.T) {
	text := strings.Repeat("<a&b>", 1000)
	r := NewRunner("t", "v", nil)
	user, err := r.BuildUserMessage(t.Context(), &pluginapi.BuildUserMessageRequest{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	out, err := outputMessage(ModelOutputItem{Provider: "p", API: "a", Text: text, ToolCalls: []ModelToolCall{{ID: "c1", Name: "lookup", Arguments: "{}"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, wantRes := resultMessage("c1", "lookup", "failed", text)
	stored := []pluginapi.FrameworkMessage{user.Message, out, res}
	for i, m := range stored {
		if strings.Contains(m.Item, "<a&b>") || len(m.Item) > 200 {
			t.Errorf("message %d stores its text again in a %d-byte item", i+1, len(m.Item))
		}
	}
	var msgs []pluginapi.Message
	for i, m := range stored {
		msgs = append(msgs, pluginapi.Message{Sequence: int64(i + 1), Role: m.Role, Text: m.Text, Item: m.Item,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, ToolStatus: m.ToolStatus})
	}
	items, err := itemsFromMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := []ModelItem{
		{Kind: ItemUserText, Text: text},
		{Kind: ItemModelOutput, Output: &ModelOutputItem{Provider: "p", API: "a", Text: text, ToolCalls: []ModelToolCall{{ID: "c1", Name: "lookup", Arguments: "{}"}}}},
		wantRes,
	}
	if diff := cmp.Diff(want, items); diff != "" {
		t.Errorf("decoded items (-want +got):\n%s", diff)
	}
	// An item of an older version, which repeats the text, decodes the same.
	old := `{"type":"model_output","output":{"provider":"p","api":"a","text":"old"}}`
	it, err := itemOf(pluginapi.Message{Sequence: 9, Role: pluginapi.RoleAssistant, Text: "old", Item: old})
	if err != nil || it.Output.Text != "old" {
		t.Errorf("older item = %+v, %v", it, err)
	}
}
