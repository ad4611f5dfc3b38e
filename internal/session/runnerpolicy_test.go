package session

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestAuthorizeRunnerPolicy(t *testing.T) {
	set := contract.PolicySet{
		DefaultEffect: contract.EffectUnclassified,
		Policies: map[string]contract.ToolPolicy{
			"refund":      {Effect: contract.EffectNonIdempotentWrite},
			"lookup":      {Effect: contract.EffectRead},
			"write_quiet": {Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(false)},
		},
	}
	claim := func(e contract.Effect, approval *bool) contract.ToolPolicy {
		return contract.ToolPolicy{Effect: e, RequiresApproval: approval}
	}
	tests := []struct {
		name         string
		tool         string
		claim        contract.ToolPolicy
		trusted      bool
		wantEffect   contract.Effect
		wantApproval bool
	}{
		{"the config's entry wins over a laxer claim", "refund", claim(contract.EffectRead, ptr(false)), true, contract.EffectNonIdempotentWrite, true},
		{"the config's entry wins over a stricter claim", "lookup", claim(contract.EffectNonIdempotentWrite, ptr(true)), true, contract.EffectRead, false},
		{"the config's entry may drop an approval", "write_quiet", claim(contract.EffectUnclassified, nil), true, contract.EffectNonIdempotentWrite, false},
		{"where the config is silent the runner's effect applies", "lookup_order", claim(contract.EffectRead, nil), true, contract.EffectRead, false},
		{"the runner's effect brings its default approval", "cancel_order", claim(contract.EffectNonIdempotentWrite, nil), true, contract.EffectNonIdempotentWrite, true},
		{"the runner's approval applies", "cancel_order", claim(contract.EffectNonIdempotentWrite, ptr(false)), true, contract.EffectNonIdempotentWrite, false},
		{"an approval without an effect keeps the default effect", "x", claim("", ptr(false)), true, contract.EffectUnclassified, false},
		{"no claim: the default effect", "x", contract.ToolPolicy{}, true, contract.EffectUnclassified, true},
		{"untrusted: the default effect, not the runner's read", "lookup_order", claim(contract.EffectRead, ptr(false)), false, contract.EffectUnclassified, true},
		{"untrusted: a claim may still add an approval", "lookup", claim(contract.EffectRead, ptr(true)), false, contract.EffectRead, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuthorizeRunnerPolicy(set, tt.tool, tt.claim, tt.trusted)
			if got.Effect != tt.wantEffect || got.ApprovalRequired() != tt.wantApproval {
				t.Errorf("AuthorizeRunnerPolicy = %s approval %v, want %s approval %v", got.Effect, got.ApprovalRequired(), tt.wantEffect, tt.wantApproval)
			}
		})
	}
}

// TestRunnerPoliciesApplyWhereTheConfigIsSilent: from RunnerPoliciesVersion
// a runner's "read" for a tool the config does not name runs as a read;
// sessions of older versions, and untrusted runners, run it under the
// default effect (unclassified: an approval).
func TestRunnerPoliciesApplyWhereTheConfigIsSilent(t *testing.T) {
	lookup := call("c1", "lookup_order", contract.EffectRead)
	tests := []struct {
		name      string
		version   int
		untrusted bool
		want      []string
	}{
		{"current version", RunnerPoliciesVersion, false, []string{"CallTool turn-1/c1 effect=read attempts=3 key=s-1/turn-1/c1"}},
		{"untrusted runner", RunnerPoliciesVersion, true, []string{"start_timer c1 1m0s"}},
		{"a version-4 session replays as it ran", RetentionVersion, false, []string{"start_timer c1 1m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Version, o.RunnerPoliciesUntrusted = tt.version, tt.untrusted
			s := startedWith(t, o)
			cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(lookup), NowMs: now}).Commands)
			if diff := cmp.Diff(tt.want, renderAll(cmds)); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnUnknownToolFailsWithoutApproval: a call the worker found to name
// no tool of any source fails at once, asks no one, and the turn goes on
// to its next model call with the other call running.
func TestAnUnknownToolFailsWithoutApproval(t *testing.T) {
	o := opts()
	o.Version = RunnerPoliciesVersion
	s := startedWith(t, o)
	out := toolsRequested(call("c1", "ghost", contract.EffectUnclassified), call("c2", "lookup", contract.EffectRead))
	out.UnknownCalls = []string{"c1"}
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: out, NowMs: now})
	if diff := cmp.Diff([]string{"CallTool turn-1/c2 effect=read attempts=3 key=s-1/turn-1/c2"}, renderAll(nonEmit(r.Commands))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	rec := s.ToolCalls[0]
	if rec.Status != wire.ToolCallFailed || rec.Error != "unknown tool ghost" || rec.RequiresApproval || rec.Effect != wire.EffectUnclassified {
		t.Errorf("record = %+v, want failed with \"unknown tool ghost\", unclassified, no approval", rec)
	}
	if len(s.Interrupts) != 0 {
		t.Errorf("interrupts = %+v, want none", s.Interrupts)
	}
	if diff := cmp.Diff([]string{"usage_recorded", "tool_call_deferred", "tool_call_finished", "tool_call_deferred"}, eventTypes(r.Commands)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Alone, the unknown call resumes the turn at once.
	s = startedWith(t, o)
	out = toolsRequested(call("c1", "ghost", contract.EffectUnclassified))
	out.UnknownCalls = []string{"c1"}
	cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: out, NowMs: now}).Commands)
	if diff := cmp.Diff([]string{`run_model turn-1 messages=[1] run_state={"calls":1} tool_calls=[c1:failed] attempts=3`}, renderAll(cmds)); diff != "" {
		t.Errorf("the next RunModel (-want +got):\n%s", diff)
	}

	// A version-4 session ignores the field: the call asks for approval.
	o.Version = RetentionVersion
	s = startedWith(t, o)
	out = toolsRequested(call("c1", "ghost", contract.EffectUnclassified))
	out.UnknownCalls = []string{"c1"}
	if diff := cmp.Diff([]string{"start_timer c1 1m0s"}, renderAll(nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: out, NowMs: now}).Commands))); diff != "" {
		t.Errorf("version 4 (-want +got):\n%s", diff)
	}
}

