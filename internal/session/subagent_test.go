package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func subAgentOpts() Options {
	o := opts()
	o.SubAgents = []SubAgentOption{{Name: "returns", FlowType: "ReturnsFlow", Description: "Handles return labels.", Mode: wire.SubAgentModeWait, MaxTurns: 3}}
	return o
}

func delegateCall(id, task string) contract.DeferredToolCall {
	return contract.DeferredToolCall{ToolCallID: id, ToolName: "delegate_to_returns", Arguments: `{"task":"` + task + `"}`}
}

func commandsOf[T Command](cmds []Command) []T {
	var out []T
	for _, c := range cmds {
		if v, ok := c.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// delegating returns a parent whose turn waits on child s-1.sub-1.
func delegating(t *testing.T) (*State, StartChild) {
	t.Helper()
	s := startedWith(t, subAgentOpts())
	if !slices.ContainsFunc(s.turnInput().HostTools, func(d contract.ToolDefinition) bool { return d.Name == "delegate_to_returns" }) {
		t.Fatalf("host tools lack delegate_to_returns: %+v", s.turnInput().HostTools)
	}
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(delegateCall("c1", "label order 7")), NowMs: now})
	starts := commandsOf[StartChild](r.Commands)
	if len(starts) != 1 {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	return s, starts[0]
}

func TestDelegateStartsAChildSession(t *testing.T) {
	s, st := delegating(t)
	in := st.Input
	if st.WorkflowID != "s-1.sub-1" || st.FlowType != "ReturnsFlow" || in.InitialMessage != "label order 7" || in.SubAgent == nil {
		t.Fatalf("start: %+v", st)
	}
	sa := in.SubAgent
	if sa.ParentSessionID != "s-1" || sa.ToolCallID != "c1" || sa.Mode != wire.SubAgentModeWait || sa.MaxTurns != 3 ||
		!slices.Equal(sa.Lineage, []string{"s-1"}) || sa.Budget == nil || sa.Budget.Agent != "orders" || sa.Budget.Used.InputTokens != 10 {
		t.Fatalf("sub-agent start: %+v budget %+v", sa, sa.Budget)
	}
	if c := s.ToolCalls[0]; c.Status != wire.ToolCallWaitingForSubAgent || c.ChildSessionID != "s-1.sub-1" || c.Effect != wire.EffectRead {
		t.Fatalf("record: %+v", c)
	}
	if checkSubAgentStart("s-1.sub-1", sa) != "" {
		t.Fatalf("the parent's start input is refused: %s", checkSubAgentStart("s-1.sub-1", sa))
	}
}

func TestDelegateWithInvalidArgumentsFails(t *testing.T) {
	s := startedWith(t, subAgentOpts())
	bad := contract.DeferredToolCall{ToolCallID: "c1", ToolName: "delegate_to_returns", Arguments: `{"task":"  "}`}
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(bad), NowMs: now})
	if len(commandsOf[StartChild](r.Commands)) != 0 || s.ToolCalls[0].Status != wire.ToolCallFailed || !strings.Contains(s.ToolCalls[0].Error, "task is required") {
		t.Fatalf("record %+v, commands %v", s.ToolCalls[0], renderAll(r.Commands))
	}
	if len(commandsOf[RunModel](r.Commands)) != 1 {
		t.Fatalf("the turn did not go on: %v", renderAll(r.Commands))
	}
}

