package session

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// hostOpts are the options of a session that runs MCP tools itself.
func hostOpts() Options {
	o := opts()
	o.Version = CurrentVersion
	o.Policies.Policies["files__delete"] = contract.ToolPolicy{Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(false)}
	return o
}

func hostCalls(out ModelOutcome, calls ...HostCall) ModelOutcome {
	out.HostCalls = calls
	return out
}

// TestHostCallsRouteToMCPWithTheHostsEffect: the RunModel Step's decision
// routes a call to its MCP server with the effect of the tool's
// annotations (approval by that effect's default); a tool policy naming
// the tool wins over the annotations; a tool without annotations takes
// the default (unclassified, with approval); the runner's claim may only
// make a call stricter.
func TestHostCallsRouteToMCPWithTheHostsEffect(t *testing.T) {
	s := startedWith(t, hostOpts())
	strict := call("c4", "files__stat", contract.EffectNonIdempotentWrite)
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", NowMs: now, Outcome: hostCalls(toolsRequested(
		call("c1", "files__read", ""),
		call("c2", "files__delete", ""),
		call("c3", "files__write", contract.EffectRead),
		strict,
		call("c5", "lookup", contract.EffectRead),
	),
		HostCall{ToolCallID: "c1", Source: "mcp:files/read", Effect: contract.EffectRead},
		HostCall{ToolCallID: "c2", Source: "mcp:files/delete", Effect: contract.EffectRead},
		HostCall{ToolCallID: "c3", Source: "mcp:files/write"},
		HostCall{ToolCallID: "c4", Source: "mcp:files/stat", Effect: contract.EffectRead},
	)}).Commands
	want := []string{
		"CallTool turn-1/c1 effect=read attempts=3 key=s-1/turn-1/c1 host_source=mcp:files/read",
		"CallSingleAttemptTool turn-1/c2 effect=non_idempotent_write attempts=1 key=s-1/turn-1/c2 host_source=mcp:files/delete",
		"start_timer c3 1m0s",
		"start_timer c4 1m0s",
		"CallTool turn-1/c5 effect=read attempts=3 key=s-1/turn-1/c5",
	}
	if diff := cmp.Diff(want, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if rec := s.ToolCalls[2]; rec.Effect != wire.EffectUnclassified || !rec.RequiresApproval || rec.ToolSourceReference != "mcp:files/write" {
		t.Errorf("a tool without annotations: %+v", rec)
	}
	if rec := s.ToolCalls[3]; rec.Effect != wire.EffectNonIdempotentWrite || !rec.RequiresApproval {
		t.Errorf("the runner's stricter claim: %+v", rec)
	}
	// The approved write still goes to its MCP server.
	cmds = s.Apply(ResolveInterrupt{InterruptID: "c3", Approved: true}).Commands
	if diff := cmp.Diff([]string{"cancel_timer c3", "CallSingleAttemptTool turn-1/c3 effect=unclassified attempts=1 key=s-1/turn-1/c3 host_source=mcp:files/write"}, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("after the approval (-want +got):\n%s", diff)
	}
}

// TestOnlyTheHostRoutesToMCP: a runner that sets an MCP source reference
// on a call the worker did not decide fails the turn, so it can never send
// a call of its own tool, under that tool's policy, to an MCP server.
// Sessions of older versions keep the runner's reference and run every
// call in the runner, as they ran.
func TestOnlyTheHostRoutesToMCP(t *testing.T) {
	forged := call("c1", "lookup", contract.EffectRead)
	forged.ToolSourceReference = "mcp:files/delete"

	s := startedWith(t, hostOpts())
	cmds := nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(forged), NowMs: now}).Commands)
	if diff := cmp.Diff([]string{"record_turn_failure turn-1"}, renderAll(cmds)); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if !strings.Contains(s.LastTurnError, `tool call "c1" (lookup) has tool_source_reference "mcp:files/delete"`) {
		t.Errorf("last_turn_error = %q", s.LastTurnError)
	}

	// A reference of the runner's own is its business.
	own := call("c1", "lookup", contract.EffectRead)
	own.ToolSourceReference = "crm:v2"
	s = startedWith(t, hostOpts())
	cmds = nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(own), NowMs: now}).Commands)
	if diff := cmp.Diff([]string{"CallTool turn-1/c1 effect=read attempts=3 key=s-1/turn-1/c1"}, renderAll(cmds)); diff != "" {
		t.Errorf("runner's own reference (-want +got):\n%s", diff)
	}

	for _, version := range []int{0, SettingsVersion} {
		o := hostOpts()
		o.Version = version
		s = startedWith(t, o)
		out := hostCalls(toolsRequested(forged), HostCall{ToolCallID: "c1", Source: "mcp:files/read", Effect: contract.EffectRead})
		cmds = nonEmit(s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: out, NowMs: now}).Commands)
		if diff := cmp.Diff([]string{"CallTool turn-1/c1 effect=read attempts=3 key=s-1/turn-1/c1"}, renderAll(cmds)); diff != "" {
			t.Errorf("version %d (-want +got):\n%s", version, diff)
		}
		if s.ToolCalls[0].ToolSourceReference != "mcp:files/delete" {
			t.Errorf("version %d: reference %q changed", version, s.ToolCalls[0].ToolSourceReference)
		}
	}
}

func TestAuthorizeHostPolicy(t *testing.T) {
	set := contract.PolicySet{
		DefaultEffect: contract.EffectUnclassified,
		Policies:      map[string]contract.ToolPolicy{"files__write": {Effect: contract.EffectNonIdempotentWrite}},
	}
	tests := []struct {
		tool         string
		annotated    contract.Effect
		claim        contract.ToolPolicy
		wantEffect   contract.Effect
		wantApproval bool
	}{
		{"files__read", contract.EffectRead, contract.ToolPolicy{}, contract.EffectRead, false},
		{"files__upsert", contract.EffectIdempotentWrite, contract.ToolPolicy{}, contract.EffectIdempotentWrite, false},
		{"files__plain", "", contract.ToolPolicy{}, contract.EffectUnclassified, true},
		{"files__write", contract.EffectRead, contract.ToolPolicy{}, contract.EffectNonIdempotentWrite, true},
		{"files__read", contract.EffectRead, contract.ToolPolicy{RequiresApproval: ptr(true)}, contract.EffectRead, true},
		{"files__read", "bogus", contract.ToolPolicy{}, contract.EffectUnclassified, true},
	}
	for _, tt := range tests {
		got := AuthorizeHostPolicy(set, tt.tool, tt.annotated, tt.claim)
		if got.Effect != tt.wantEffect || got.ApprovalRequired() != tt.wantApproval {
			t.Errorf("AuthorizeHostPolicy(%s, %q, %+v) = %s approval %v, want %s approval %v",
				tt.tool, tt.annotated, tt.claim, got.Effect, got.ApprovalRequired(), tt.wantEffect, tt.wantApproval)
		}
	}
}
