package sessionflow

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestWorkflowMovesToANewVersionAtTheTurnBoundary: with the engine saying
// the deployment's current version changed, a turn that runs finishes in
// this run, and the session continues as new (auto-upgrade) once it is
// idle, carrying a message sent meanwhile, which no turn of this run
// started.
func TestWorkflowMovesToANewVersionAtTheTurnBoundary(t *testing.T) {
	env, f := newEnv(t, runtime(0))
	oks := make([]bool, 2)
	errs := make([]error, 2)
	env.RegisterDelayedCallback(func() {
		env.SetTargetWorkerDeploymentVersionChanged(true)
		update(env, wire.UpdateSendUserMessage, wire.SendUserMessageRequest{Text: "after the deploy"}, &oks[0], &errs[0])
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &oks[1], &errs[1])
	}, time.Hour+time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	for i := range oks {
		if !oks[i] || errs[i] != nil {
			t.Errorf("update %d = %v, %v", i, oks[i], errs[i])
		}
	}
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Errorf("continued as new with versioning behavior %v, want auto-upgrade", can.InitialVersioningBehavior)
	}
	var next WorkflowInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.Continued
	if st == nil || st.TurnCount != 1 || !st.Idle() || st.QueuedCount() != 1 || st.Queued[0].Text != "after the deploy" {
		t.Fatalf("carried state = %+v; want turn-1 done and the message queued", st)
	}
	if f.toolCalls.Load() != 1 || f.modelCalls.Load() != 2 {
		t.Errorf("tool calls %d, model calls %d; want turn-1's 1 and 2", f.toolCalls.Load(), f.modelCalls.Load())
	}
}