func TestChildInterruptsAreMirroredInTheParent(t *testing.T) {
	s, _ := delegating(t)
	in := wire.Interrupt{InterruptID: "r1", ToolCallID: "r1", ToolName: "issue_label", Kind: wire.InterruptKindApproval, SessionID: "s-1.sub-1", Path: []string{"s-1.sub-1"}}
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentInterruptRaised, ChildSessionID: "s-1.sub-1", ToolCallID: "c1", Interrupt: &in}})
	snap := s.Snapshot()
	if len(snap.PendingInterrupts) != 1 {
		t.Fatalf("pending: %+v", snap.PendingInterrupts)
	}
	got := snap.PendingInterrupts[0]
	if got.SessionID != "s-1.sub-1" || !slices.Equal(got.Path, []string{"s-1", "s-1.sub-1"}) {
		t.Fatalf("mirrored: %+v", got)
	}
	if !slices.Contains(s.ActiveStepTypes(), wire.StepAwaitToolApproval) {
		t.Fatalf("steps: %v", s.ActiveStepTypes())
	}
	// The parent does not resolve it itself.
	if s.Apply(ResolveInterrupt{InterruptID: "r1", Approved: true, NowMs: now}).Accepted {
		t.Fatal("the parent resolved its child's interrupt")
	}
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentInterruptResolved, ChildSessionID: "s-1.sub-1", InterruptID: "r1", Interrupt: &wire.Interrupt{InterruptID: "r1", SessionID: "s-1.sub-1"}}})
	if n := len(s.Snapshot().PendingInterrupts); n != 0 {
		t.Fatalf("still pending: %d", n)
	}
}

func TestChildAnswerSettlesTheCall(t *testing.T) {
	s, _ := delegating(t)
	spent := wire.Spend{ModelCalls: 2, InputTokens: 40, OutputTokens: 9, CostMicros: 120}
	r := s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: "s-1.sub-1", ToolCallID: "c1",
		TurnID: "turn-1", Outcome: wire.SubAgentCompleted, Answer: `label "RL-7" sent`, Spend: spent}})
	c := s.ToolCalls[0]
	if c.Status != wire.ToolCallSucceeded || c.Output != `{"status":"completed","session_id":"s-1.sub-1","answer":"label \"RL-7\" sent"}` {
		t.Fatalf("record: %+v", c)
	}
	if len(commandsOf[RunModel](r.Commands)) != 1 || !slices.Contains(eventTypes(r.Commands), wire.EventSubAgentFinished) {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	// The child's spend counts as the parent's.
	if got := s.sessionSpend(); got.InputTokens != 50 || got.CostMicros != 120 || s.Snapshot().Spend.SubAgents.ModelCalls != 2 {
		t.Fatalf("spend: %+v", got)
	}
	if len(s.Children) != 0 {
		t.Fatalf("children: %+v", s.Children)
	}
}

func TestLongChildAnswerIsReadWhole(t *testing.T) {
	s, _ := delegating(t)
	// A session that keeps its messages in the store reads the rest.
	s.Options.Messages.Store = true
	r := s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: "s-1.sub-1", Outcome: wire.SubAgentCompleted, Answer: "beginning", AnswerSequence: 4}})
	reads := commandsOf[ReadSubAgentAnswer](r.Commands)
	if len(reads) != 1 || reads[0].Input.Sequence != 4 || reads[0].Input.ChildSessionID != "s-1.sub-1" {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	// The child's close while its answer is read changes nothing.
	s.Apply(ChildClosed{ToolCallID: "c1", ChildSessionID: "s-1.sub-1"})
	r = s.Apply(SubAgentAnswerRead{TurnID: "turn-1", ToolCallID: "c1", Output: "{preview", OutputRef: "sha256:" + strings.Repeat("a", 64)})
	if s.ToolCalls[0].Status != wire.ToolCallSucceeded || s.refs("c1").OutputRef == "" || len(commandsOf[RunModel](r.Commands)) != 1 {
		t.Fatalf("record %+v refs %+v", s.ToolCalls[0], s.Refs)
	}
}

func TestCancelStopsTheChild(t *testing.T) {
	s, _ := delegating(t)
	r := s.Apply(CancelTurn{TurnID: "turn-1"})
	sig := commandsOf[SignalChild](r.Commands)
	if len(sig) != 1 || sig[0].ChildSessionID != "s-1.sub-1" || sig[0].Control.Action != wire.SubAgentCancelTurn {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	if c := s.ToolCalls[0]; c.Status != wire.ToolCallRejected || c.CancellationReason != wire.CancellationTurnCancelled {
		t.Fatalf("record: %+v", c)
	}
	// The child's late answer changes nothing but its spend counts.
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: "s-1.sub-1", Outcome: wire.SubAgentCancelled, Spend: wire.Spend{ModelCalls: 1, CostMicros: 7}}})
	if s.SubAgentSpend.CostMicros != 7 {
		t.Fatalf("spend: %+v", s.SubAgentSpend)
	}
}

