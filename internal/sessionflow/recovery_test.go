package sessionflow

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestWorkflowRecoveryBudgetReachesTheSteps: the no-progress bound is the
// schedule-to-close timeout the engine gets for each Step (the test
// environment does not report retry policies; TestTurnPastItsRecoveryBudget
// in internal/e2e sees the attempts), and an approval that waits an hour, past a 10 s
// no_progress_timeout, does not count: the turn completes.
func TestWorkflowRecoveryBudgetReachesTheSteps(t *testing.T) {
	rt := runtime(0)
	rt.Options.Recovery = &session.RecoveryPolicy{MaxAttempts: 1, NoProgressTimeoutMs: 10_000}
	env, f := newEnv(t, rt)
	steps := map[string]time.Duration{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		steps[info.ActivityType.Name] = info.ScheduleToCloseTimeout
	})
	var ok bool
	var err error
	env.RegisterDelayedCallback(func() {
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &ok, &err)
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		if s.State.LastTurnError != "" || s.Messages[len(s.Messages)-1].Text != "succeeded: refunded default-test-workflow-id/turn-1/c1" {
			t.Errorf("after the approval: last_turn_error %q, answer %q", s.State.LastTurnError, s.Messages[len(s.Messages)-1].Text)
		}
		env.CancelWorkflow()
	}, time.Hour+time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	if !ok || err != nil || f.toolCalls.Load() != 1 {
		t.Fatalf("approve = %v, %v; tool calls %d", ok, err, f.toolCalls.Load())
	}
	for _, step := range []string{wire.StepRunModel, wire.StepCallSingleAttemptTool} {
		if got := steps[step]; got != 10*time.Second {
			t.Errorf("%s started with schedule-to-close %v; want 10s", step, got)
		}
	}
}
