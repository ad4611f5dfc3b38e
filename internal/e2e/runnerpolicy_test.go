package e2e

import (
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestRunnerPoliciesApplyWhereTheConfigIsSilent (issue 28, item 4): the
// testrunner's runner_read has the runner's effect read and no tool policy
// in the config: it runs at once, without approval. A call of a name no
// source offers fails as "unknown tool ghost", asking no one. With the
// plugin declared trusts_tool_policies: false, runner_read takes the
// agent's default_tool_effect (unclassified) and waits for approval. With
// -update-histories it records runner_policies_turns.json.
func TestRunnerPoliciesApplyWhereTheConfigIsSilent(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gate := s.Gate("tool-a")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	id := start(t, s, "call:runner_read:a call:ghost:b")
	reached(t, gate) // runner_read runs: no approval held it
	running := s.WaitForSnapshot("both records", id, func(s wire.Snapshot) bool {
		return findCall(s, "runner_read") != nil && findCall(s, "ghost") != nil
	})
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: runner_read=succeeded:read a; ghost=failed:The tool call failed: unknown tool ghost")
	read, ghost := findCall(running, "runner_read"), findCall(running, "ghost")
	if read == nil || read.Effect != wire.EffectRead || read.RequiresApproval {
		t.Errorf("runner_read record = %+v, want read without approval", read)
	}
	if ghost == nil || ghost.Status != wire.ToolCallFailed || ghost.Error != "unknown tool ghost" || ghost.RequiresApproval || ghost.Effect != wire.EffectUnclassified {
		t.Errorf("ghost record = %+v, want failed as unknown, unclassified, no approval", ghost)
	}
	if *updateHistories {
		recordHistory(t, s, id, "runner_policies_turns.json")
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCallSingleAttemptTool) + countSteps(h, "completed", wire.StepCallTool); n != 1 {
		t.Errorf("%d tool Steps ran, want 1 (runner_read; ghost never reaches a source)", n)
	}
}

func TestUntrustedRunnerPoliciesLeaveTheToolToTheConfig(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    env: [DEX_TEST_SECRET]\n", "    env: [DEX_TEST_SECRET]\n    trusts_tool_policies: false\n", 1)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "call:runner_read:a call:read_gate:b")
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if in := snap.PendingInterrupts[0]; in.ToolName != "runner_read" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v, want runner_read's approval", in)
	}
	if c := findCall(snap, "runner_read"); c == nil || c.Effect != wire.EffectUnclassified {
		t.Errorf("runner_read record = %+v, want unclassified (default_tool_effect)", c)
	}
	if c := findCall(snap, "read_gate"); c == nil || c.Effect != wire.EffectRead || c.RequiresApproval {
		t.Errorf("read_gate record = %+v, want read without approval (its tool_policies entry)", c)
	}
}

// TestARunnerToolNamedAsABuiltInFailsTheTurn (issue 28, item 5): before any
// model request, with the reference's text.
func TestARunnerToolNamedAsABuiltInFailsTheTurn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    built_in_tools: [ask_user]\n    run_model_limit:", 1)
	cfg = strings.Replace(cfg, `runner_config: {state_dir: "{{DIR}}"}`, `runner_config: {state_dir: "{{DIR}}", extra_tool: ask_user}`, 1)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "hello")
	snap := s.WaitForSnapshot("the failed turn", id, func(s wire.Snapshot) bool { return s.State.LastTurnError != "" })
	if !strings.Contains(snap.State.LastTurnError, "tool ask_user uses the name of an enabled built-in tool") {
		t.Errorf("last_turn_error = %q", snap.State.LastTurnError)
	}
	if n := s.Log().Count("model", "test"); n != 0 {
		t.Errorf("the model was called %d times, want 0", n)
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "failed", wire.StepRunModel); n != 1 {
		t.Errorf("RunModel failed %d times, want once: the failure is permanent", n)
	}
}