func TestChildThatEndsWithoutAnAnswerFailsTheCall(t *testing.T) {
	s, _ := delegating(t)
	s.Apply(ChildClosed{ToolCallID: "c1", ChildSessionID: "s-1.sub-1", Reason: "it was terminated"})
	if c := s.ToolCalls[0]; c.Status != wire.ToolCallFailed || !strings.Contains(c.Error, "it was terminated") {
		t.Fatalf("record: %+v", c)
	}
	s2, _ := delegating(t)
	s2.Apply(ChildStartFailed{ToolCallID: "c1", Reason: "workflow already started"})
	if c := s2.ToolCalls[0]; c.Status != wire.ToolCallFailed || !strings.Contains(c.Error, "could not start") {
		t.Fatalf("record: %+v", c)
	}
}

// child returns a sub-agent session in its first turn.
func child(t *testing.T, maxTurns int) *State {
	t.Helper()
	s := New("s-1.sub-1", opts())
	r := s.Apply(Start{InitialMessage: "label order 7", SubAgent: &wire.SubAgentStart{ParentSessionID: "s-1", ToolCallID: "c1", Name: "returns",
		Mode: wire.SubAgentModeWait, MaxTurns: maxTurns, Lineage: []string{"s-1"}, Budget: &wire.ParentBudget{Agent: "orders", Used: wire.Spend{CostMicros: 5}}}})
	if len(commandsOf[FailSession](r.Commands)) != 0 {
		t.Fatalf("start: %v", renderAll(r.Commands))
	}
	s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: userMsg("label order 7"), Attempt: 1})
	return s
}

func TestChildReportsToItsParentAndCloses(t *testing.T) {
	s := child(t, 0)
	if in := s.turnInput(); in.Spend.Parent == nil || in.Spend.Parent.Used.CostMicros != 5 || !slices.Equal(in.Streams, []string{"s-1"}) {
		t.Fatalf("turn input: %+v %v", in.Spend, in.Streams)
	}
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("r1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	reps := commandsOf[ReportToParent](r.Commands)
	if len(reps) != 1 || reps[0].ParentSessionID != "s-1" || reps[0].Report.Kind != wire.SubAgentInterruptRaised ||
		reps[0].Report.Interrupt.SessionID != "s-1.sub-1" || reps[0].Report.Interrupt.Arguments != `{"order_id":"7"}` {
		t.Fatalf("reports: %+v", reps)
	}
	r = s.Apply(ResolveInterrupt{InterruptID: "r1", Approved: true, NowMs: now})
	reps = commandsOf[ReportToParent](r.Commands)
	if len(reps) != 1 || reps[0].Report.Kind != wire.SubAgentInterruptResolved || reps[0].Report.InterruptID != "r1" {
		t.Fatalf("reports: %+v", reps)
	}
	out := "refunded"
	s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "r1", Outcome: ToolOutcome{Output: &out, Attempt: 1}, NowMs: now})
	r = s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("label sent"), NowMs: now})
	reps = commandsOf[ReportToParent](r.Commands)
	if len(reps) != 1 || reps[0].Report.Kind != wire.SubAgentTurnEnded || reps[0].Report.Outcome != wire.SubAgentCompleted || reps[0].Report.Answer != "label sent" ||
		reps[0].Report.Spend.InputTokens != 15 {
		t.Fatalf("reports: %+v", reps)
	}
	if !s.Closed || !s.Finished() {
		t.Fatal("a wait-mode child stays open after its answer")
	}
	if s.Snapshot().SubAgent == nil || s.Snapshot().SubAgent.ParentSessionID != "s-1" {
		t.Fatalf("snapshot: %+v", s.Snapshot().SubAgent)
	}
}

