package session

import "github.com/dex-agents/dex-agent-worker/pluginapi/contract"

// AuthorizePolicy returns the policy a tool call runs under. The operator's
// policies decide: the explicit policy for the tool, else the default
// effect. The runner's claim (the policy it resolved for the call) may only
// make the call stricter: a stricter effect class wins, and a claim that
// explicitly requires approval adds the approval. A runner that claims
// "read" for a write the config classifies as non_idempotent_write still
// gets one attempt and the approval the config asks for.
func AuthorizePolicy(set contract.PolicySet, tool string, claim contract.ToolPolicy) contract.ToolPolicy {
	return AuthorizeHostPolicy(set, tool, "", claim)
}

// AuthorizeHostPolicy is AuthorizePolicy for a tool the worker runs
// itself: annotated, the effect its MCP annotations give, stands in for
// the default effect (with that effect's default approval). A policy naming
// the tool still wins, and the runner's claim may still only make the call
// stricter.
func AuthorizeHostPolicy(set contract.PolicySet, tool string, annotated contract.Effect, claim contract.ToolPolicy) contract.ToolPolicy {
	host, explicit := set.Policies[tool]
	if !explicit {
		host = contract.ToolPolicy{Effect: set.DefaultEffect}
		if annotated.Valid() {
			host.Effect = annotated
		}
	}
	if !host.Effect.Valid() {
		host.Effect = contract.EffectUnclassified
	}
	out := contract.ToolPolicy{Effect: host.Effect}
	if claim.Effect.Valid() && strictness(claim.Effect) > strictness(host.Effect) {
		out.Effect = claim.Effect
	}
	approval := host.RequiresApproval == nil && out.Effect.ApprovalRequiredByDefault() ||
		host.RequiresApproval != nil && *host.RequiresApproval
	if claim.RequiresApproval != nil && *claim.RequiresApproval {
		approval = true
	}
	out.RequiresApproval = &approval
	return out
}

// AuthorizeRunnerPolicy returns the policy a call of the runner's own tool
// runs under in sessions of RunnerPoliciesVersion: the config's policy for
// the tool, as it is; else, when the runner is trusted and claims an
// effect, the runner's policy (its approval, or the effect's default);
// else the default effect, which an untrusted runner's claim may only make
// stricter (AuthorizePolicy).
func AuthorizeRunnerPolicy(set contract.PolicySet, tool string, claim contract.ToolPolicy, trusted bool) contract.ToolPolicy {
	if p, ok := set.Policies[tool]; ok {
		if !p.Effect.Valid() {
			p.Effect = contract.EffectUnclassified
		}
		approval := p.ApprovalRequired()
		return contract.ToolPolicy{Effect: p.Effect, RequiresApproval: &approval}
	}
	if trusted && claim.Effect.Valid() {
		approval := claim.ApprovalRequired()
		return contract.ToolPolicy{Effect: claim.Effect, RequiresApproval: &approval}
	}
	if trusted && claim.RequiresApproval != nil {
		// An approval rule without an effect: the default effect's
		// retries, the runner's approval.
		p := AuthorizePolicy(set, tool, contract.ToolPolicy{})
		p.RequiresApproval = claim.RequiresApproval
		return p
	}
	return AuthorizePolicy(set, tool, claim)
}

// strictness orders the effect classes by how carefully a call runs:
// retried reads, retried writes with an idempotency key, then single
// attempts.
func strictness(e contract.Effect) int {
	switch e {
	case contract.EffectRead:
		return 0
	case contract.EffectIdempotentWrite:
		return 1
	default:
		return 2
	}
}

// legacyPolicy is the policy of a call in a session started before the
// settings were recorded: the runner's claim, as those sessions ran. It is
// kept so that their histories replay.
func legacyPolicy(claim contract.ToolPolicy) contract.ToolPolicy {
	if !claim.Effect.Valid() {
		claim.Effect = contract.EffectUnclassified
	}
	approval := claim.ApprovalRequired()
	return contract.ToolPolicy{Effect: claim.Effect, RequiresApproval: &approval}
}
