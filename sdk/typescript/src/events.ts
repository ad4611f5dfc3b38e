// Live events: the Go SDK's CheckEvent.

/** The standard event types a runner may write. */
export const runnerEventTypes: readonly string[] = ["text_delta", "reasoning_delta", "tool_call_started", "tool_call_finished"];

/** The standard types only the worker writes, which no runner may write. */
const sessionEventTypes: readonly string[] = [
  "turn_started", "turn_completed", "turn_failed", "turn_steered", "turn_cancelled",
  "tool_call_deferred", "interrupt_raised", "interrupt_resolved", "interrupt_expiring", "interrupt_extended", "turn_recovering", "timer_started",
  "plan_updated", "plan_execution_started", "tool_task_started", "usage_recorded",
  "compaction_started", "compaction_finished", "spend_limit_reached",
  "mcp.tool_progress", "mcp.task_status", "sub_agent_started", "sub_agent_finished",
  "notification_failed",
];

const finalStatuses = ["succeeded", "failed", "rejected", "outcome_unknown"];

/** checkEvent returns why a runner may not write this event, or "". */
export function checkEvent(type: string, payload: unknown): string {
  if (type === "") {
    return "the event type is empty";
  }
  if (sessionEventTypes.includes(type)) {
    return `event type ${JSON.stringify(type)} is written by the session, not by runners (runners write ${runnerEventTypes.join(", ")}, or custom types)`;
  }
  if (!runnerEventTypes.includes(type) && !type.includes(".")) {
    return `custom event type ${JSON.stringify(type)} needs an adapter prefix, such as "myframework.${type}"`;
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    return `the payload of ${type} must be a JSON object`;
  }
  const p = payload as Record<string, unknown>;
  switch (type) {
    case "text_delta":
    case "reasoning_delta":
      if (typeof p.text !== "string") {
        return `${type} needs {"text": string}`;
      }
      break;
    case "tool_call_started":
    case "tool_call_finished":
      if (typeof p.tool_call_id !== "string" || !p.tool_call_id || typeof p.tool_name !== "string" || !p.tool_name) {
        return `${type} needs tool_call_id and tool_name`;
      }
      if (type === "tool_call_finished" && !finalStatuses.includes(String(p.status ?? ""))) {
        return `tool_call_finished needs a final status (succeeded, failed, rejected or outcome_unknown), got ${JSON.stringify(p.status ?? "")}`;
      }
      if (type === "tool_call_started" && p.status !== undefined && p.status !== "") {
        return "tool_call_started has no status";
      }
      break;
  }
  return "";
}