func TestParentCancelCancelsTheChildsTurn(t *testing.T) {
	s := child(t, 0)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("r1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	r := s.Apply(ParentControl{Control: wire.SubAgentControl{Action: wire.SubAgentCancelTurn}})
	if c := s.ToolCalls[0]; c.Status != wire.ToolCallRejected || c.CancellationReason != wire.CancellationParentCancelled {
		t.Fatalf("record: %+v (%v)", c, renderAll(r.Commands))
	}
	s.Apply(TurnFailureRecorded{TurnID: "turn-1", Attempt: 1})
	if s.Phase != phaseNone || !s.Closed {
		t.Fatalf("phase %q closed %v", s.Phase, s.Closed)
	}
}

func TestChildMaxTurns(t *testing.T) {
	s := child(t, 1)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("l1", "lookup", contract.EffectRead)), NowMs: now})
	out := "ok"
	r := s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "l1", Outcome: ToolOutcome{Output: &out, Attempt: 1}, NowMs: now})
	if len(commandsOf[RunModel](r.Commands)) != 0 || !strings.Contains(s.LastTurnError, "max_turns (1 model calls)") {
		t.Fatalf("commands %v, error %q", renderAll(r.Commands), s.LastTurnError)
	}
}

func TestSubAgentStartIsChecked(t *testing.T) {
	for _, tc := range []struct {
		sa   wire.SubAgentStart
		want string
	}{
		{wire.SubAgentStart{ToolCallID: "c", Mode: "wait", Lineage: []string{"p"}}, "required"},
		{wire.SubAgentStart{ParentSessionID: "p", ToolCallID: "c", Mode: "wait", Lineage: []string{"x"}}, "lineage"},
		{wire.SubAgentStart{ParentSessionID: "p", ToolCallID: "c", Mode: "later", Lineage: []string{"p"}}, "mode"},
		{wire.SubAgentStart{ParentSessionID: "p", ToolCallID: "c", Mode: "wait", Lineage: []string{"a", "b", "c", "p"}}, "deeper"},
	} {
		if got := checkSubAgentStart("s", &tc.sa); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.sa, got, tc.want)
		}
	}
	// A child at the deepest level offers no delegation.
	o := subAgentOpts()
	s := New("d", o)
	s.Apply(Start{SubAgent: &wire.SubAgentStart{ParentSessionID: "c", ToolCallID: "x", Mode: "wait", Lineage: []string{"a", "b", "c"}}})
	if s.subAgentTool("delegate_to_returns") != nil {
		t.Fatal("a child at depth 3 delegates")
	}
}

func backgroundOpts() Options {
	o := opts()
	o.SubAgents = []SubAgentOption{{Name: "returns", FlowType: "ReturnsFlow", Mode: wire.SubAgentModeBackground}}
	return o
}

