package steps

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/internal/redact"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// fakeMCP lists fixed tools and answers every call with out, after the
// progress notifications.
type fakeMCP struct {
	tools    []mcpsource.Tool
	out      mcpsource.Outcome
	progress []mcpsource.Progress
	poll     mcpsource.TaskPoll
	got      []string // agent ref key arguments
}

func (f *fakeMCP) Tools(context.Context, string) ([]mcpsource.Tool, error) { return f.tools, nil }

func (f *fakeMCP) PollTask(_ context.Context, agent, ref, taskID string) mcpsource.TaskPoll {
	f.got = append(f.got, "poll "+agent+" "+ref+" "+taskID)
	return f.poll
}

func (f *fakeMCP) CancelTask(_ context.Context, agent, ref, taskID string) error {
	f.got = append(f.got, "cancel "+agent+" "+ref+" "+taskID)
	return nil
}

func (f *fakeMCP) Call(_ context.Context, agent, ref string, args json.RawMessage, key string, progress func(mcpsource.Progress), answer *mcpsource.Answer) mcpsource.Outcome {
	f.got = append(f.got, agent+" "+ref+" "+key+" "+string(args))
	if answer != nil {
		f.got = append(f.got, "answer "+answer.Answer+" to "+answer.Continuation)
	}
	for _, p := range f.progress {
		progress(p)
	}
	return f.out
}

// TestRunModelOffersTheAgentsMCPTools: the MCP tools follow the built-ins
// in the turn's host tools (one with a built-in's name is left out), and
// the calls that name them are the worker's, with their sources and
// effects; the runner's other calls stay the runner's.
func TestRunModelOffersTheAgentsMCPTools(t *testing.T) {
	f := &fakeMCP{tools: []mcpsource.Tool{
		{Name: "files__read", Ref: "mcp:files/read", Effect: pluginapi.EffectRead, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "files__write", Ref: "mcp:files/write"},
		{Name: "ask_user", Ref: "mcp:odd/ask_user"},
	}}
	a := &Activities{MCP: f}
	in := session.TurnInput{Agent: "a", HostTools: session.BuiltInToolDefinitions([]string{"ask_user"})}
	offered, err := a.offerMCPTools(context.Background(), &in)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range in.HostTools {
		names = append(names, d.Name+":"+string(d.Effect))
	}
	if diff := cmp.Diff([]string{"ask_user:read", "files__read:read", "files__write:"}, names); diff != "" {
		t.Errorf("host tools (-want +got):\n%s", diff)
	}
	req := &pluginapi.ToolCallsRequested{ToolCalls: []pluginapi.DeferredToolCall{
		{ToolCallID: "c1", ToolName: "files__read"}, {ToolCallID: "c2", ToolName: "own"},
		{ToolCallID: "c3", ToolName: "files__write"}, {ToolCallID: "c4", ToolName: "ask_user"},
	}}
	want := []session.HostCall{
		{ToolCallID: "c1", Source: "mcp:files/read", Effect: pluginapi.EffectRead},
		{ToolCallID: "c3", Source: "mcp:files/write"},
	}
	if diff := cmp.Diff(want, hostCalls(req, offered)); diff != "" {
		t.Errorf("host calls (-want +got):\n%s", diff)
	}
	if got := hostCalls(nil, offered); got != nil {
		t.Errorf("a final answer has host calls: %+v", got)
	}
}

