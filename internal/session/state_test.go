package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
)

const now = int64(1_800_000_000_000)

func ptr[T any](v T) *T { return &v }

func opts() Options {
	return Options{
		Agent: "orders",
		Policies: contract.PolicySet{
			DefaultEffect: contract.EffectUnclassified,
			Policies: map[string]contract.ToolPolicy{
				"lookup":  {Effect: contract.EffectRead},
				"refund":  {Effect: contract.EffectNonIdempotentWrite},
				"ping":    {Effect: contract.EffectIdempotentWrite},
				"mystery": {Effect: contract.EffectUnclassified, RequiresApproval: ptr(false)},
			},
		},
		InterruptDeadlineMs: 60_000,
		Version:             SettingsVersion,
		RunModel:            DefaultRunModelLimits,
		Tool:                DefaultToolLimits,
	}
}

func userMsg(text string) contract.FrameworkMessage {
	return contract.FrameworkMessage{Role: contract.RoleUser, Text: text, Item: `{"u":"` + text + `"}`}
}

func call(id, name string, effect contract.Effect) contract.DeferredToolCall {
	return contract.DeferredToolCall{ToolCallID: id, ToolName: name, Arguments: `{"order_id":"7"}`, Policy: contract.ToolPolicy{Effect: effect}}
}

func toolsRequested(calls ...contract.DeferredToolCall) ModelOutcome {
	return ModelOutcome{ToolCallsRequested: &contract.ToolCallsRequested{RunState: `{"calls":1}`, ToolCalls: calls, Usage: contract.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12, ModelCalls: 1}}}
}

func completed(text string) ModelOutcome {
	return ModelOutcome{TurnCompleted: &contract.TurnCompleted{
		NewMessages: []contract.FrameworkMessage{{Role: contract.RoleAssistant, Text: text}},
		Usage:       contract.Usage{InputTokens: 5, OutputTokens: 3, TotalTokens: 8, ModelCalls: 1},
	}}
}

// started returns a session in its first turn, running the model.
func started(t *testing.T) *State {
	t.Helper()
	return startedWith(t, opts())
}

func startedWith(t *testing.T, o Options) *State {
	t.Helper()
	s := New("s-1", o)
	s.Apply(Start{InitialMessage: "refund order 7"})
	s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: userMsg("refund order 7"), Attempt: 1})
	return s
}

// nonEmit keeps the commands that are not events.
func nonEmit(cmds []Command) []Command {
	var out []Command
	for _, c := range cmds {
		if _, ok := c.(Emit); !ok {
			out = append(out, c)
		}
	}
	return out
}

func eventTypes(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		if e, ok := c.(Emit); ok {
			out = append(out, e.Event.Type)
		}
	}
	return out
}

func statuses(s *State) map[string]wire.ToolCallStatus {
	out := map[string]wire.ToolCallStatus{}
	for _, c := range s.ToolCalls {
		out[c.ToolCallID] = c.Status
	}
	return out
}

func TestStart(t *testing.T) {
	tests := []struct {
		name      string
		initial   string
		wantCmds  []string
		wantState string
	}{
		{"blank initial message starts no turn", "  \n", nil, wire.StatusWaitingForUserMessage},
		{"empty initial message starts no turn", "", nil, wire.StatusWaitingForUserMessage},
		{"initial message starts turn-1", "hello", []string{`build_user_message turn-1 "hello"`}, wire.StatusRunningModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("s", opts())
			got := s.Apply(Start{InitialMessage: tt.initial}).Commands
			if diff := cmp.Diff(tt.wantCmds, renderAll(got)); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if s.Status != tt.wantState {
				t.Errorf("status = %q, want %q", s.Status, tt.wantState)
			}
			if again := s.Apply(Start{InitialMessage: "x"}).Commands; again != nil {
				t.Errorf("second Start = %v, want nil", again)
			}
		})
	}
}