// TestBackgroundDelegation: the call answers at once, the child outlives
// the turn, its answer is queued into the session as a message that
// starts a turn, and send/cancel reach it while it works.
func TestBackgroundDelegation(t *testing.T) {
	s := startedWith(t, backgroundOpts())
	tools := s.turnInput().HostTools
	for _, name := range []string{"delegate_to_returns", ToolSendToSubAgent, ToolCancelSubAgent} {
		if !slices.ContainsFunc(tools, func(d contract.ToolDefinition) bool { return d.Name == name }) {
			t.Fatalf("host tools lack %s", name)
		}
	}
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(delegateCall("c1", "label order 7")), NowMs: now})
	if len(commandsOf[StartChild](r.Commands)) != 1 || len(commandsOf[RunModel](r.Commands)) != 1 {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	if c := s.ToolCalls[0]; c.Status != wire.ToolCallSucceeded || c.Output != `{"status":"started","session_id":"s-1.sub-1"}` {
		t.Fatalf("record: %+v", c)
	}
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("started it"), NowMs: now})
	if !s.Idle() || len(s.Background) != 1 {
		t.Fatalf("idle %v background %+v", s.Idle(), s.Background)
	}
	// Its approval is the idle session's too.
	in := wire.Interrupt{InterruptID: "r1", ToolCallID: "r1", ToolName: "issue_label", Kind: wire.InterruptKindApproval, SessionID: "s-1.sub-1", Path: []string{"s-1.sub-1"}}
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentInterruptRaised, ChildSessionID: "s-1.sub-1", Interrupt: &in}})
	if got := s.Snapshot().PendingInterrupts; len(got) != 1 || !slices.Contains(s.ActiveStepTypes(), wire.StepAwaitToolApproval) {
		t.Fatalf("pending %+v steps %v", got, s.ActiveStepTypes())
	}
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentInterruptResolved, ChildSessionID: "s-1.sub-1", InterruptID: "r1", Interrupt: &wire.Interrupt{InterruptID: "r1", SessionID: "s-1.sub-1"}}})
	// The session's model sends it more, then it answers.
	s.Apply(SendUserMessage{Text: "tell it to hurry"})
	s.Apply(UserMessageBuilt{TurnID: "turn-2", Message: userMsg("tell it to hurry"), Attempt: 1})
	send := contract.DeferredToolCall{ToolCallID: "c2", ToolName: ToolSendToSubAgent, Arguments: `{"session_id":"s-1.sub-1","message":"hurry","steer":true}`}
	r = s.Apply(ModelStepDone{TurnID: "turn-2", Outcome: toolsRequested(send), NowMs: now})
	sig := commandsOf[SignalChild](r.Commands)
	if len(sig) != 1 || sig[0].Control != (wire.SubAgentControl{Action: wire.SubAgentSend, Text: "hurry", Steer: true}) || s.ToolCalls[0].Status != wire.ToolCallSucceeded {
		t.Fatalf("send: %v %+v", renderAll(r.Commands), s.ToolCalls)
	}
	bad := contract.DeferredToolCall{ToolCallID: "c3", ToolName: ToolCancelSubAgent, Arguments: `{"session_id":"nobody"}`}
	s.Apply(ModelStepDone{TurnID: "turn-2", Outcome: toolsRequested(bad), NowMs: now})
	if c := s.ToolCalls[1]; c.Status != wire.ToolCallFailed || !strings.Contains(c.Error, "working: s-1.sub-1") {
		t.Fatalf("cancel of an unknown child: %+v", c)
	}
	s.Apply(ModelStepDone{TurnID: "turn-2", Outcome: completed("ok"), NowMs: now})
	r = s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: "s-1.sub-1", Outcome: wire.SubAgentCompleted, Answer: "label RL-7", Spend: wire.Spend{ModelCalls: 2}}})
	if len(s.Background) != 0 || s.TurnCount != 3 || !strings.Contains(s.TurnText, "The sub-agent returns (session s-1.sub-1, started by call c1) finished. Its answer:\nlabel RL-7") {
		t.Fatalf("background %+v turn %d text %q (%v)", s.Background, s.TurnCount, s.TurnText, renderAll(r.Commands))
	}
	if s.SubAgentSpend.ModelCalls != 2 {
		t.Fatalf("spend %+v", s.SubAgentSpend)
	}
}

// TestBackgroundChildOnClose: closing the session closes its background
// children, and their late answers queue nothing.
func TestBackgroundChildOnClose(t *testing.T) {
	s := startedWith(t, backgroundOpts())
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(delegateCall("c1", "label")), NowMs: now})
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("ok"), NowMs: now})
	r := s.Apply(CloseSession{})
	if sig := commandsOf[SignalChild](r.Commands); len(sig) != 1 || sig[0].Control.Action != wire.SubAgentClose {
		t.Fatalf("close: %v", renderAll(r.Commands))
	}
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: "s-1.sub-1", Outcome: wire.SubAgentCancelled}})
	if len(s.Queued) != 0 || s.ActiveTurnID != "" || !s.Finished() {
		t.Fatalf("queued %+v turn %q", s.Queued, s.ActiveTurnID)
	}
}

