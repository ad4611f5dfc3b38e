// The OpenAI Agents SDK (JavaScript) adapter: an Agent with function tools
// and a handoff, driven step by step over a scripted Model, the way the
// session drives it. Each model call is one runModelStep; tool calls come
// back as deferred calls with their policies and run through the tools'
// own invoke() with the idempotency key; a handoff changes the active
// agent durably. Also: the plan and summary texts are Stepwise's.

import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

import {
  Agent,
  RunContext,
  Usage,
  tool,
  type AgentOutputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
  type protocol,
} from "@openai/agents-core";
import { z } from "zod";

import * as context from "../src/context";
import { OpenAIAgentsRunner, type DexToolContext } from "../src/openai-agents";
import type { CallContext, ToolCallContext } from "../src/runner";
import type { Message, ToolCall, TurnContext } from "../src/types";

const refunds: string[] = [];

class Scripted implements Model {
  requests: ModelRequest[] = [];
  private respond(req: ModelRequest): AgentOutputItem[] {
    this.requests.push(req);
    if (req.systemInstructions === context.summaryInstructions) {
      return [text(`summary of ${(req.input as unknown[]).length} items`)];
    }
    const input = req.input as Array<Record<string, unknown>>;
    const last = input[input.length - 1];
    if (last.type === "function_call_result") {
      return [text(`[${req.systemInstructions}] ${(last.output as { text: string }).text}`)];
    }
    const words = contentText(last).split(" ");
    const names = req.tools.map((t) => t.name).concat(req.handoffs.map((h) => h.toolName));
    const call = (name: string, args: object): AgentOutputItem => ({
      type: "function_call", callId: `c-${name}`, name, arguments: JSON.stringify(args), status: "completed",
    });
    if (words[0] === "lookup" && names.includes("lookup_order")) return [call("lookup_order", { order_id: words[1] })];
    if (words[0] === "refund" && names.includes("refund_order")) return [call("refund_order", { order_id: words[1] })];
    if (words[0] === "transfer" && req.handoffs.length) return [call(req.handoffs[0].toolName, {})];
    return [text(`[${req.systemInstructions}] you said ${words.join(" ")}`)];
  }
  async getResponse(req: ModelRequest): Promise<ModelResponse> {
    return { output: this.respond(req), usage: new Usage({ inputTokens: 10, outputTokens: 2, totalTokens: 12 }) };
  }
  async *getStreamedResponse(req: ModelRequest): AsyncIterable<StreamEvent> {
    const output = this.respond(req);
    for (const o of output) {
      if (o.type === "message" && o.role === "assistant") {
        for (const c of o.content) {
          if (c.type === "output_text") {
            for (const chunk of c.text.match(/.{1,8}/gs) ?? []) yield { type: "output_text_delta", delta: chunk };
          }
        }
      }
    }
    yield {
      type: "response_done",
      response: { id: "resp-1", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 }, output: output as protocol.OutputModelItem[] },
    };
  }
}

function contentText(item: Record<string, unknown>): string {
  const c = item.content;
  return typeof c === "string" ? c : (c as Array<{ text?: string }>).map((p) => p.text ?? "").join("");
}

function text(t: string): AgentOutputItem {
  return { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: t }] };
}

function runner(model: Scripted): OpenAIAgentsRunner {
  const lookupOrder = tool({
    name: "lookup_order", description: "Look up an order.", parameters: z.object({ order_id: z.string() }),
    execute: async ({ order_id }) => `order ${order_id}: a chair, $20`,
  });
  const refundOrder = tool({
    name: "refund_order", description: "Refund an order.", parameters: z.object({ order_id: z.string() }), needsApproval: true,
    execute: async ({ order_id }, rc?: RunContext<DexToolContext>) => {
      refunds.push(`${order_id} ${rc!.context.idempotencyKey}`);
      return `refunded order ${order_id}`;
    },
  });
  const refunds_ = new Agent({ name: "refunds", instructions: "refunds desk", model, tools: [refundOrder] });
  const triage = new Agent({ name: "triage", instructions: "triage desk", model, tools: [lookupOrder], handoffs: [refunds_] });
  return new OpenAIAgentsRunner(() => triage, { toolEffects: { lookup_order: "read", refund_order: "non_idempotent_write" } });
}

function live(): CallContext & ToolCallContext & { text: string } {
  const c = {
    text: "", signal: new AbortController().signal,
    writeTextDelta(t: string) { c.text += t; }, writeReasoningDelta() {}, writeEvent() {}, heartbeat() {}, saveHeartbeatCheckpoint() {},
  };
  return c;
}

/** A session in miniature: stores messages, settles every call (approving
 * or not), and drives runModelStep until the turn completes. */