// TestInitialMessagesOfStoreSessions: a session that keeps its messages in
// the store takes an initial message inline up to 64 KiB, or by reference
// (keeping a preview); one it cannot take starts no turn and the last turn
// error says why. A session without the store takes any, as before.
func TestInitialMessagesOfStoreSessions(t *testing.T) {
	store := opts()
	store.Messages = MessageOptions{Store: true, WindowSize: 4, ChunkSize: 2, ChunkMaxBytes: 1 << 20}
	ref := "sha256:" + strings.Repeat("ab", 32)
	long := strings.Repeat("x", MaxInlineMessageBytes+1)
	tests := []struct {
		name      string
		o         Options
		start     Start
		wantText  string
		wantRef   string
		wantError string
	}{
		{"inline at the limit", store, Start{InitialMessage: long[1:]}, long[1:], "", ""},
		{"inline past the limit", store, Start{InitialMessage: long}, "", "", "the initial message was not taken: it is 65537 bytes, over the 65536 bytes sent inline"},
		{"by reference", store, Start{InitialMessage: long[:PreviewBytes+10], InitialMessageRef: ref}, long[:PreviewBytes], ref, ""},
		{"a bad reference", store, Start{InitialMessage: "hi", InitialMessageRef: "md5:1"}, "", "", `the initial message was not taken: "md5:1" is not a message store reference`},
		{"a reference without the store", opts(), Start{InitialMessage: "hi", InitialMessageRef: ref}, "", "", "the initial message was not taken: this session keeps no message store"},
		{"no store: any length", opts(), Start{InitialMessage: long}, long, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("s", tt.o)
			cmds := nonEmit(s.Apply(tt.start).Commands)
			if tt.wantError != "" {
				if len(cmds) != 0 || !strings.HasPrefix(s.LastTurnError, tt.wantError) || s.Status != wire.StatusWaitingForUserMessage {
					t.Fatalf("commands %v, status %s, error %q; want no turn and %q", renderAll(cmds), s.Status, s.LastTurnError, tt.wantError)
				}
				return
			}
			if len(cmds) != 1 {
				t.Fatalf("commands = %v, want the turn's build_user_message", renderAll(cmds))
			}
			in := cmds[0].(BuildUserMessage).Input
			if in.Text != tt.wantText || in.TextRef != tt.wantRef {
				t.Errorf("build_user_message has %d bytes of text and ref %q; want %d and %q", len(in.Text), in.TextRef, len(tt.wantText), tt.wantRef)
			}
		})
	}
}

func TestUserMessages(t *testing.T) {
	s := New("s", opts())
	s.Apply(Start{})
	if ok, cmds := send(s, " \t"); ok || cmds != nil {
		t.Fatalf("blank message accepted: %v %v", ok, cmds)
	}
	ok, cmds := send(s, "first")
	if !ok || cmp.Diff([]string{`build_user_message turn-1 "first"`}, renderAll(cmds)) != "" {
		t.Fatalf("first message: %v %#v", ok, cmds)
	}
	// A message sent while a turn runs is queued.
	ok, cmds = send(s, "second")
	if !ok || cmds != nil || len(s.Queued) != 1 || s.Queued[0].MessageID != "msg-2" {
		t.Fatalf("second message: ok=%v cmds=%v queued=%v", ok, cmds, s.Queued)
	}
	cmds = s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: userMsg("first"), Attempt: 1}).Commands
	if diff := cmp.Diff([]string{wire.EventTurnStarted}, eventTypes(cmds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"run_model turn-1 messages=[1] attempts=3"}, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if s.Messages[0].Sequence != 1 || s.Messages[0].TurnID != "turn-1" || s.Messages[0].Item != `{"u":"first"}` {
		t.Errorf("stored message = %+v", s.Messages[0])
	}
	// The turn completes and the queued message starts turn-2.
	cmds = s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("done"), NowMs: now}).Commands
	if diff := cmp.Diff([]string{`build_user_message turn-2 "second"`}, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{wire.EventUsageRecorded, wire.EventTurnCompleted}, eventTypes(cmds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.Messages[1].Sequence != 2 || s.Messages[1].Text != "done" {
		t.Errorf("answer = %+v", s.Messages[1])
	}
	want := contract.Usage{InputTokens: 5, OutputTokens: 3, TotalTokens: 8, ModelCalls: 1}
	if diff := cmp.Diff(want, s.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestUserMessageBuildFailures(t *testing.T) {
	tests := []struct {
		name  string
		apply func(s *State) []Command
		want  string
	}{
		{"wrong role", func(s *State) []Command {
			return s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: contract.FrameworkMessage{Role: contract.RoleAssistant, Text: "x"}, Attempt: 1}).Commands
		}, `build_user_message failed: build_user_message returned role "assistant"; want "user"`},
		{"runner error", func(s *State) []Command {
			return s.Apply(UserMessageFailed{TurnID: "turn-1", Reason: "boom", Attempt: 1}).Commands
		}, "build_user_message failed: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("s", opts())
			s.Apply(Start{InitialMessage: "hi"})
			cmds := tt.apply(s)
			if diff := cmp.Diff([]string{"record_turn_failure turn-1"}, renderAll(cmds)); diff != "" {
				t.Fatalf("commands (-want +got):\n%s", diff)
			}
			if len(s.Messages) != 1 || s.Messages[0].Text != "hi" || s.Messages[0].Role != contract.RoleUser {
				t.Errorf("user text not kept: %+v", s.Messages)
			}
			s.Apply(TurnFailureRecorded{TurnID: "turn-1", Messages: nil, Attempt: 1})
			if s.LastTurnError != tt.want || s.Status != wire.StatusWaitingForUserMessage {
				t.Errorf("after failure: status %q error %q", s.Status, s.LastTurnError)
			}
		})
	}
}

