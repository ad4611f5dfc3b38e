package sessionflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/wireconv"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// fakeSteps are the activities of a workflow test: a model that asks for
// refund once per turn and then answers with the refund's record.
type fakeSteps struct {
	modelCalls atomic.Int32
	toolCalls  atomic.Int32
	toolErr    error
}

func (f *fakeSteps) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(ctx context.Context, in session.BuildUserMessageInput) (session.BuildUserMessageOutput, error) {
		return session.BuildUserMessageOutput{Message: contract.FrameworkMessage{Role: contract.RoleUser, Text: in.Text}}, nil
	}, activity.RegisterOptions{Name: wire.StepBuildUserMessage})
	env.RegisterActivityWithOptions(func(ctx context.Context, in session.TurnInput) (session.ModelOutcome, error) {
		f.modelCalls.Add(1)
		if in.RunState == "" {
			return session.ModelOutcome{ToolCallsRequested: &contract.ToolCallsRequested{
				RunState:  "r",
				ToolCalls: []contract.DeferredToolCall{{ToolCallID: "c1", ToolName: "refund", Arguments: "{}", Policy: contract.ToolPolicy{Effect: contract.EffectNonIdempotentWrite}}},
			}}, nil
		}
		rec := in.ToolCalls[0]
		return session.ModelOutcome{TurnCompleted: &contract.TurnCompleted{NewMessages: []contract.FrameworkMessage{
			{Role: contract.RoleAssistant, Text: string(rec.Status) + ": " + contract.DescribeToolCallOutcome(wireconv.RunnerToolCall(rec))},
		}}}, nil
	}, activity.RegisterOptions{Name: wire.StepRunModel})
	tool := func(ctx context.Context, in session.ToolInput) (session.ToolOutcome, error) {
		f.toolCalls.Add(1)
		if f.toolErr != nil {
			return session.ToolOutcome{}, f.toolErr
		}
		out := "refunded " + in.IdempotencyKey
		return session.ToolOutcome{Output: &out}, nil
	}
	env.RegisterActivityWithOptions(tool, activity.RegisterOptions{Name: wire.StepCallTool})
	env.RegisterActivityWithOptions(tool, activity.RegisterOptions{Name: wire.StepCallSingleAttemptTool})
	env.RegisterActivityWithOptions(func(ctx context.Context, in session.TurnFailureInput) (session.TurnFailureOutput, error) {
		return session.TurnFailureOutput{Messages: []contract.FrameworkMessage{{Role: contract.RoleUser, Text: in.Note}}}, nil
	}, activity.RegisterOptions{Name: wire.StepRecordTurnFailure})
}

func newEnv(t *testing.T, rt Runtime) (*testsuite.TestWorkflowEnvironment, *fakeSteps) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quietLogger)
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Workflow(rt), workflow.RegisterOptions{Name: "TestAgent"})
	f := &fakeSteps{}
	f.register(env)
	return env, f
}

func runtime(deadline time.Duration) Runtime {
	return Runtime{Options: session.Options{
		Agent:               "a",
		Policies:            contract.PolicySet{DefaultEffect: contract.EffectUnclassified},
		InterruptDeadlineMs: deadline.Milliseconds(),
		RunModel:            session.DefaultRunModelLimits,
		Tool:                session.DefaultToolLimits,
	}}
}

func snapshot(t *testing.T, env *testsuite.TestWorkflowEnvironment) wire.Snapshot {
	t.Helper()
	v, err := env.QueryWorkflow(wire.QueryAgentSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	var s wire.Snapshot
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func update(env *testsuite.TestWorkflowEnvironment, name string, arg any, result *bool, err *error) {
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject: func(e error) { *err = e },
		OnComplete: func(v any, e error) {
			if e != nil {
				*err = e
				return
			}
			*result, _ = v.(bool)
		},
	}, arg)
}

func TestWorkflowApprovalDeadlinePassesAfterSevenDays(t *testing.T) {
	env, f := newEnv(t, runtime(7*24*time.Hour))
	lateOK, lateErr := true, error(nil)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		if len(s.PendingInterrupts) != 1 || s.State.Status != wire.StatusRunningTools {
			t.Errorf("after 1h: %+v", s)
		}
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		if s.State.Status != wire.StatusWaitingForUserMessage || len(s.PendingInterrupts) != 0 {
			t.Fatalf("after 8 days: %+v", s.State)
		}
		want := "rejected: " + session.ApprovalDeadlinePassed
		if got := s.Messages[len(s.Messages)-1].Text; got != want {
			t.Errorf("answer = %q, want %q", got, want)
		}
		// An approval after the deadline is refused.
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &lateOK, &lateErr)
	}, 8*24*time.Hour)
	env.RegisterDelayedCallback(env.CancelWorkflow, 8*24*time.Hour+time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	if lateOK || lateErr != nil {
		t.Errorf("late approval = %v, %v; want false", lateOK, lateErr)
	}
	if f.toolCalls.Load() != 0 {
		t.Errorf("tool ran %d times after its deadline passed", f.toolCalls.Load())
	}
}