// TestARerunThatNeverStartedAfterAQuestionKeepsItsEffectsStatus: the tool
// ran up to its question, so a rerun (with the answer) that never reached
// the tool is not "safe to call again": a write is outcome_unknown, a read
// failed. A version-4 session replays as it ran.
func TestARerunThatNeverStartedAfterAQuestionKeepsItsEffectsStatus(t *testing.T) {
	tests := []struct {
		name    string
		version int
		effect  contract.Effect
		asked   bool
		want    wire.ToolCallStatus
		wantErr string
	}{
		{"write asked", AskedRerunVersion, contract.EffectNonIdempotentWrite, true, wire.ToolCallOutcomeUnknown, "boom"},
		{"read asked", AskedRerunVersion, contract.EffectRead, true, wire.ToolCallFailed, "boom"},
		{"write never asked", AskedRerunVersion, contract.EffectNonIdempotentWrite, false, wire.ToolCallFailed, ToolCallNotRunErrorPrefix + ": boom"},
		{"write asked, version 4", RetentionVersion, contract.EffectNonIdempotentWrite, true, wire.ToolCallFailed, ToolCallNotRunErrorPrefix + ": boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Version = tt.version
			o.Policies.Policies = map[string]contract.ToolPolicy{"tool": {Effect: tt.effect, RequiresApproval: ptr(false)}}
			s := startedWith(t, o)
			s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "tool", tt.effect)), NowMs: now})
			if tt.asked {
				s.ToolCalls[0].InputAnswers = []string{"yes"}
			}
			s.Apply(ToolStepFailed{TurnID: "turn-1", ToolCallID: "c1", Detail: "boom", NotStarted: true, Attempt: 1})
			if rec := s.ToolCalls[0]; rec.Status != tt.want || rec.Error != tt.wantErr {
				t.Errorf("record = %s %q, want %s %q", rec.Status, rec.Error, tt.want, tt.wantErr)
			}
		})
	}
}

// TestBuiltInResultsKeepTheReferencesKeyOrder from version 5; older
// sessions replay with the sorted keys they ran with.
func TestBuiltInResultsKeepTheReferencesKeyOrder(t *testing.T) {
	for _, tt := range []struct {
		version int
		want    string
	}{
		{BuiltInTextsVersion, `{"status":"completed","waited_seconds":4,"reason":"<a & b>"}`},
		{RetentionVersion, `{"reason":"<a & b>","status":"completed","waited_seconds":4}`},
	} {
		s := &State{Options: Options{Version: tt.version}}
		if got := s.builtInResult("status", "completed", "waited_seconds", 4, "reason", "<a & b>"); got != tt.want {
			t.Errorf("version %d: %s, want %s", tt.version, got, tt.want)
		}
	}
}
