package steps

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

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
	sent     bool
	got      []string // agent ref key arguments
}

func (f *fakeMCP) Tools(context.Context, string) ([]mcpsource.Tool, error) { return f.tools, nil }

func (f *fakeMCP) PollTask(_ context.Context, agent, ref, taskID string) mcpsource.TaskPoll {
	f.got = append(f.got, "poll "+agent+" "+ref+" "+taskID)
	return f.poll
}

func (f *fakeMCP) AnswerTask(_ context.Context, agent, ref, taskID, question, resolution, answer string) (bool, mcpsource.TaskPoll) {
	f.got = append(f.got, "answer "+resolution+" "+answer+" to "+question)
	return f.sent, f.poll
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

// TestRunModelOffersTheAgentsMCPTools: the MCP tools come before the
// built-ins in the turn's host tools (the reference offers a source's tools
// after the function tools and before the built-ins), and the calls that
// name them are the worker's, with their sources and effects; the runner's
// other calls stay the runner's. A planning turn lists nothing.
func TestRunModelOffersTheAgentsMCPTools(t *testing.T) {
	f := &fakeMCP{tools: []mcpsource.Tool{
		{Name: "files__read", Ref: "mcp:files/read", Effect: pluginapi.EffectRead, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "files__write", Ref: "mcp:files/write"},
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
	if diff := cmp.Diff([]string{"files__read:read", "files__write:", "ask_user:read"}, names); diff != "" {
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

	planning := session.TurnInput{Agent: "a", Mode: wire.InteractionPlanning, HostTools: session.BuiltInToolDefinitions([]string{"write_todos"})}
	if offered, err := a.offerMCPTools(context.Background(), &planning); err != nil || offered != nil || len(planning.HostTools) != 1 {
		t.Errorf("a planning turn offered %v, host tools %+v (err %v)", offered, planning.HostTools, err)
	}
}

// TestToolNameClashesFailBeforeAnyModelRequest: the reference's texts, as a
// permanent failure of the Step.
func TestToolNameClashesFailBeforeAnyModelRequest(t *testing.T) {
	builtIns := session.BuiltInToolDefinitions([]string{"ask_user"})
	mcp := func(names ...string) map[string]mcpsource.Tool {
		m := map[string]mcpsource.Tool{}
		for _, n := range names {
			m[n] = mcpsource.Tool{Name: n, Ref: "mcp:s/" + n}
		}
		return m
	}
	tests := []struct {
		name string
		host []pluginapi.ToolDefinition
		own  []string
		mcp  map[string]mcpsource.Tool
		want string
	}{
		{"no clash", builtIns, []string{"lookup"}, mcp("files__read"), ""},
		{"a runner tool named as a built-in", builtIns, []string{"lookup", "ask_user"}, nil, "tool ask_user uses the name of an enabled built-in tool"},
		{"an MCP tool named as a built-in", builtIns, nil, mcp("ask_user"), "tool ask_user uses the name of an enabled built-in tool"},
		{"an MCP tool named as a runner tool", builtIns, []string{"lookup"}, mcp("lookup"), "tool lookup of a tool source uses the name of a function tool"},
		{"a disabled built-in's name is an ordinary name", nil, []string{"ask_user"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkToolNames(tt.host, tt.own, tt.mcp)
			if tt.want == "" {
				if err != nil {
					t.Errorf("error = %v, want none", err)
				}
				return
			}
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != wire.ToolNameConflictErrorType || app.Message() != tt.want {
				t.Errorf("error = %v, want a non-retryable %s: %q", err, wire.ToolNameConflictErrorType, tt.want)
			}
		})
	}
}

// TestUnknownCalls: a name no source offered, when the runner listed its
// tools; nothing when it did not.
func TestUnknownCalls(t *testing.T) {
	req := &pluginapi.ToolCallsRequested{ToolCalls: []pluginapi.DeferredToolCall{
		{ToolCallID: "c1", ToolName: "lookup"}, {ToolCallID: "c2", ToolName: "ghost"},
		{ToolCallID: "c3", ToolName: "files__read"}, {ToolCallID: "c4", ToolName: "ask_user"},
	}}
	host := append([]pluginapi.ToolDefinition{{Name: "files__read"}}, session.BuiltInToolDefinitions([]string{"ask_user"})...)
	if diff := cmp.Diff([]string{"c2"}, unknownCalls(req, []string{"lookup"}, host)); diff != "" {
		t.Errorf("unknown calls (-want +got):\n%s", diff)
	}
	if got := unknownCalls(req, nil, host); got != nil {
		t.Errorf("a runner that did not list its tools: unknown calls %v", got)
	}
	if got := unknownCalls(nil, []string{"lookup"}, host); got != nil {
		t.Errorf("a final answer: unknown calls %v", got)
	}
}

// TestMCPOutcomesMapToTheSpecsTable: a result and a tool error reach the
// model; a call never sent is failed (the tool did not run); a lost call is
// a retryable Step failure, so the effect class decides (a retry with the
// same key, or outcome_unknown). Progress becomes mcp.tool_progress events
// with the spec's five keys; no secret reaches an error or an event.
func TestMCPOutcomesMapToTheSpecsTable(t *testing.T) {
	in := session.ToolInput{Agent: "a", SessionID: "s", TurnID: "turn-1", IdempotencyKey: "s/turn-1/c1", HostSource: "mcp:files/read",
		ToolCall: wire.ToolCall{ToolCallID: "c1", ToolName: "files__read", Arguments: `{"path":"/x"}`}}
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
				if !errors.As(err, &app) || app.NonRetryable() || app.Type() != wire.MCPInterruptedErrorType || !strings.Contains(app.Error(), tt.wantRetry) {
					t.Errorf("error = %v, want a retryable %s: %s", err, wire.MCPInterruptedErrorType, tt.wantRetry)
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
				if e.Type != wire.EventMCPToolProgress {
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
		ToolCall: wire.ToolCall{ToolCallID: "c1", ToolName: "bank__charge", Arguments: `{}`}}
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

// TestMCPTaskPolls: a poll of an MCP task maps what tasks/get found: a
// working task polls again later (mcp.task_status only on a change), a
// question is the call's input request, a request whose answer was just
// sent reads as working, a retried attempt with an answer to hand over
// asks again instead of sending it, and a completed task is the result.
func TestMCPTaskPolls(t *testing.T) {
	working := &mcpsource.Task{ID: "t1", Status: mcpsource.TaskWorking, StatusMessage: "half", PollInterval: 3 * time.Second}
	question := &mcpsource.InputRequest{Question: "Which queue?", Choices: []string{"fast", "slow"}, Continuation: `{"key":"q1","field":"queue","type":"string"}`}
	asking := &mcpsource.Task{ID: "t1", Status: mcpsource.TaskInputRequired}
	justSent, _ := json.Marshal(mcpTaskState{Status: mcpsource.TaskInputRequired, Answered: "q1", SentAtMs: time.Now().UnixMilli()})
	longAgo, _ := json.Marshal(mcpTaskState{Status: mcpsource.TaskInputRequired, Answered: "q1", SentAtMs: time.Now().Add(-time.Minute).UnixMilli()})
	tests := []struct {
		name         string
		continuation string
		pending      *wire.QuestionAnswer
		attempt      int
		poll         mcpsource.TaskPoll
		want         session.ToolOutcome
		events       int
		calls        []string
	}{
		{name: "working", poll: mcpsource.TaskPoll{Task: working}, attempt: 1, events: 1,
			want:  session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: 4, Continuation: `{"status":"working","message":"half"}`}},
			calls: []string{"poll a mcp:ts/job t1"}},
		{name: "working, unchanged", continuation: `{"status":"working","message":"half"}`, poll: mcpsource.TaskPoll{Task: working}, attempt: 1,
			want:  session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: 4, Continuation: `{"status":"working","message":"half"}`}},
			calls: []string{"poll a mcp:ts/job t1"}},
		{name: "a question", poll: mcpsource.TaskPoll{Task: asking, Input: question}, attempt: 1, events: 1,
			want:  session.ToolOutcome{InputRequested: &session.InputRequest{Question: "Which queue?", Choices: []string{"fast", "slow"}, Continuation: question.Continuation}},
			calls: []string{"poll a mcp:ts/job t1"}},
		{name: "the answer not taken in yet", continuation: string(justSent), poll: mcpsource.TaskPoll{Task: asking, Input: question}, attempt: 1,
			want:  session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: 1, Continuation: string(justSent)}},
			calls: []string{"poll a mcp:ts/job t1"}},
		{name: "the same request long after the answer", continuation: string(longAgo), poll: mcpsource.TaskPoll{Task: asking, Input: question}, attempt: 1,
			want:  session.ToolOutcome{InputRequested: &session.InputRequest{Question: "Which queue?", Choices: []string{"fast", "slow"}, Continuation: question.Continuation}},
			calls: []string{"poll a mcp:ts/job t1"}},
		{name: "a retried attempt asks again", continuation: question.Continuation, pending: &wire.QuestionAnswer{Resolution: "answered", Answer: "slow"},
			poll: mcpsource.TaskPoll{Task: asking, Input: question}, attempt: 2, events: 1,
			want:  session.ToolOutcome{InputRequested: &session.InputRequest{Question: "Which queue?", Choices: []string{"fast", "slow"}, Continuation: question.Continuation}},
			calls: []string{"poll a mcp:ts/job t1"}},
		{name: "completed", continuation: `{"status":"working"}`, attempt: 1, events: 1,
			poll:  mcpsource.TaskPoll{Task: &mcpsource.Task{ID: "t1", Status: mcpsource.TaskCompleted}, Outcome: &mcpsource.Outcome{Kind: mcpsource.Succeeded, Text: "done"}},
			want:  session.ToolOutcome{Output: ptr("done")},
			calls: []string{"poll a mcp:ts/job t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			statuses := 0
			f := &fakeMCP{poll: tt.poll}
			a := &Activities{MCP: f, Events: sinkFunc(func(e events.Event) {
				if e.Type == wire.EventMCPTaskStatus {
					statuses++
				}
			})}
			in := session.PollInput{Agent: "a", HostSource: "mcp:ts/job", ToolCall: wire.ToolCall{ToolCallID: "c1", ToolName: "ts__job", TaskID: "t1",
				TaskPollIntervalSeconds: 2, InputContinuation: tt.continuation, TaskAnswerPending: tt.pending}}
			got, err := a.pollMCPTask(context.Background(), in, tt.attempt, &writer{a: a})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.calls, f.got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if statuses != tt.events {
				t.Errorf("%d mcp.task_status events, want %d", statuses, tt.events)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