func TestToolCallsRequested(t *testing.T) {
	s := started(t)
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(
		call("c1", "lookup", contract.EffectRead),
		call("c2", "refund", contract.EffectNonIdempotentWrite),
		contract.DeferredToolCall{ToolCallID: "c3", ToolName: "ping", Arguments: "{}", Policy: contract.ToolPolicy{Effect: contract.EffectIdempotentWrite, RequiresApproval: ptr(true)}},
		contract.DeferredToolCall{ToolCallID: "c4", ToolName: "mystery", Arguments: "{}", Policy: contract.ToolPolicy{Effect: contract.EffectUnclassified, RequiresApproval: ptr(false)}},
	), NowMs: now}).Commands
	wantCmds := []string{
		"CallTool turn-1/c1 effect=read attempts=3 key=s-1/turn-1/c1",
		"start_timer c2 1m0s",
		"start_timer c3 1m0s",
		"CallSingleAttemptTool turn-1/c4 effect=unclassified attempts=1 key=s-1/turn-1/c4",
	}
	if diff := cmp.Diff(wantCmds, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	wantEvents := []string{wire.EventUsageRecorded, wire.EventToolCallDeferred, wire.EventToolCallDeferred, wire.EventInterruptRaised,
		wire.EventToolCallDeferred, wire.EventInterruptRaised, wire.EventToolCallDeferred}
	if diff := cmp.Diff(wantEvents, eventTypes(cmds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wantStatus := map[string]wire.ToolCallStatus{"c1": "approved", "c2": "awaiting_approval", "c3": "awaiting_approval", "c4": "approved"}
	if diff := cmp.Diff(wantStatus, statuses(s)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if s.Status != wire.StatusRunningTools || s.RunState != `{"calls":1}` {
		t.Errorf("status %q run state %q", s.Status, s.RunState)
	}
	if diff := cmp.Diff([]string{"AwaitToolApproval", "CallSingleAttemptTool", "CallTool", "ResumeTurn"}, s.ActiveStepTypes()); diff != "" {
		t.Errorf("ActiveStepTypes (-want +got):\n%s", diff)
	}
	snap := s.Snapshot()
	if len(snap.PendingInterrupts) != 2 || snap.PendingInterrupts[0].Deadline != formatDeadline(now+60_000) || snap.PendingInterrupts[0].Arguments != `{"order_id":"7"}` {
		t.Errorf("pending interrupts = %+v", snap.PendingInterrupts)
	}
	for i, c := range s.ToolCalls {
		if c.DeferralOrder != i {
			t.Errorf("%s deferral order %d, want %d", c.ToolCallID, c.DeferralOrder, i)
		}
	}
}

func TestInvalidToolCallsFailTheTurn(t *testing.T) {
	tests := []struct {
		name string
		out  ModelOutcome
		want string
	}{
		{"empty id", toolsRequested(call("", "lookup", "read")), "tool call 0 (lookup) has an empty tool_call_id"},
		{"slash in id", toolsRequested(call("a/b", "lookup", "read")), `tool call ID "a/b" contains '/'`},
		{"duplicate id", toolsRequested(call("a", "lookup", "read"), call("a", "lookup", "read")), `tool call ID "a" is used twice in turn turn-1`},
		{"empty run state", ModelOutcome{ToolCallsRequested: &contract.ToolCallsRequested{ToolCalls: []contract.DeferredToolCall{call("a", "x", "read")}}},
			"the runner returned tool_calls_requested with an empty framework_run_state"},
		{"no tool calls", ModelOutcome{ToolCallsRequested: &contract.ToolCallsRequested{RunState: "x"}}, "the runner returned tool_calls_requested without tool calls"},
		{"neither outcome", ModelOutcome{}, "the runner returned a malformed outcome: want exactly one of turn_completed and tool_calls_requested"},
		{"new messages without unfinished builder", ModelOutcome{ToolCallsRequested: &contract.ToolCallsRequested{
			RunState: "x", ToolCalls: []contract.DeferredToolCall{call("a", "x", "read")}, NewMessages: []contract.FrameworkMessage{{Role: "assistant"}}}},
			"the runner stored new_messages in tool_calls_requested but does not implement build_unfinished_turn_messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := started(t)
			cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: tt.out, NowMs: now}).Commands)
			if diff := cmp.Diff([]string{"record_turn_failure turn-1"}, renderAll(cmds)); diff != "" || s.LastTurnError != tt.want {
				t.Errorf("commands (-want +got):\n%s\nlast_turn_error %q, want %q", diff, s.LastTurnError, tt.want)
			}
			if len(s.ToolCalls) != 0 {
				t.Errorf("records stored for a failed turn: %+v", s.ToolCalls)
			}
		})
	}
}