class Session {
  messages: Message[] = [];
  approve = (_c: { tool_name: string }) => true;
  constructor(readonly r: OpenAIAgentsRunner, readonly host: TurnContext["host_tools"] = []) {}
  async send(textIn: string, mode = "chat"): Promise<{ text: string; calls: ToolCall[]; streamed: string }> {
    const turnId = `turn-${this.messages.filter((m) => m.role === "user").length + 1}`;
    this.store((await this.r.buildUserMessage({ agent: "orders", text: textIn })).message!, turnId);
    const calls: ToolCall[] = [];
    let runState = "";
    const ctx = live();
    for (let i = 0; i < 10; i++) {
      const turn = {
        agent: "orders", session_id: "s1", turn_id: turnId, messages: this.messages, run_state: runState, tool_calls: calls,
        policies: { policies: {}, default_effect: "unclassified" }, host_tools: this.host, interaction_mode: mode,
      } as unknown as TurnContext;
      const out = await this.r.runModelStep({ turn } as never, ctx);
      const step = out.turn_completed ?? out.tool_calls_requested!;
      for (const m of step.new_messages ?? []) this.store(m, turnId);
      if (out.turn_completed) {
        const last = [...this.messages].reverse().find((m) => m.role === "assistant" && m.text);
        return { text: last?.text ?? "", calls, streamed: ctx.text };
      }
      runState = out.tool_calls_requested!.run_state!;
      for (const c of out.tool_calls_requested!.tool_calls ?? []) {
        const rec = { tool_call_id: c.tool_call_id, tool_name: c.tool_name, effect: c.policy?.effect, requires_approval: !!c.policy?.requires_approval } as ToolCall;
        if (c.policy?.requires_approval && !this.approve(c as never)) {
          Object.assign(rec, { status: "rejected", rejection_message: "Refunds need a manager." });
        } else if (this.host.some((h) => h.name === c.tool_name)) {
          Object.assign(rec, { status: "succeeded", output: "host ran it" });
        } else {
          const res = await this.r.executeDeferredToolCall(
            { agent: "orders", session_id: "s1", turn_id: turnId, attempt: 1, idempotency_key: `s1/${turnId}/${c.tool_call_id}`, tool_call: c } as never,
            live(),
          );
          Object.assign(rec, res.result ? { status: "succeeded", output: res.result.output } : { status: "failed", error: res.error?.message });
        }
        calls.push(rec);
      }
    }
    throw new Error("the turn did not end");
  }
  private store(m: { role?: string; text?: string; framework_item?: string; tool_call_id?: string; tool_name?: string; tool_status?: string }, turnId: string) {
    this.messages.push({
      sequence: this.messages.length + 1, role: m.role ?? "", text: m.text ?? "", framework_item: m.framework_item ?? "",
      tool_call_id: m.tool_call_id ?? "", tool_name: m.tool_name ?? "", turn_id: turnId, tool_status: m.tool_status ?? "",
    });
  }
}

test("tools, approvals and a durable handoff", async () => {
  refunds.length = 0;
  const model = new Scripted();
  const r = runner(model);
  const cfg = await r.configure({ agent: "orders", runner_config: "{}", protocol_version: 1 });
  assert.deepEqual(cfg.tools, ["lookup_order", "transfer_to_refunds", "refund_order"]);
  assert.equal(cfg.tool_policies!["refund_order"].requires_approval, true);
  const s = new Session(r);
  let turn = await s.send("lookup 7");
  assert.equal(turn.text, "[triage desk] order 7: a chair, $20");
  assert.equal(turn.streamed, "[triage desk] order 7: a chair, $20");
  assert.equal(turn.calls[0].effect, "read");
  turn = await s.send("transfer me");
  assert.match(turn.text, /^\[refunds desk\] /);
  s.approve = (c) => c.tool_name !== "refund_order";
  turn = await s.send("refund 9");
  assert.equal(turn.text, "[refunds desk] Refunds need a manager.");
  assert.deepEqual(refunds, []);
  s.approve = () => true;
  turn = await s.send("refund 9");
  assert.equal(turn.text, "[refunds desk] refunded order 9");
  assert.deepEqual(refunds, ["9 s1/turn-4/c-refund_order"]);
  assert.deepEqual(model.requests.map((q) => q.systemInstructions), [
    "triage desk", "triage desk", "triage desk", "refunds desk", "refunds desk", "refunds desk", "refunds desk", "refunds desk",
  ]);
});

test("a planning turn offers only write_todos, with the plan-mode note", async () => {
  const model = new Scripted();
  const r = runner(model);
  await r.configure({ agent: "orders", runner_config: "{}", protocol_version: 1 });
  const host = ["ask_user", "write_todos"].map((name) => ({ name, description: "", input_schema: '{"type":"object"}', effect: "read" }));
  const s = new Session(r, host as never);
  await s.send("plan it", "planning");
  assert.deepEqual(model.requests[0].tools.map((t) => t.name), ["write_todos"]);
  assert.deepEqual((model.requests[0].input as Array<Record<string, unknown>>).map(contentText), [context.planningNote, "plan it"]);
});

test("compaction cuts where every call has its result and keeps the handoff", async () => {
  const model = new Scripted();
  const r = runner(model);
  await r.configure({ agent: "orders", runner_config: "{}", protocol_version: 1 });
  const s = new Session(r);
  await s.send("transfer me " + "x".repeat(300));
  await s.send("thanks");
  const turn = { agent: "orders", messages: s.messages } as unknown as TurnContext;
  const cut = r.selectCompactionCutoff({ turn, retained_token_budget: 1 } as never);
  // Never between the handoff call (2) and its result (3); never the last.
  assert.equal(cut.through_sequence, s.messages[s.messages.length - 2].sequence);
  const out = await r.summarizeContext({ turn, messages: s.messages.slice(0, 4), previous_summary: "", input_token_budget: 0 } as never, live());
  assert.equal(out.summary, "summary of 4 items\n\n[Dex] Active agent: refunds");
});