// TestMCPOutcomesMapToTheSpecsTable: a result and a tool error reach the
// model; a call never sent is failed (the tool did not run); a lost call is
// a retryable Step failure, so the effect class decides (a retry with the
// same key, or outcome_unknown). Progress becomes mcp.tool_progress events
// with the spec's five keys; no secret reaches an error or an event.
func TestMCPOutcomesMapToTheSpecsTable(t *testing.T) {
	in := session.ToolInput{Agent: "a", SessionID: "s", TurnID: "turn-1", IdempotencyKey: "s/turn-1/c1", HostSource: "mcp:files/read",
		ToolCall: pluginapi.ToolCall{ToolCallID: "c1", ToolName: "files__read", Arguments: `{"path":"/x"}`}}
	tests := []struct {
		name      string
		out       mcpsource.Outcome
		wantOut   string
		wantErr   string // the ToolOutcome's error, for the model
		wantRetry string // the Step's retryable failure
	}{
		{"result", mcpsource.Outcome{Kind: mcpsource.Succeeded, Text: "contents"}, "contents", "", ""},
		{"tool error", mcpsource.Outcome{Kind: mcpsource.ToolFailed, Text: "no such file"}, "", "no such file", ""},
		{"never sent", mcpsource.Outcome{Kind: mcpsource.NotSent, Err: errors.New("3 connection attempts failed")}, "", "the MCP tool call was not sent: 3 connection attempts failed", ""},
		{"lost", mcpsource.Outcome{Kind: mcpsource.OutcomeUnknown, Err: errors.New("HTTP status 502 from " + secret)}, "", "", "HTTP status 502 from " + redact.Placeholder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var published []events.Event
			f := &fakeMCP{out: tt.out, progress: []mcpsource.Progress{{Progress: 1, Total: 2, Message: "half of " + secret}, {Progress: 3}}}
			a := &Activities{MCP: f, Redact: redact.New(secret).String, Events: sinkFunc(func(e events.Event) { published = append(published, e) })}
			w := &writer{a: a, session: "s", turn: "turn-1"}
			got, err := a.callMCP(context.Background(), in, in.ToolCall, w)
			if diff := cmp.Diff([]string{`a mcp:files/read s/turn-1/c1 {"path":"/x"}`}, f.got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantRetry != "":
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || app.NonRetryable() || app.Type() != MCPInterruptedErrorType || !strings.Contains(app.Error(), tt.wantRetry) {
					t.Errorf("error = %v, want a retryable %s: %s", err, MCPInterruptedErrorType, tt.wantRetry)
				}
			case err != nil:
				t.Fatalf("error = %v", err)
			case tt.wantOut != "":
				if got.Output == nil || *got.Output != tt.wantOut || got.Error != nil {
					t.Errorf("outcome = %+v, want output %q", got, tt.wantOut)
				}
			default:
				if got.Error == nil || *got.Error != tt.wantErr || got.Output != nil {
					t.Errorf("outcome = %+v, want error %q", got, tt.wantErr)
				}
			}
			var payloads []map[string]any
			for _, e := range published {
				if e.Type != session.EventMCPToolProgress {
					t.Errorf("event type %q", e.Type)
				}
				var m map[string]any
				if err := json.Unmarshal(e.Payload, &m); err != nil {
					t.Fatal(err)
				}
				payloads = append(payloads, m)
			}
			want := []map[string]any{
				{"tool_call_id": "c1", "tool_name": "files__read", "progress": 1.0, "total": 2.0, "message": "half of " + redact.Placeholder},
				{"tool_call_id": "c1", "tool_name": "files__read", "progress": 3.0, "total": nil, "message": nil},
			}
			if diff := cmp.Diff(want, payloads); diff != "" {
				t.Errorf("progress events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPElicitationIsAQuestionAndItsAnswerGoesBack: the server's question
// becomes the call's input request; the call's next run sends the latest
// answer with the continuation.
func TestMCPElicitationIsAQuestionAndItsAnswerGoesBack(t *testing.T) {
	f := &fakeMCP{out: mcpsource.Outcome{Kind: mcpsource.InputRequested, Input: &mcpsource.InputRequest{
		Question: "Which account?", Choices: []string{"checking", "savings"}, Continuation: `{"key":"q1"}`}}}
	a := &Activities{MCP: f}
	in := session.ToolInput{Agent: "a", IdempotencyKey: "s/turn-1/c1", HostSource: "mcp:bank/charge",
		ToolCall: pluginapi.ToolCall{ToolCallID: "c1", ToolName: "bank__charge", Arguments: `{}`}}
	got, err := a.callMCP(context.Background(), in, in.ToolCall, &writer{a: a})
	if err != nil {
		t.Fatal(err)
	}
	want := &session.InputRequest{Question: "Which account?", Choices: []string{"checking", "savings"}, Continuation: `{"key":"q1"}`}
	if diff := cmp.Diff(want, got.InputRequested); diff != "" {
		t.Errorf("input request (-want +got):\n%s", diff)
	}
	in.ToolCall.InputAnswers, in.ToolCall.InputContinuation = []string{"checking", "savings"}, `{"key":"q2"}`
	f.out = mcpsource.Outcome{Kind: mcpsource.Succeeded, Text: "charged savings"}
	if got, err = a.callMCP(context.Background(), in, in.ToolCall, &writer{a: a}); err != nil || got.Output == nil || *got.Output != "charged savings" {
		t.Fatalf("the answered call = %+v, %v", got, err)
	}
	if diff := cmp.Diff([]string{`a mcp:bank/charge s/turn-1/c1 {}`, `a mcp:bank/charge s/turn-1/c1 {}`, `answer savings to {"key":"q2"}`}, f.got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