func TestWorkflowApprovalRunsTheTool(t *testing.T) {
	env, f := newEnv(t, runtime(0))
	var ok bool
	var err error
	env.RegisterDelayedCallback(func() {
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &ok, &err)
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		if got := s.Messages[len(s.Messages)-1].Text; got != "succeeded: refunded default-test-workflow-id/turn-1/c1" {
			t.Errorf("answer = %q", got)
		}
		env.CancelWorkflow()
	}, 2*time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	if !ok || err != nil {
		t.Fatalf("approve = %v, %v", ok, err)
	}
	if f.toolCalls.Load() != 1 || f.modelCalls.Load() != 2 {
		t.Errorf("tool calls %d, model calls %d; want 1 and 2", f.toolCalls.Load(), f.modelCalls.Load())
	}
}

// TestWorkflowUpdatesAnswerFalseWhereTheSpecDoes: blank text, a message
// over the limit, a blank or unknown interrupt ID and a rejection message
// over the limit are answered false (the spec's RPCs return False), not
// refused with an error.
func TestWorkflowUpdatesAnswerFalseWhereTheSpecDoes(t *testing.T) {
	env, _ := newEnv(t, runtime(0))
	type call struct {
		name string
		req  any
		ok   bool
		err  error
	}
	calls := []*call{
		{name: wire.UpdateSendUserMessage, req: wire.SendUserMessageRequest{Text: strings.Repeat("x", session.MaxUserMessageBytes+1)}},
		{name: wire.UpdateSendUserMessage, req: wire.SendUserMessageRequest{Text: " \n"}},
		{name: wire.UpdateResolveInterrupt, req: wire.ResolveInterruptRequest{}},
		{name: wire.UpdateResolveInterrupt, req: wire.ResolveInterruptRequest{InterruptID: "nope", Approved: true}},
		{name: wire.UpdateResolveInterrupt, req: wire.ResolveInterruptRequest{InterruptID: "nope", RejectionMessage: strings.Repeat("x", session.MaxUserMessageBytes+1)}},
	}
	env.RegisterDelayedCallback(func() {
		for _, c := range calls {
			c.ok = true
			update(env, c.name, c.req, &c.ok, &c.err)
		}
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, 2*time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{})
	for i, c := range calls {
		if c.ok || c.err != nil {
			t.Errorf("call %d (%s) = %v, %v; want false, nil", i, c.name, c.ok, c.err)
		}
	}
}

func TestWorkflowToolCrashRecordsOutcomeUnknown(t *testing.T) {
	env, f := newEnv(t, runtime(0))
	f.toolErr = errors.New("connection reset")
	env.RegisterDelayedCallback(func() {
		var ok bool
		var err error
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &ok, &err)
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		want := "outcome_unknown: " + contract.OutcomeUnknownToolResult
		if got := s.Messages[len(s.Messages)-1].Text; got != want {
			t.Errorf("answer = %q, want %q", got, want)
		}
		env.CancelWorkflow()
	}, 2*time.Minute)
	// The failure carries no "not started" marker, so the write may have run.
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
}

func TestWorkflowToolNotStartedRecordsFailed(t *testing.T) {
	env, f := newEnv(t, runtime(0))
	f.toolErr = temporal.NewApplicationError("plugin not reachable", wire.ToolNotStartedErrorType)
	env.RegisterDelayedCallback(func() {
		var ok bool
		var err error
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &ok, &err)
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		got := s.Messages[len(s.Messages)-1].Text
		if !strings.HasPrefix(got, "failed: The tool call failed: "+session.ToolCallNotRunErrorPrefix+": ") {
			t.Errorf("answer = %q", got)
		}
		env.CancelWorkflow()
	}, 2*time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
}

func TestWorkflowContinuesAsNewAtATurnBoundary(t *testing.T) {
	rt := runtime(0)
	rt.MaxUpdatesPerRun = 4
	env, _ := newEnv(t, rt)
	// Two turns, each with a message and an approval: four updates.
	oks := make([]bool, 4)
	errs := make([]error, 4)
	for i := 0; i < 2; i++ {
		at := time.Duration(i+1) * time.Hour
		env.RegisterDelayedCallback(func() {
			update(env, wire.UpdateSendUserMessage, wire.SendUserMessageRequest{Text: fmt.Sprintf("refund %d", i)}, &oks[2*i], &errs[2*i])
		}, at)
		env.RegisterDelayedCallback(func() {
			update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &oks[2*i+1], &errs[2*i+1])
		}, at+time.Minute)
	}
	env.ExecuteWorkflow("TestAgent", WorkflowInput{})
	for i := range oks {
		if !oks[i] || errs[i] != nil {
			t.Errorf("update %d = %v, %v", i, oks[i], errs[i])
		}
	}
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next WorkflowInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.Continued
	if st == nil || st.TurnCount != 2 || len(st.Messages) != 4 || !st.Idle() || st.NextSequence != 5 {
		t.Fatalf("carried state = %+v", st)
	}
}