test("the plan and summary texts are Stepwise's", () => {
  const stepwise = path.resolve(__dirname, "..", "..", "..", "..", "plugins", "stepwise");
  const plan = fs.readFileSync(path.join(stepwise, "plan.go"), "utf8");
  const compact = fs.readFileSync(path.join(stepwise, "compact.go"), "utf8");
  const goConst = (src: string, name: string): string => {
    const m = new RegExp(`${name} = ((?:"(?:[^"\\\\]|\\\\.)*"(?: \\+\\s*)?)+)`).exec(src);
    assert.ok(m, `${name} is not in stepwise`);
    return m[1].match(/"(?:[^"\\]|\\.)*"/g)!.map((q) => JSON.parse(q) as string).join("");
  };
  assert.equal(context.planNoteHeader, goConst(plan, "PlanNoteHeader"));
  assert.equal(context.planNoteFooter, goConst(plan, "PlanNoteFooter"));
  assert.equal(context.planningNote, goConst(plan, "PlanningNote"));
  assert.equal(context.summaryNoteHeader, goConst(compact, "ContextSummaryNoteHeader"));
  assert.equal(context.summaryInstructions, goConst(compact, "ContextSummaryInstructions"));
  assert.equal(context.summaryOmissionFormat, goConst(compact, "ContextSummaryOmissionFormat"));
  assert.equal(
    context.planNote({ interaction_mode: "chat", plan: { revision: 2, status: "active", tasks: [{ content: "Look up order 7", status: "pending" }] } }),
    "[Dex] The current plan (revision 2, active):\n1. [pending] Look up order 7\nKeep the task statuses current with write_todos.",
  );
});

test("a compaction inside the turn never orphans a result", async () => {
  const model = new Scripted();
  const r = runner(model);
  await r.configure({ agent: "orders", runner_config: "{}", protocol_version: 1 });
  const call = { type: "function_call", callId: "cb", name: "lookup_order", arguments: "{}", status: "completed" };
  const messages = [
    { sequence: 4, role: "assistant", text: "", framework_item: JSON.stringify(call), tool_call_id: "", tool_name: "", turn_id: "turn-1", tool_status: "" },
  ];
  const rec = (id: string) => ({ tool_call_id: id, tool_name: "lookup_order", status: "succeeded", output: id });
  const turn = {
    agent: "orders", session_id: "s1", turn_id: "turn-1", messages, run_state: "x", tool_calls: [rec("ca"), rec("cb")],
    policies: { policies: {}, default_effect: "unclassified" }, host_tools: [], interaction_mode: "chat",
    context_summary: { generation: 1, first_sequence: 1, last_sequence: 3, text: "they looked order a up", created_at: "" },
  } as unknown as TurnContext;
  const out = await r.runModelStep({ turn } as never, live());
  const results = (model.requests[0].input as Array<Record<string, unknown>>).filter((i) => i.type === "function_call_result");
  assert.deepEqual(results.map((i) => i.callId), ["cb"]);
  assert.deepEqual((out.turn_completed!.new_messages ?? []).filter((m) => m.role === "tool").map((m) => m.tool_call_id), ["cb"]);
  assert.deepEqual(r.buildUnfinishedTurnMessages({ turn } as never).messages!.map((m) => m.tool_call_id), ["cb"]);
});

test("a needsApproval rule is decided per call, and one that throws asks", async () => {
  const model = new Scripted();
  const lookupOrder = tool({
    name: "lookup_order", description: "Look up an order.", parameters: z.object({ order_id: z.string() }),
    // Order 13 needs a person; a malformed ID makes the rule throw.
    needsApproval: async (_rc, { order_id }) => {
      if (!/^\d+$/.test(order_id)) throw new Error(`bad order id ${order_id}`);
      return order_id === "13";
    },
    execute: async ({ order_id }) => `order ${order_id}: a chair, $20`,
  });
  const agent = new Agent({ name: "triage", instructions: "triage desk", model, tools: [lookupOrder] });
  const r = new OpenAIAgentsRunner(() => agent, { toolEffects: { lookup_order: "read" } });
  const cfg = await r.configure({ agent: "orders", runner_config: "{}", protocol_version: 1 });
  // At configure the rule has no arguments: it throws, so the tool asks.
  assert.equal(cfg.tool_policies!["lookup_order"].requires_approval, true);
  const s = new Session(r);
  const asked: string[] = [];
  s.approve = (c) => {
    asked.push((c as unknown as { arguments: string }).arguments);
    return true;
  };
  await s.send("lookup 7");
  await s.send("lookup 13");
  await s.send("lookup x9");
  assert.deepEqual(asked, ['{"order_id":"13"}', '{"order_id":"x9"}']);
});