func TestIDsMayRepeatInLaterTurnsButNotWithinOne(t *testing.T) {
	s := started(t)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("a", "lookup", "read")), NowMs: now})
	s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "a", Outcome: ToolOutcome{Output: ptr("ok")}})
	cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("a", "lookup", "read")), NowMs: now}).Commands)
	if _, ok := cmds[0].(RecordTurnFailure); !ok {
		t.Fatalf("reusing an ID within a turn: %#v", cmds)
	}
	s.Apply(TurnFailureRecorded{TurnID: "turn-1", Messages: nil, Attempt: 1})
	send(s, "again")
	s.Apply(UserMessageBuilt{TurnID: "turn-2", Message: userMsg("again"), Attempt: 1})
	cmds = nonEmit(s.Apply(ModelStepDone{TurnID: "turn-2", Outcome: toolsRequested(call("a", "lookup", "read")), NowMs: now}).Commands)
	if diff := cmp.Diff([]string{"CallTool turn-2/a effect=read attempts=3 key=s-1/turn-2/a"}, renderAll(cmds)); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

func TestToolResultsResumeTheTurn(t *testing.T) {
	s := started(t)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "lookup", "read"), call("c2", "lookup", "read")), NowMs: now})
	cmds := s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c1", Outcome: ToolOutcome{Output: ptr("order 7: $20")}}).Commands
	if nonEmit(cmds) != nil || s.Status != wire.StatusRunningTools {
		t.Fatalf("resumed before every result: %#v", cmds)
	}
	// A duplicate result for a final record is ignored.
	if cmds := s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c1", Outcome: ToolOutcome{Output: ptr("again")}}).Commands; cmds != nil {
		t.Fatalf("duplicate result applied: %#v", cmds)
	}
	cmds = s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c2", Outcome: ToolOutcome{Error: ptr("no such order")}}).Commands
	if diff := cmp.Diff([]string{`run_model turn-1 messages=[1] run_state={"calls":1} tool_calls=[c1:succeeded c2:failed] attempts=3`}, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]wire.ToolCallStatus{"c1": "succeeded", "c2": "failed"}, statuses(s)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if s.ToolCalls[0].Output != "order 7: $20" || s.ToolCalls[1].Error != "no such order" {
		t.Errorf("records = %+v", s.ToolCalls)
	}
	cmds = s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("Order 7 costs $20."), NowMs: now}).Commands
	if s.Status != wire.StatusWaitingForUserMessage || s.ToolCalls != nil || s.RunState != "" || s.ActiveTurnID != "" {
		t.Errorf("turn not ended: %+v", s)
	}
	if diff := cmp.Diff([]string{wire.EventUsageRecorded, wire.EventTurnCompleted}, eventTypes(cmds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.Usage.ModelCalls != 2 || s.Usage.InputTokens != 15 {
		t.Errorf("usage = %+v", s.Usage)
	}
}

func TestToolStepFailures(t *testing.T) {
	tests := []struct {
		name       string
		effect     contract.Effect
		notStarted bool
		wantStatus wire.ToolCallStatus
		wantError  string
	}{
		{"read retries spent", contract.EffectRead, false, "failed", "boom"},
		{"idempotent write retries spent", contract.EffectIdempotentWrite, false, "outcome_unknown", "boom"},
		{"non-idempotent write crashed", contract.EffectNonIdempotentWrite, false, "outcome_unknown", "boom"},
		{"unclassified crashed", contract.EffectUnclassified, false, "outcome_unknown", "boom"},
		{"write never started", contract.EffectNonIdempotentWrite, true, "failed", ToolCallNotRunErrorPrefix + ": boom"},
		{"read never started", contract.EffectRead, true, "failed", ToolCallNotRunErrorPrefix + ": boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Policies.Policies = map[string]contract.ToolPolicy{"tool": {Effect: tt.effect, RequiresApproval: ptr(false)}}
			s := startedWith(t, o)
			c := call("c1", "tool", tt.effect)
			s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(c), NowMs: now})
			cmds := s.Apply(ToolStepFailed{TurnID: "turn-1", ToolCallID: "c1", Detail: "boom", NotStarted: tt.notStarted, Attempt: 1}).Commands
			want := fmt.Sprintf(`run_model turn-1 messages=[1] run_state={"calls":1} tool_calls=[c1:%s] attempts=3`, tt.wantStatus)
			if diff := cmp.Diff([]string{want}, renderAll(nonEmit(cmds))); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			got := s.ToolCalls[0]
			if got.Status != tt.wantStatus || got.Error != tt.wantError {
				t.Errorf("record = %s %q, want %s %q", got.Status, got.Error, tt.wantStatus, tt.wantError)
			}
		})
	}
}

