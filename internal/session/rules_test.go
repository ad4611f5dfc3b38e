package session

import (
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
)

// TestApprovalRuleDecisions: the RunModel Step's rule decisions, recorded
// in its outcome, decide approval before the policy: allow runs a write
// that its policy makes wait, require_approval makes a read wait, deny
// rejects the call with the rule's reason (it never runs); a shadow
// decision is only recorded. The effect, and so the retries, stays the
// policy's.
func TestApprovalRuleDecisions(t *testing.T) {
	o := opts()
	o.Policies.Policies["refund"] = contract.ToolPolicy{Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(true)}
	o.Policies.Policies["lookup"] = contract.ToolPolicy{Effect: contract.EffectRead}
	s := startedWith(t, o)
	out := toolsRequested(
		call("c1", "refund", ""),
		call("c2", "lookup", ""),
		call("c3", "refund", ""),
		call("c4", "refund", ""),
	)
	out.RuleDecisions = []RuleDecision{
		{ToolCallID: "c1", Rule: "approval_rules[0]", Decision: RuleAllow, Reason: "small"},
		{ToolCallID: "c2", Rule: "approval_rules[3]", Decision: RuleRequireApproval},
		{ToolCallID: "c3", Rule: "approval_rules[1]", Decision: RuleDeny, Reason: "Refunds over $500 need a manager."},
		{ToolCallID: "c4", ShadowRule: "approval_rules[2]", ShadowDecision: RuleDeny},
	}
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", NowMs: now, Outcome: out}).Commands
	want := []string{
		"CallSingleAttemptTool turn-1/c1 effect=non_idempotent_write attempts=1 key=s-1/turn-1/c1",
		"start_timer c2 1m0s",
		"start_timer c4 1m0s",
	}
	if diff := cmp.Diff(want, renderAll(nonEmit(cmds))); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	byID := map[string]wire.ToolCall{}
	for _, c := range s.ToolCalls {
		byID[c.ToolCallID] = c
	}
	if c := byID["c1"]; c.RequiresApproval || c.Effect != wire.EffectNonIdempotentWrite || c.ApprovalRule != "approval_rules[0]" || c.ApprovalDecision != RuleAllow {
		t.Errorf("allowed: %+v", c)
	}
	if c := byID["c2"]; !c.RequiresApproval || c.Effect != wire.EffectRead || c.ApprovalDecision != RuleRequireApproval {
		t.Errorf("required: %+v", c)
	}
	if c := byID["c3"]; c.Status != wire.ToolCallRejected || c.RejectionMessage != "Refunds over $500 need a manager." || c.ApprovalDecision != RuleDeny {
		t.Errorf("denied: %+v", c)
	}
	if c := byID["c4"]; !c.RequiresApproval || c.ApprovalDecision != "" || c.ShadowApprovalRule != "approval_rules[2]" || c.ShadowApprovalDecision != RuleDeny {
		t.Errorf("shadow: %+v", c)
	}
	var deferred []string
	for _, c := range cmds {
		if e, ok := c.(Emit); ok && e.Event.Type == wire.EventToolCallDeferred {
			deferred = append(deferred, string(e.Event.Payload))
		}
	}
	if len(deferred) != 4 || !strings.Contains(deferred[2], `"approval_rule":"approval_rules[1]","approval_decision":"deny"`) || !strings.Contains(deferred[3], `"shadow_approval_decision":"deny"`) {
		t.Errorf("tool_call_deferred payloads: %q", deferred)
	}
}