// TestChildWhoseTaskIsRefusedAnswersWithTheReason: a task the child cannot
// take as a message (here a reference in a session without the store)
// fails the call with the reason instead of leaving it waiting.
func TestChildWhoseTaskIsRefusedAnswersWithTheReason(t *testing.T) {
	o := opts()
	o.Messages = MessageOptions{Store: true, WindowSize: 8, ChunkSize: 4, ChunkMaxBytes: 1 << 20}
	s := New("s-1.sub-1", o)
	r := s.Apply(Start{InitialMessage: strings.Repeat("x", MaxInlineMessageBytes+1), SubAgent: &wire.SubAgentStart{ParentSessionID: "s-1", ToolCallID: "c1",
		Mode: wire.SubAgentModeWait, Lineage: []string{"s-1"}}})
	reps := commandsOf[ReportToParent](r.Commands)
	if len(reps) != 1 || reps[0].Report.Outcome != wire.SubAgentFailed || !strings.Contains(reps[0].Report.Error, "the initial message was not taken") || !s.Closed {
		t.Fatalf("reports %+v closed %v", reps, s.Closed)
	}
	if again := s.Apply(CloseSession{}); len(commandsOf[ReportToParent](again.Commands)) != 0 {
		t.Fatal("reported twice")
	}
}

// TestDelegationsDoNotGrowTheState: a session that delegated 300 times
// (waiting children answering, a third of them cancelled) keeps a state
// the size it had after 150, once the 16 settled children it remembers
// are full: a child's transcript and answers stay out of it.
func TestDelegationsDoNotGrowTheState(t *testing.T) {
	s := New("s-1", subAgentOpts())
	s.Apply(Start{})
	size := map[int]int{}
	for i := 1; i <= 300; i++ {
		turn := fmt.Sprintf("turn-%d", i)
		s.Apply(SendUserMessage{Text: "delegate"})
		s.Apply(UserMessageBuilt{TurnID: turn, Message: userMsg("delegate"), Attempt: 1})
		r := s.Apply(ModelStepDone{TurnID: turn, Outcome: toolsRequested(delegateCall(fmt.Sprintf("c%d", i), "label order 7")), NowMs: now})
		child := commandsOf[StartChild](r.Commands)[0].WorkflowID
		if i%3 == 0 {
			s.Apply(CancelTurn{TurnID: turn})
			s.Apply(TurnFailureRecorded{TurnID: turn, Attempt: 1})
			s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: child, Outcome: wire.SubAgentCancelled, Spend: wire.Spend{ModelCalls: 1}}})
		} else {
			s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: child, Outcome: wire.SubAgentCompleted, Answer: strings.Repeat("a", 1500), Spend: wire.Spend{ModelCalls: 2}}})
			s.Apply(ModelStepDone{TurnID: turn, Outcome: completed("ok"), NowMs: now})
		}
		if !s.Idle() {
			t.Fatalf("turn %d did not end: phase %q", i, s.Phase)
		}
		if i == 150 || i == 300 {
			st := *s
			st.Messages = nil // the transcript itself, kept in the store in real sessions
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			size[i] = len(b)
		}
	}
	if size[300] > size[150]+64 {
		t.Errorf("the state grew from %d bytes after 150 delegations to %d after 300", size[150], size[300])
	}
	if s.SubAgentSpend.ModelCalls != 200*2+100 {
		t.Errorf("sub-agent spend %+v", s.SubAgentSpend)
	}
}

// TestBackgroundAnswerIsCutAtACharacter: a long answer queued inline (a
// session without the store) is cut at a character, never inside one.
func TestBackgroundAnswerIsCutAtACharacter(t *testing.T) {
	s := startedWith(t, backgroundOpts())
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(delegateCall("c1", "label")), NowMs: now})
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("ok"), NowMs: now})
	answer := "x" + strings.Repeat("é", MaxUserMessageBytes) // odd: a byte cut would split an é
	s.Apply(SubAgentReported{Report: wire.SubAgentReport{Kind: wire.SubAgentTurnEnded, ChildSessionID: "s-1.sub-1", Outcome: wire.SubAgentCompleted, Answer: answer}})
	if !utf8.ValidString(s.TurnText) || len(s.TurnText) > s.maxInlineMessage() || !strings.HasPrefix(s.TurnText, SubAgentNotePrefix) {
		t.Fatalf("the queued note: %d bytes, valid UTF-8 %v", len(s.TurnText), utf8.ValidString(s.TurnText))
	}
}
