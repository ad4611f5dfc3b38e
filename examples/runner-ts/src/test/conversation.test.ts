import { test } from "node:test";
import assert from "node:assert/strict";

import {
  Message,
  OutcomeUnknownToolResult,
  assistantMessage,
  decode,
  describeOutcome,
  rebuild,
  resultOf,
  userMessage,
} from "../conversation";

function stored(seq: number, m: { role: string; text: string; framework_item: string; tool_call_id?: string; tool_name?: string; tool_status?: string }): Message {
  return { sequence: seq, turn_id: "turn-1", tool_call_id: "", tool_name: "", tool_status: "", ...m };
}

const record = (id: string, status: string, extra: Record<string, string> = {}) => ({
  tool_call_id: id,
  tool_name: "lookup_order",
  arguments: '{"order_id":"7"}',
  effect: "read",
  requires_approval: false,
  status,
  output: "",
  error: "",
  rejection_message: "",
  ...extra,
});

test("a turn's messages come back as the ModelMessages they were stored as", () => {
  const user = userMessage("refund order 7");
  assert.equal(user.role, "user");
  assert.equal(user.framework_item, '{"role":"user","content":"refund order 7"}');
  const call = assistantMessage({
    role: "assistant",
    content: [
      { type: "text", text: "Looking it up." },
      { type: "tool-call", toolCallId: "c1", toolName: "lookup_order", input: { order_id: "7" } },
    ],
  });
  assert.equal(call.text, "Looking it up.");
  const result = resultOf([record("c1", "succeeded", { output: '{"id":"7"}' })], "c1", "lookup_order").message;
  assert.equal(result.role, "tool");
  assert.equal(result.tool_call_id, "c1");
  assert.equal(result.tool_status, "succeeded");
  const msgs = [user, call, result].map((m, i) => stored(i + 1, m));
  const items = rebuild(msgs, []);
  assert.deepEqual(items, [
    { role: "user", content: "refund order 7" },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Looking it up." },
        { type: "tool-call", toolCallId: "c1", toolName: "lookup_order", input: { order_id: "7" } },
      ],
    },
    { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "lookup_order", output: { type: "text", value: '{"id":"7"}' } }] },
  ]);
});

test("a tool call without a result gets the outcome-unknown result, unless it is pending", () => {
  const call = assistantMessage({
    role: "assistant",
    content: [{ type: "tool-call", toolCallId: "c1", toolName: "refund_order", input: {} }],
  });
  const note = { role: "assistant", text: "The turn failed.", framework_item: "" };
  // A failed turn's call, then a note and a new user message.
  const items = rebuild([stored(1, userMessage("a")), stored(2, call), stored(3, note), stored(4, userMessage("b"))], []);
  assert.equal(items.length, 5);
  assert.deepEqual(items[2], {
    role: "tool",
    content: [{ type: "tool-result", toolCallId: "c1", toolName: "refund_order", output: { type: "error-text", value: OutcomeUnknownToolResult } }],
  });
  assert.deepEqual(items[3], { role: "assistant", content: "The turn failed." });
  // The last response's calls whose results the caller adds next stay open.
  assert.equal(rebuild([stored(1, userMessage("a")), stored(2, call)], ["c1"]).length, 2);
  assert.equal(rebuild([stored(1, userMessage("a")), stored(2, call)], []).length, 3);
});

test("final records render as pluginapi.DescribeToolCallOutcome does", () => {
  assert.equal(describeOutcome(record("c", "failed", { error: "boom" })), "The tool call failed: boom");
  assert.equal(describeOutcome(record("c", "failed")), "The tool call failed.");
  assert.equal(describeOutcome(record("c", "rejected")), "The user rejected this tool call.");
  assert.equal(describeOutcome(record("c", "rejected", { rejection_message: "not now" })), "not now");
  assert.equal(describeOutcome(record("c", "outcome_unknown")), OutcomeUnknownToolResult);
  // A record that is not final reads as outcome unknown.
  const r = resultOf([record("c", "approved")], "c", "lookup_order").message;
  assert.equal(r.tool_status, "outcome_unknown");
  assert.equal(r.text, OutcomeUnknownToolResult);
  assert.equal(resultOf([], "gone", "x").message.tool_status, "outcome_unknown");
});

test("items that are not this runner's are refused with the message's sequence", () => {
  assert.throws(() => decode(stored(5, { role: "user", text: "x", framework_item: "not json" })), /message 5: the framework item is not JSON/);
  assert.throws(() => decode(stored(6, { role: "user", text: "x", framework_item: '{"kind":"user_text"}' })), /message 6: .*not an AI SDK/);
  assert.throws(() => decode(stored(7, { role: "tool", text: "x", framework_item: '{"role":"user","content":"x"}' })), /message 7: .*role user is not the message's role tool/);
  // Messages without an item (notes the session wrote) are plain text.
  assert.deepEqual(decode(stored(8, { role: "user", text: "hi", framework_item: "" })), { role: "user", content: "hi" });
});
