// The contract's words are the same in every SDK: the texts the model sees
// and the event types are read from the Go SDK's source and compared.

import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

import {
  checkEvent,
  defaultRejectionToolResult,
  describeToolCallOutcome,
  modelCallLimitToolResultFormat,
  outcomeUnknownToolResult,
  resolvePolicy,
  runnerEventTypes,
} from "../src";

const contract = path.resolve(__dirname, "..", "..", "..", "..", "pluginapi", "contract");

function goString(src: string, name: string): string {
  const m = new RegExp(`${name}\\s*=\\s*("(?:[^"\\\\]|\\\\.)*")`).exec(src);
  assert.ok(m, `${name} is not in the Go SDK`);
  return JSON.parse(m[1]);
}

test("the texts the model sees are the Go SDK's", () => {
  const src = fs.readFileSync(path.join(contract, "outcome.go"), "utf8");
  assert.equal(defaultRejectionToolResult, goString(src, "DefaultRejectionToolResult"));
  assert.equal(outcomeUnknownToolResult, goString(src, "OutcomeUnknownToolResult"));
  assert.equal(modelCallLimitToolResultFormat, goString(src, "ModelCallLimitToolResultFormat"));
  const rec = { status: "", output: "", error: "", rejection_message: "" };
  assert.equal(describeToolCallOutcome({ ...rec, status: "succeeded", output: "ok" }), "ok");
  assert.equal(describeToolCallOutcome({ ...rec, status: "failed", error: "boom" }), "The tool call failed: boom");
  assert.equal(describeToolCallOutcome({ ...rec, status: "failed" }), "The tool call failed.");
  assert.equal(describeToolCallOutcome({ ...rec, status: "rejected" }), defaultRejectionToolResult);
  assert.equal(describeToolCallOutcome({ ...rec, status: "rejected", rejection_message: "no" }), "no");
  assert.equal(describeToolCallOutcome({ ...rec, status: "outcome_unknown" }), outcomeUnknownToolResult);
});

test("the event types are the Go SDK's", () => {
  const src = fs.readFileSync(path.join(contract, "events.go"), "utf8");
  const block = /var sessionEventTypes = \[\]string\{([^}]*)\}/.exec(src);
  assert.ok(block, "sessionEventTypes is not in the Go SDK");
  for (const t of block[1].match(/"[^"]+"/g)!.map((q) => JSON.parse(q) as string)) {
    assert.match(checkEvent(t, {}), /written by the session/, t);
  }
  for (const t of runnerEventTypes) {
    assert.ok(src.includes(`"${t}"`), `${t} is not a Go runner event type`);
  }
  assert.equal(checkEvent("handoff", {}), 'custom event type "handoff" needs an adapter prefix, such as "myframework.handoff"');
  assert.equal(checkEvent("myframework.handoff", { a: 1 }), "");
  assert.match(checkEvent("tool_call_finished", { tool_call_id: "c", tool_name: "t", status: "approved" }), /final status/);
  assert.equal(checkEvent("tool_call_finished", { tool_call_id: "c", tool_name: "t", status: "succeeded" }), "");
  assert.match(checkEvent("text_delta", { text: 1 }), /needs \{"text": string\}/);
});

test("policies resolve in the Go SDK's order", () => {
  const set = {
    policies: { refund: { effect: "non_idempotent_write", requires_approval: true, _requires_approval: "requires_approval" as const } },
    default_effect: "read",
  };
  assert.deepEqual(resolvePolicy(set, "refund", "read"), { effect: "non_idempotent_write", requires_approval: true });
  assert.deepEqual(resolvePolicy(set, "lookup", "idempotent_write"), { effect: "idempotent_write" });
  assert.deepEqual(resolvePolicy(set, "lookup", ""), { effect: "read" });
  assert.deepEqual(resolvePolicy({ policies: {}, default_effect: "" }, "x", "bogus"), { effect: "unclassified" });
});
