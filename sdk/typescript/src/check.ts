// The contract's rules on a runner's answers: the Go SDK's
// contract_check.go. The SDK refuses an answer that breaks them with
// INVALID_ARGUMENT before it reaches the host.

import { effects } from "./policy";
import type {
  BuildUserMessageResponse,
  CompactionCutoffRequest,
  CompactionCutoffResponse,
  ConfigureResponse,
  ExecuteToolResponse,
  FrameworkMessage,
  RunModelStepResponse,
  TurnContext,
} from "./types";

const roles = ["user", "assistant", "tool"];

function checkRole(field: string, role: string | undefined, allowed: string[]): string {
  if (allowed.includes(role ?? "")) {
    return "";
  }
  return `${field} is ${JSON.stringify(role ?? "")}, want ${allowed.map((r) => JSON.stringify(r)).join(" or ")}`;
}

function checkMessages(field: string, ms: FrameworkMessage[] | undefined): string {
  for (const [i, m] of (ms ?? []).entries()) {
    const reason = checkRole(`${field}[${i}].role`, m.role, roles);
    if (reason) {
      return reason;
    }
  }
  return "";
}

export function checkBuildUserMessageResponse(r: BuildUserMessageResponse | undefined): string {
  if (!r) {
    return "BuildUserMessage returned no response";
  }
  return checkRole("BuildUserMessage: message.role", r.message?.role, ["user"]);
}

export function checkConfigureResponse(r: ConfigureResponse | undefined): string {
  const seen = new Set<string>();
  for (const [i, name] of (r?.tools ?? []).entries()) {
    if (!name) {
      return `Configure: tools[${i}] is empty`;
    }
    if (seen.has(name)) {
      return `Configure: tools[${i}] ${JSON.stringify(name)} is listed twice`;
    }
    seen.add(name);
  }
  const keys = new Set<string>();
  for (const [i, c] of (r?.setting_choices ?? []).entries()) {
    if (!c.key) {
      return `Configure: setting_choices[${i}].key is empty`;
    }
    if (keys.has(c.key)) {
      return `Configure: setting_choices[${i}] ${JSON.stringify(c.key)} is listed twice`;
    }
    if (!c.values?.length) {
      return `Configure: setting_choices[${i}] ${JSON.stringify(c.key)} has no values`;
    }
    if (c.values.includes("")) {
      return `Configure: setting_choices[${i}] ${JSON.stringify(c.key)} has an empty value`;
    }
    keys.add(c.key);
  }
  return "";
}

export function checkRunModelStepResponse(r: RunModelStepResponse | undefined, turn: TurnContext | null): string {
  if (!r) {
    return "RunModelStep returned no response";
  }
  const done = r.turn_completed, req = r.tool_calls_requested;
  if (!done && !req) {
    return "RunModelStep returned no outcome; set turn_completed or tool_calls_requested";
  }
  if (done && req) {
    return "RunModelStep returned two outcomes (turn_completed and tool_calls_requested); set exactly one";
  }
  if (done) {
    const reason = checkMessages("turn_completed.new_messages", done.new_messages);
    return reason ? "RunModelStep: " + reason : "";
  }
  if (!req!.run_state) {
    return "RunModelStep: tool_calls_requested.run_state is empty; it must continue the turn after the tools";
  }
  const reason = checkMessages("tool_calls_requested.new_messages", req!.new_messages);
  if (reason) {
    return "RunModelStep: " + reason;
  }
  const seen = new Set((turn?.tool_calls ?? []).map((c) => c.tool_call_id));
  for (const [i, c] of (req!.tool_calls ?? []).entries()) {
    const field = `RunModelStep: tool_calls_requested.tool_calls[${i}]`;
    const id = c.tool_call_id ?? "";
    if (!id) {
      return field + ".tool_call_id is empty";
    }
    if (id.includes("/")) {
      return `${field}.tool_call_id ${JSON.stringify(id)} contains '/'`;
    }
    if (seen.has(id)) {
      return `${field}.tool_call_id ${JSON.stringify(id)} is not unique within the turn`;
    }
    if (!c.tool_name) {
      return field + ".tool_name is empty";
    }
    if (!effects.includes(c.policy?.effect ?? "")) {
      return `${field}.policy.effect ${JSON.stringify(c.policy?.effect ?? "")} is not an effect class (use resolvePolicy)`;
    }
    seen.add(id);
  }
  return "";
}

const toolOutcomes = ["result", "error", "input_requested", "task_started", "task_pending"] as const;

export function checkExecuteToolResponse(method: string, r: ExecuteToolResponse | undefined, poll: boolean, supportsTasks: boolean): string {
  if (!r) {
    return method + " returned no response";
  }
  const set = toolOutcomes.filter((k) => r[k] !== undefined && r[k] !== null);
  if (set.length === 0) {
    return `${method} returned no outcome; set one of ${poll ? "result, error, input_requested, task_started, task_pending" : "result, error, input_requested, task_started"}`;
  }
  if (set.length > 1) {
    return `${method} returned ${set.length} outcomes (${set.join(", ")}); set exactly one`;
  }
  if (r.task_pending && !poll) {
    return method + " returned task_pending, which only PollToolTask may return";
  }
  if (r.task_started && !poll && !supportsTasks) {
    return method + " returned task_started, but the request's supports_tool_tasks is false";
  }
  if (r.task_started && !r.task_started.task_id) {
    return method + ": task_started.task_id is empty";
  }
  return "";
}

export function checkCompactionCutoffResponse(r: CompactionCutoffResponse | undefined, req: CompactionCutoffRequest): string {
  if (!r) {
    return "SelectCompactionCutoff returned no response";
  }
  const msgs = req.turn?.messages ?? [];
  let last = msgs.length ? Number(msgs[msgs.length - 1].sequence) : 0;
  last = Math.max(last, Number(req.turn?.cached_through ?? 0));
  const floor = Number(req.turn?.context_summary?.last_sequence ?? 0);
  const through = Number(r.through_sequence ?? 0);
  if (through !== 0 && (through <= floor || through > last)) {
    return `SelectCompactionCutoff: through_sequence ${through} is not 0 or a stored sequence after the current summary (${floor + 1} to ${last})`;
  }
  return "";
}