func TestApprovals(t *testing.T) {
	tests := []struct {
		name       string
		req        wire.ResolveInterruptRequest
		at         int64
		wantOK     bool
		wantStatus wire.ToolCallStatus
		wantCmds   []string
		wantReject string
	}{
		{"approve", wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true, RejectionMessage: "dropped"}, now + 1, true, "approved",
			[]string{"cancel_timer c1", "CallSingleAttemptTool turn-1/c1 effect=non_idempotent_write attempts=1 key=s-1/turn-1/c1"}, ""},
		{"reject with message", wire.ResolveInterruptRequest{InterruptID: "c1", RejectionMessage: "not that one"}, now + 1, true, "rejected",
			[]string{"cancel_timer c1", `run_model turn-1 messages=[1] run_state={"calls":1} tool_calls=[c1:rejected] attempts=3`}, "not that one"},
		{"reject without message", wire.ResolveInterruptRequest{InterruptID: "c1"}, now + 1, true, "rejected",
			[]string{"cancel_timer c1", `run_model turn-1 messages=[1] run_state={"calls":1} tool_calls=[c1:rejected] attempts=3`}, contract.DefaultRejectionToolResult},
		{"unknown interrupt", wire.ResolveInterruptRequest{InterruptID: "nope", Approved: true}, now + 1, false, "awaiting_approval", nil, ""},
		{"past the deadline", wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, now + 60_000, false, "awaiting_approval", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := started(t)
			s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
			ok, cmds := resolve(s, tt.req, tt.at)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.wantCmds, renderAll(nonEmit(cmds))); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			rec := s.ToolCalls[0]
			if rec.Status != tt.wantStatus || rec.RejectionMessage != tt.wantReject {
				t.Errorf("record = %s %q", rec.Status, rec.RejectionMessage)
			}
			if tt.wantOK && len(s.Interrupts) != 0 {
				t.Errorf("interrupt still pending: %+v", s.Interrupts)
			}
			if ok2, _ := resolve(s, tt.req, tt.at); ok2 {
				t.Errorf("second resolve returned true")
			}
		})
	}
}

func TestApprovalDeadline(t *testing.T) {
	s := started(t)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	// A timer that fires early is armed again.
	cmds := s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 59_999}).Commands
	if diff := cmp.Diff([]string{"start_timer c1 1s"}, renderAll(cmds)); diff != "" {
		t.Fatalf("early timer (-want +got):\n%s", diff)
	}
	cmds = s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 60_000}).Commands
	if diff := cmp.Diff([]string{`run_model turn-1 messages=[1] run_state={"calls":1} tool_calls=[c1:rejected] attempts=3`}, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{wire.EventInterruptResolved, wire.EventToolCallFinished}, eventTypes(cmds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	rec := s.ToolCalls[0]
	if rec.Status != wire.ToolCallRejected || rec.RejectionMessage != ApprovalDeadlinePassed {
		t.Errorf("record = %+v", rec)
	}
	if cmds := s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 70_000}).Commands; cmds != nil {
		t.Errorf("second firing applied: %#v", cmds)
	}
}

func TestNoDeadlineWithoutInterruptDeadline(t *testing.T) {
	o := opts()
	o.InterruptDeadlineMs = 0
	s := New("s-1", o)
	s.Apply(Start{InitialMessage: "x"})
	s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: userMsg("x"), Attempt: 1})
	cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now}).Commands)
	if cmds != nil {
		t.Errorf("commands = %q, want none (no deadline timer)", renderAll(cmds))
	}
	if ok, _ := resolve(s, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, now+365*24*3600*1000); !ok {
		t.Errorf("approval without a deadline refused")
	}
}

func TestModelFailureLeavesNote(t *testing.T) {
	s := started(t)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "lookup", contract.EffectRead), call("c2", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c1", Outcome: ToolOutcome{Output: ptr("found")}})
	resolve(s, wire.ResolveInterruptRequest{InterruptID: "c2", Approved: true}, now)
	s.Apply(ToolStepFailed{TurnID: "turn-1", ToolCallID: "c2", Detail: "worker lost", NotStarted: false, Attempt: 1})
	cmds := s.Apply(ModelStepFailed{TurnID: "turn-1", Reason: "RunModel failed after 3 attempts: 503", Attempt: 1}).Commands
	wantNote := TurnFailureNoteHeader + "\n" +
		`- lookup {"order_id":"7"} -> succeeded: found` + "\n" +
		`- refund {"order_id":"7"} -> outcome_unknown: ` + contract.OutcomeUnknownToolResult + "\n" +
		TurnFailureNoteFooter
	want := []string{fmt.Sprintf("record_turn_failure turn-1 note=%q", wantNote)}
	if diff := cmp.Diff(want, renderAll(cmds)); diff != "" || s.LastTurnError != "RunModel failed after 3 attempts: 503" {
		t.Fatalf("commands (-want +got):\n%s\nlast_turn_error %q", diff, s.LastTurnError)
	}
	send(s, "next")
	cmds = s.Apply(TurnFailureRecorded{TurnID: "turn-1", Messages: []contract.FrameworkMessage{{Role: contract.RoleUser, Text: wantNote}}, Attempt: 1}).Commands
	if diff := cmp.Diff([]string{wire.EventTurnFailed}, eventTypes(cmds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`build_user_message turn-2 "next"`}, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	last := s.Messages[len(s.Messages)-1]
	if last.Text != wantNote || s.LastTurnError == "" || s.ToolCalls != nil || s.RunState != "" {
		t.Errorf("after failure: last=%+v err=%q", last, s.LastTurnError)
	}
	// A later completed turn clears last_turn_error.
	s.Apply(UserMessageBuilt{TurnID: "turn-2", Message: userMsg("next"), Attempt: 1})
	s.Apply(ModelStepDone{TurnID: "turn-2", Outcome: completed("ok"), NowMs: now})
	if s.LastTurnError != "" {
		t.Errorf("last_turn_error not cleared: %q", s.LastTurnError)
	}
}

func TestStaleInputsAreIgnored(t *testing.T) {
	s := started(t)
	if cmds := s.Apply(ModelStepDone{TurnID: "turn-9", Outcome: completed("x"), NowMs: now}).Commands; cmds != nil {
		t.Errorf("result for another turn applied")
	}
	if cmds := s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c1", Outcome: ToolOutcome{Output: ptr("x")}}).Commands; cmds != nil {
		t.Errorf("tool result while running the model applied")
	}
	if cmds := s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: userMsg("again"), Attempt: 1}).Commands; cmds != nil {
		t.Errorf("second user message build applied")
	}
	if cmds := s.Apply(TurnFailureRecorded{TurnID: "turn-1", Messages: nil, Attempt: 1}).Commands; cmds != nil {
		t.Errorf("failure record without a failure applied")
	}
}

