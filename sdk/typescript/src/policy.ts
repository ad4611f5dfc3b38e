// Tool policies: the Go SDK's PolicySet.Resolve.

import type { PolicySet, ToolPolicy } from "./types";

/** The effect classes. */
export const effects: readonly string[] = ["read", "idempotent_write", "non_idempotent_write", "unclassified"];

/**
 * resolvePolicy returns the policy of a tool: the session's explicit
 * policy, else the framework's effect (such as an MCP readOnlyHint), else
 * the default effect, else unclassified. Pass "" as frameworkEffect when
 * the framework exposes no metadata.
 */
export function resolvePolicy(set: PolicySet | null | undefined, toolName: string, frameworkEffect: string): ToolPolicy {
  const p = set?.policies?.[toolName];
  if (p) {
    const out: ToolPolicy = { effect: p.effect };
    if (p._requires_approval === "requires_approval") {
      out.requires_approval = p.requires_approval;
    }
    return out;
  }
  if (effects.includes(frameworkEffect)) {
    return { effect: frameworkEffect };
  }
  if (set?.default_effect && effects.includes(set.default_effect)) {
    return { effect: set.default_effect };
  }
  return { effect: "unclassified" };
}