// storingSteps wraps the fakes for a session with the message store: each
// storing Step reports the roll it was asked for and its messages as
// previews, as the real Steps do.
func registerStoringSteps(env *testsuite.TestWorkflowEnvironment, f *fakeSteps, onToolsRequested func()) {
	stored := func(w *session.StoreWork, msgs ...contract.FrameworkMessage) *session.StoreResult {
		r := &session.StoreResult{Chunks: w.Roll}
		for i, m := range msgs {
			r.Messages = append(r.Messages, session.Entry{Message: contract.Message{Sequence: w.NextSequence + int64(i), Role: m.Role, Text: m.Text}, Bytes: int64(len(m.Text) + 20)})
		}
		return r
	}
	env.RegisterActivityWithOptions(func(ctx context.Context, in session.BuildUserMessageInput) (session.BuildUserMessageOutput, error) {
		return session.BuildUserMessageOutput{Stored: stored(in.Store, contract.FrameworkMessage{Role: contract.RoleUser, Text: in.Text})}, nil
	}, activity.RegisterOptions{Name: wire.StepBuildUserMessage})
	env.RegisterActivityWithOptions(func(ctx context.Context, in session.TurnInput) (session.ModelOutcome, error) {
		f.modelCalls.Add(1)
		if in.RunState == "" {
			if onToolsRequested != nil {
				onToolsRequested()
			}
			return session.ModelOutcome{Stored: stored(in.Store), ToolCallsRequested: &contract.ToolCallsRequested{
				RunState:  "r",
				ToolCalls: []contract.DeferredToolCall{{ToolCallID: "c1", ToolName: "refund", Arguments: "{}"}},
			}}, nil
		}
		rec := in.ToolCalls[0]
		return session.ModelOutcome{TurnCompleted: &contract.TurnCompleted{}, Stored: stored(in.Store,
			contract.FrameworkMessage{Role: contract.RoleAssistant, Text: string(rec.Status) + ": " + contract.DescribeToolCallOutcome(wireconv.RunnerToolCall(rec))})}, nil
	}, activity.RegisterOptions{Name: wire.StepRunModel})
	tool := func(ctx context.Context, in session.ToolInput) (session.ToolOutcome, error) {
		f.toolCalls.Add(1)
		out := "refunded " + in.IdempotencyKey
		return session.ToolOutcome{Output: &out}, nil
	}
	env.RegisterActivityWithOptions(tool, activity.RegisterOptions{Name: wire.StepCallTool})
	env.RegisterActivityWithOptions(tool, activity.RegisterOptions{Name: wire.StepCallSingleAttemptTool})
}

// TestWorkflowContinuesAsNewInsideATurn: a session with the store whose
// history passed the limit continues as new while an approval waits, with
// no Step running; the next run arms the deadline again, takes the
// approval, runs the tool once, and ends the turn.
func TestWorkflowContinuesAsNewInsideATurn(t *testing.T) {
	rt := runtime(time.Hour)
	rt.Options.Messages = session.MessageOptions{Store: true, WindowSize: 64, ChunkSize: 32, ChunkMaxBytes: 1 << 20}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quietLogger)
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Workflow(rt), workflow.RegisterOptions{Name: "TestAgent"})
	f := &fakeSteps{}
	// The history passes the limit while the model asks for the refund.
	registerStoringSteps(env, f, func() { env.SetCurrentHistorySize(MidTurnHistoryBytes + 1) })
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new inside the turn", env.GetWorkflowError())
	}
	var next WorkflowInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.Continued
	if st == nil || st.Status != wire.StatusRunningTools || len(st.Interrupts) != 1 || st.Interrupts[0].DeadlineUnixMs == 0 {
		t.Fatalf("carried state = %+v, want the turn waiting for the approval", st)
	}

	// The next run, until the turn ends.
	env = suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Workflow(rt), workflow.RegisterOptions{Name: "TestAgent"})
	registerStoringSteps(env, f, nil)
	var ok bool
	var err error
	env.RegisterDelayedCallback(func() {
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &ok, &err)
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		if s.State.Status != wire.StatusWaitingForUserMessage || len(s.Messages) != 2 {
			t.Errorf("after the approval: %+v, %d messages", s.State, len(s.Messages))
		} else if got := s.Messages[1].Text; !strings.HasPrefix(got, "succeeded: refunded") {
			t.Errorf("answer = %q", got)
		}
		env.CancelWorkflow()
	}, 2*time.Minute)
	env.ExecuteWorkflow("TestAgent", next)
	if !ok || err != nil {
		t.Fatalf("approve in the new run = %v, %v", ok, err)
	}
	if f.toolCalls.Load() != 1 {
		t.Errorf("the tool ran %d times, want 1", f.toolCalls.Load())
	}
}