func TestStateSurvivesJSON(t *testing.T) {
	s := started(t)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, &back, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestListMessages(t *testing.T) {
	s := New("s", opts())
	s.Apply(Start{})
	for i := 0; i < 5; i++ {
		s.append(contract.FrameworkMessage{Role: contract.RoleUser, Text: strings.Repeat("x", i)})
	}
	seqs := func(p wire.MessagesPage) []int64 {
		var out []int64
		for _, m := range p.Messages {
			out = append(out, m.Sequence)
		}
		return out
	}
	tests := []struct {
		name     string
		req      wire.ListMessagesRequest
		want     []int64
		wantMore bool
		wantNext int64
	}{
		{"newest page", wire.ListMessagesRequest{Limit: 2}, []int64{4, 5}, true, 4},
		{"before", wire.ListMessagesRequest{BeforeSequence: 4, Limit: 2}, []int64{2, 3}, true, 2},
		{"last page", wire.ListMessagesRequest{BeforeSequence: 2, Limit: 2}, []int64{1}, false, 0},
		{"a negative limit reads 1", wire.ListMessagesRequest{Limit: -3}, []int64{5}, true, 5},
		{"a zero limit reads 1", wire.ListMessagesRequest{}, []int64{5}, true, 5},
		{"limit clamped down", wire.ListMessagesRequest{Limit: 1000}, []int64{1, 2, 3, 4, 5}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := s.ListMessages(tt.req)
			if diff := cmp.Diff(tt.want, seqs(p)); diff != "" {
				t.Errorf("sequences (-want +got):\n%s", diff)
			}
			if p.HasMore != tt.wantMore || p.NextBeforeSequence != tt.wantNext || p.FirstSequence != 1 {
				t.Errorf("page = more %v next %d first %d", p.HasMore, p.NextBeforeSequence, p.FirstSequence)
			}
		})
	}
}

func TestFormatDeadline(t *testing.T) {
	for _, ms := range []int64{1, now, 951782400123, 4102444800000, 1700000000999} {
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
		if got := formatDeadline(ms); got != want {
			t.Errorf("formatDeadline(%d) = %q, want %q", ms, got, want)
		}
	}
	if formatDeadline(0) != "" {
		t.Errorf("zero deadline rendered")
	}
}

func TestAuthorizePolicy(t *testing.T) {
	set := contract.PolicySet{
		DefaultEffect: contract.EffectUnclassified,
		Policies: map[string]contract.ToolPolicy{
			"refund":      {Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(true)},
			"lookup":      {Effect: contract.EffectRead},
			"write_quiet": {Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(false)},
			"idem":        {Effect: contract.EffectIdempotentWrite},
		},
	}
	claim := func(e contract.Effect, approval *bool) contract.ToolPolicy {
		return contract.ToolPolicy{Effect: e, RequiresApproval: approval}
	}
	tests := []struct {
		name         string
		set          contract.PolicySet
		tool         string
		claim        contract.ToolPolicy
		wantEffect   contract.Effect
		wantApproval bool
	}{
		{"a runner claiming read for a configured write gets the write's policy", set, "refund", claim(contract.EffectRead, ptr(false)), contract.EffectNonIdempotentWrite, true},
		{"a runner claiming read for an unconfigured tool gets the default effect", set, "unknown", claim(contract.EffectRead, nil), contract.EffectUnclassified, true},
		{"a runner may make a read stricter", set, "lookup", claim(contract.EffectNonIdempotentWrite, nil), contract.EffectNonIdempotentWrite, true},
		{"a runner may add an approval", set, "lookup", claim(contract.EffectRead, ptr(true)), contract.EffectRead, true},
		{"a runner may not drop an approval", set, "refund", claim(contract.EffectNonIdempotentWrite, ptr(false)), contract.EffectNonIdempotentWrite, true},
		{"the config may drop the approval of a write", set, "write_quiet", claim(contract.EffectNonIdempotentWrite, nil), contract.EffectNonIdempotentWrite, false},
		{"a configured read runs without approval", set, "lookup", claim(contract.EffectRead, nil), contract.EffectRead, false},
		{"a runner without a claim gets the config's policy", set, "idem", contract.ToolPolicy{}, contract.EffectIdempotentWrite, false},
		{"unclassified and non-idempotent are equally strict: the config's stays", set, "write_quiet", claim(contract.EffectUnclassified, nil), contract.EffectNonIdempotentWrite, false},
		{"a read default lets reads run", contract.PolicySet{DefaultEffect: contract.EffectRead}, "x", claim(contract.EffectRead, nil), contract.EffectRead, false},
		{"a missing default is unclassified", contract.PolicySet{}, "x", claim(contract.EffectRead, nil), contract.EffectUnclassified, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuthorizePolicy(tt.set, tt.tool, tt.claim)
			if got.Effect != tt.wantEffect || got.ApprovalRequired() != tt.wantApproval {
				t.Errorf("AuthorizePolicy = %s approval %v, want %s approval %v", got.Effect, got.ApprovalRequired(), tt.wantEffect, tt.wantApproval)
			}
		})
	}
}

