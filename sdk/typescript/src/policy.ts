// Tool policies: the Go SDK's PolicySet.Resolve.

import type { PolicySet, ToolPolicy } from "./types";

/** The effect classes. */
export const effects: readonly string[] = ["read", "idempotent_write", "non_idempotent_write", "unclassified"];

/**
 * resolvePolicy returns the policy to claim for a call: the session's
 * explicit policy; else the runner's own policy for the tool (own: an
 * effect, an approval rule, or both) or its framework's effect (such as an
 * MCP readOnlyHint; "" when there is none); else the default effect, else
 * unclassified. The session decides in the same order.
 */
export function resolvePolicy(
  set: PolicySet | null | undefined,
  toolName: string,
  frameworkEffect: string,
  own?: ToolPolicy,
): ToolPolicy {
  const p = set?.policies?.[toolName];
  if (p) {
    const out: ToolPolicy = { effect: p.effect };
    if (p._requires_approval === "requires_approval") {
      out.requires_approval = p.requires_approval;
    }
    return out;
  }
  if (own && ((own.effect && effects.includes(own.effect)) || own.requires_approval !== undefined)) {
    const out: ToolPolicy = { ...own };
    if (!out.effect || !effects.includes(out.effect)) {
      out.effect = set?.default_effect && effects.includes(set.default_effect) ? set.default_effect : "unclassified";
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
