// How a session's stored messages become the AI SDK's ModelMessages and
// back.
//
// Every stored message carries, as its framework item, the JSON of one AI
// SDK ModelMessage:
//   - the user's message: {"role":"user","content":"refund order 7"};
//   - a model response: the assistant message of streamText's
//     response.messages (text, reasoning and tool-call parts, with their
//     providerOptions), stored as the model answered it;
//   - a tool result: {"role":"tool","content":[{"type":"tool-result",
//     "toolCallId","toolName","output":{"type":"text"|"error-text","value"}}]},
//     built from the session's final record of the call.
// The host hands the items back byte for byte, so the next RunModelStep
// parses them and passes them to streamText as they are. A message without
// an item (a note the session wrote itself) becomes plain text of its role.
//
// Like the Go Stepwise runner, this runner stores items as they appear: the
// assistant message with tool calls goes out with tool_calls_requested, and
// the results of those calls are stored by the next RunModelStep of the turn
// (or by BuildUnfinishedTurnMessages when the turn fails), from the final
// tool call records the request carries.

import type { AssistantModelMessage, ModelMessage, ToolModelMessage } from "ai";
import {
  describeToolCallOutcome as describeOutcome,
  isFinal,
  modelCallLimitToolResultFormat as ModelCallLimitToolResultFormat,
  outcomeUnknownToolResult as OutcomeUnknownToolResult,
} from "@dex-agents/runner";
import type { FrameworkMessage as ContractMessage, Message, ToolCall } from "@dex-agents/runner";

// The contract's types and texts come from the SDK, so a runner in any
// language shows the model the same words.
export { describeOutcome, isFinal, ModelCallLimitToolResultFormat, OutcomeUnknownToolResult };
export type { Message };

/** FrameworkMessage is the contract's, with every field this runner sets. */
export type FrameworkMessage = Required<Pick<ContractMessage, "role" | "text" | "framework_item" | "tool_call_id" | "tool_name" | "tool_status">>;

/** ToolCallRecord is the part of the contract's ToolCall this runner reads. */
export type ToolCallRecord = Pick<
  ToolCall,
  "tool_call_id" | "tool_name" | "arguments" | "effect" | "requires_approval" | "status" | "output" | "error" | "rejection_message"
>;

/** userMessage is BuildUserMessage's answer. */
export function userMessage(text: string): FrameworkMessage {
  const item: ModelMessage = { role: "user", content: text };
  return frameworkMessage("user", text, JSON.stringify(item));
}

/** toolResultMessage renders one final record (or a missing one, as
 * outcome unknown) as a stored message. */
export function toolResultMessage(id: string, name: string, status: string, text: string): { message: FrameworkMessage; item: ToolModelMessage } {
  const item: ToolModelMessage = {
    role: "tool",
    content: [
      {
        type: "tool-result",
        toolCallId: id,
        toolName: name,
        output: status === "succeeded" ? { type: "text", value: text } : { type: "error-text", value: text },
      },
    ],
  };
  const message = frameworkMessage("tool", text, JSON.stringify(item));
  message.tool_call_id = id;
  message.tool_name = name;
  message.tool_status = status;
  return { message, item };
}

/** resultOf renders the session's record of a call of this turn. */
export function resultOf(records: ToolCallRecord[], id: string, name: string): { message: FrameworkMessage; item: ToolModelMessage } {
  const rec = records.find((r) => r.tool_call_id === id);
  if (!rec || !isFinal(rec.status)) {
    return toolResultMessage(id, rec?.tool_name || name, "outcome_unknown", OutcomeUnknownToolResult);
  }
  return toolResultMessage(id, rec.tool_name || name, rec.status, describeOutcome(rec));
}

/** assistantMessage stores a model response. Its text is what people see. */
export function assistantMessage(item: AssistantModelMessage): FrameworkMessage {
  return frameworkMessage("assistant", textOf(item), JSON.stringify(item));
}

export function textOf(m: ModelMessage): string {
  if (typeof m.content === "string") {
    return m.content;
  }
  let out = "";
  for (const part of m.content) {
    if (part.type === "text") {
      out += part.text;
    }
  }
  return out;
}

export function toolCallsOf(m: ModelMessage): { toolCallId: string; toolName: string }[] {
  if (m.role !== "assistant" || typeof m.content === "string") {
    return [];
  }
  const out: { toolCallId: string; toolName: string }[] = [];
  for (const part of m.content) {
    if (part.type === "tool-call" && !part.providerExecuted) {
      out.push({ toolCallId: part.toolCallId, toolName: part.toolName });
    }
  }
  return out;
}

function frameworkMessage(role: string, text: string, item: string): FrameworkMessage {
  return { role, text, framework_item: item, tool_call_id: "", tool_name: "", tool_status: "" };
}

/** decode turns one stored message into a ModelMessage. */
export function decode(m: Message): ModelMessage {
  if (!m.framework_item) {
    switch (m.role) {
      case "assistant":
        return { role: "assistant", content: m.text };
      case "tool":
        if (m.tool_call_id) {
          return toolResultMessage(m.tool_call_id, m.tool_name, m.tool_status || "succeeded", m.text).item;
        }
        return { role: "user", content: m.text };
      default:
        return { role: "user", content: m.text };
    }
  }
  let item: unknown;
  try {
    item = JSON.parse(m.framework_item);
  } catch (err) {
    throw new Error(`message ${m.sequence}: the framework item is not JSON: ${(err as Error).message}`);
  }
  const role = (item as { role?: unknown } | null)?.role;
  if (role !== "user" && role !== "assistant" && role !== "tool") {
    throw new Error(`message ${m.sequence}: the framework item is not an AI SDK user, assistant or tool message`);
  }
  if (role !== m.role) {
    throw new Error(`message ${m.sequence}: the framework item's role ${role} is not the message's role ${m.role}`);
  }
  return item as ModelMessage;
}

/** rebuild turns the stored transcript into model input. Every tool call
 * gets a result: one stored without a result (a turn that failed) gets the
 * outcome-unknown text, so no provider sees an orphaned call. The calls
 * named in pending (the last response's, whose results the caller adds
 * next) stay open. */
export function rebuild(messages: Message[], pending: string[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  let open: { toolCallId: string; toolName: string }[] = [];
  const closeOpen = (keep: string[]) => {
    for (const c of open) {
      if (!keep.includes(c.toolCallId)) {
        out.push(toolResultMessage(c.toolCallId, c.toolName, "outcome_unknown", OutcomeUnknownToolResult).item);
      }
    }
    open = [];
  };
  for (const m of messages) {
    const item = decode(m);
    if (item.role === "tool") {
      const answered = new Set(item.content.filter((p) => p.type === "tool-result").map((p) => p.toolCallId));
      open = open.filter((c) => !answered.has(c.toolCallId));
    } else {
      closeOpen([]);
    }
    out.push(item);
    open.push(...toolCallsOf(item));
  }
  closeOpen(pending);
  return out;
}