// TestTheConfigDecidesAToolCallsPolicy is the security rule: a runner that
// claims "read" for refund gets one attempt and an approval, as the
// operator's config says; a session started before settings were recorded
// keeps the runner's claim, as it ran.
func TestTheConfigDecidesAToolCallsPolicy(t *testing.T) {
	lying := call("c1", "refund", contract.EffectRead)
	lying.Policy.RequiresApproval = ptr(false)

	s := started(t)
	cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(lying), NowMs: now}).Commands)
	if diff := cmp.Diff([]string{"start_timer c1 1m0s"}, renderAll(cmds)); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if rec := s.ToolCalls[0]; rec.Effect != wire.EffectNonIdempotentWrite || !rec.RequiresApproval {
		t.Errorf("record = %s approval %v, want non_idempotent_write with approval", rec.Effect, rec.RequiresApproval)
	}

	legacy := opts()
	legacy.Version = 0
	s = startedWith(t, legacy)
	cmds = nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(lying), NowMs: now}).Commands)
	want := []string{"CallTool turn-1/c1 effect=read attempts=3 key=s-1/turn-1/c1"}
	if diff := cmp.Diff(want, renderAll(cmds)); diff != "" {
		t.Errorf("legacy commands (-want +got):\n%s", diff)
	}
}

// TestUsageIsRecordedAsReported: the session adds what the runner reported
// for the call; a runner that reports no model call (a cached answer, say)
// counts none.
func TestUsageIsRecordedAsReported(t *testing.T) {
	tests := []struct {
		name string
		u    contract.Usage
	}{
		{"one call", contract.Usage{InputTokens: 5, OutputTokens: 3, TotalTokens: 8, ModelCalls: 1}},
		{"no model call", contract.Usage{ModelCalls: 0}},
		{"a provider total that is not the sum", contract.Usage{InputTokens: 5, OutputTokens: 3, ReasoningTokens: 4, TotalTokens: 12, ModelCalls: 1}},
		{"a harness that made three calls", contract.Usage{InputTokens: 30, OutputTokens: 9, TotalTokens: 39, ModelCalls: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := started(t)
			cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: ModelOutcome{TurnCompleted: &contract.TurnCompleted{Usage: tt.u}, Attempt: 2}, NowMs: now}).Commands
			if diff := cmp.Diff(tt.u, s.Usage); diff != "" {
				t.Errorf("session usage (-want +got):\n%s", diff)
			}
			var p wire.UsageRecordedPayload
			if err := json.Unmarshal(cmds[0].(Emit).Event.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wire.Usage(tt.u), p.Recorded); diff != "" {
				t.Errorf("usage_recorded.recorded (-want +got):\n%s", diff)
			}
			if a := cmds[0].(Emit).Event.Attempt; a != 2 {
				t.Errorf("usage_recorded attempt = %d, want the RunModel attempt 2", a)
			}
		})
	}
}

func send(s *State, text string) (bool, []Command) {
	r := s.Apply(SendUserMessage{Text: text})
	return r.Accepted, r.Commands
}

func resolve(s *State, req wire.ResolveInterruptRequest, nowMs int64) (bool, []Command) {
	r := s.Apply(ResolveInterrupt{InterruptID: req.InterruptID, Approved: req.Approved, RejectionMessage: req.RejectionMessage, NowMs: nowMs})
	return r.Accepted, r.Commands
}

