// The texts the model sees for tool calls that produced no output. They are
// part of the contract and the same in every SDK (a test compares them
// with the Go SDK's): runners render a final record's outcome with
// describeToolCallOutcome.

import type { ToolCall } from "./types";

/** The result of a call rejected without a message. */
export const defaultRejectionToolResult = "The user rejected this tool call.";
/** The result of a call that may or may not have taken effect. */
export const outcomeUnknownToolResult =
  "The outcome of this tool call is unknown: it may or may not have taken effect. Check its effect before you call it again.";
/** The result of a call made after the turn reached its model call limit;
 * %d is the limit. */
export const modelCallLimitToolResultFormat = "The tool call was not run: this turn reached its limit of %d model calls.";

/** The final statuses of a tool call record. */
export const finalStatuses: readonly string[] = ["rejected", "succeeded", "failed", "outcome_unknown"];

/** isFinal reports whether a record's status is final. */
export function isFinal(status: string): boolean {
  return finalStatuses.includes(status);
}

/** describeToolCallOutcome is the model-visible text of a final record. */
export function describeToolCallOutcome(c: Pick<ToolCall, "status" | "output" | "error" | "rejection_message">): string {
  switch (c.status) {
    case "succeeded":
      return c.output;
    case "failed":
      return c.error ? "The tool call failed: " + c.error : "The tool call failed.";
    case "rejected":
      return c.rejection_message || defaultRejectionToolResult;
  }
  return outcomeUnknownToolResult;
}