// TestPlanRoll: the window's oldest messages are cut into whole chunks,
// the same way whatever comes after them, so every attempt and every later
// Step cuts the same chunks.
func TestPlanRoll(t *testing.T) {
	window := func(sizes ...int64) []Entry {
		out := make([]Entry, len(sizes))
		for i, b := range sizes {
			out[i] = Entry{Message: contract.Message{Sequence: int64(i + 1)}, Bytes: b}
		}
		return out
	}
	repeat := func(n int, b int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = b
		}
		return out
	}
	tests := []struct {
		name   string
		o      MessageOptions
		window []Entry
		want   string
	}{
		{"under the threshold", MessageOptions{WindowSize: 4, ChunkSize: 2, ChunkMaxBytes: 100}, window(1, 1, 1, 1, 1), "none"},
		{"one full chunk", MessageOptions{WindowSize: 4, ChunkSize: 2, ChunkMaxBytes: 100}, window(1, 1, 1, 1, 1, 1), "1..2"},
		{"a partial chunk stays", MessageOptions{WindowSize: 2, ChunkSize: 2, ChunkMaxBytes: 100}, window(1, 1, 1, 1, 1), "1..2"},
		{"cut by bytes", MessageOptions{WindowSize: 2, ChunkSize: 3, ChunkMaxBytes: 100}, window(60, 30, 30, 1, 1, 1, 1), "1..2, 3..5"},
		{"no roll before WindowSize+ChunkSize messages", MessageOptions{WindowSize: 2, ChunkSize: 10, ChunkMaxBytes: 100}, window(60, 30, 30, 1, 1, 1, 1), "none"},
		{"a large message alone", MessageOptions{WindowSize: 2, ChunkSize: 3, ChunkMaxBytes: 100}, window(10, 500, 10, 10, 10, 1, 1), "1..1, 2..2, 3..5"},
		{"at most four chunks", MessageOptions{WindowSize: 1, ChunkSize: 1, ChunkMaxBytes: 100}, window(repeat(8, 1)...), "1..1, 2..2, 3..3, 4..4"},
		{"at most 8 MiB", MessageOptions{WindowSize: 1, ChunkSize: 1, ChunkMaxBytes: 8 << 20}, window(5<<20, 5<<20, 1, 1), "1..1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &State{Options: Options{Messages: tt.o}, Window: tt.window}
			if got := plans(s.planRoll()); got != tt.want {
				t.Errorf("planRoll = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestListMessagesPagingEnds: a session whose older messages live in the
// store answers from its window; a pager that follows has_more reaches an
// empty page before the window, which ends the paging (has_more false) and
// says where the window begins, instead of pointing at itself.
func TestListMessagesPagingEnds(t *testing.T) {
	s := &State{Options: Options{Messages: MessageOptions{Store: true, WindowSize: 4, ChunkSize: 2, ChunkMaxBytes: 1000}}}
	s.NextSequence = 65
	for seq := int64(61); seq <= 64; seq++ {
		s.Window = append(s.Window, Entry{Message: contract.Message{Sequence: seq}})
	}
	var pages [][]int64
	before := int64(0)
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("paging did not end: %v", pages)
		}
		p := s.ListMessages(wire.ListMessagesRequest{BeforeSequence: before, Limit: 3})
		var seqs []int64
		for _, m := range p.Messages {
			seqs = append(seqs, m.Sequence)
		}
		pages = append(pages, seqs)
		if p.WindowFirstSequence != 61 || p.FirstSequence != 1 {
			t.Errorf("page %d: window first %d, first %d; want 61 and 1", i, p.WindowFirstSequence, p.FirstSequence)
		}
		if !p.HasMore {
			break
		}
		if p.NextBeforeSequence >= before && before != 0 {
			t.Fatalf("page %d points at %d, not before %d", i, p.NextBeforeSequence, before)
		}
		before = p.NextBeforeSequence
	}
	if got := fmt.Sprint(pages); got != "[[62 63 64] [61] []]" {
		t.Errorf("pages %s, want [[62 63 64] [61] []]", got)
	}
}

// TestSnapshotSaysWhereItsWindowBegins: a session whose older messages live
// in the store answers its window and says where it begins, so a reader of
// the store fills the snapshot to the newest 200; a session with nothing
// older says nothing.
func TestSnapshotSaysWhereItsWindowBegins(t *testing.T) {
	s := &State{Options: Options{Messages: MessageOptions{Store: true, WindowSize: 4, ChunkSize: 2, ChunkMaxBytes: 1000}}}
	s.NextSequence = 65
	for seq := int64(61); seq <= 64; seq++ {
		s.Window = append(s.Window, Entry{Message: contract.Message{Sequence: seq}})
	}
	if got := s.Snapshot().WindowFirstSequence; got != 61 {
		t.Errorf("window first = %d, want 61", got)
	}
	s.DeletedBefore = 61 // retention deleted everything before the window
	if got := s.Snapshot().WindowFirstSequence; got != 0 {
		t.Errorf("window first = %d with nothing older stored, want 0", got)
	}
	plain := New("s", opts())
	plain.Apply(Start{})
	if got := plain.Snapshot().WindowFirstSequence; got != 0 {
		t.Errorf("a session without the store: window first %d, want 0", got)
	}
}
