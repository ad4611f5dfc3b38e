// The orders agent, written the way the OpenAI Agents SDK for JavaScript's
// documentation writes agents: tools made with tool() and a zod schema, and
// an Agent with instructions. Nothing here knows about dex-agent-worker
// except the run context the refund reads its idempotency key from.

import * as fs from "node:fs";

import { Agent, tool, type Model, type RunContext } from "@openai/agents";
import type { DexToolContext } from "@dex-agents/runner/openai-agents";
import { z } from "zod";

const catalog: Record<string, { item: string; totalCents: number }> = {
  "3": { item: "monitor arm", totalCents: 4900 },
  "7": { item: "office chair", totalCents: 6250 },
};

/** Refunds in a JSON file keyed by idempotency key: a refund made again
 * with the same key applies once. */
export class Ledger {
  constructor(readonly path: string) {}

  private read(): Record<string, { order_id: string; amount_cents: number }> {
    return fs.existsSync(this.path) ? JSON.parse(fs.readFileSync(this.path, "utf8") || "{}") : {};
  }

  refundedCents(orderId: string): number {
    return Object.values(this.read())
      .filter((r) => r.order_id === orderId)
      .reduce((n, r) => n + r.amount_cents, 0);
  }

  add(key: string, orderId: string, amountCents: number): void {
    const all = this.read();
    if (!(key in all)) {
      all[key] = { order_id: orderId, amount_cents: amountCents };
      fs.writeFileSync(this.path + ".tmp", JSON.stringify(all, null, 1));
      fs.renameSync(this.path + ".tmp", this.path);
    }
  }
}

export function buildAgent(model: Model | string, ledger: Ledger): Agent<DexToolContext> {
  const lookupOrder = tool({
    name: "lookup_order",
    description: "Look up an order by its ID: the item, total and what was refunded.",
    parameters: z.object({ order_id: z.string() }),
    execute: async ({ order_id }) => {
      const o = catalog[order_id];
      if (!o) return `There is no order ${order_id}.`;
      const refunded = ledger.refundedCents(order_id);
      return `Order ${order_id}: ${o.item}, $${(o.totalCents / 100).toFixed(2)}, $${(refunded / 100).toFixed(2)} refunded.`;
    },
  });
  const refundOrder = tool({
    name: "refund_order",
    description: "Refund part or all of an order, in cents.",
    parameters: z.object({ order_id: z.string(), amount_cents: z.number().int() }),
    needsApproval: true,
    execute: async ({ order_id, amount_cents }, runContext?: RunContext<DexToolContext>) => {
      if (!catalog[order_id]) return `There is no order ${order_id}.`;
      ledger.add(runContext!.context.idempotencyKey, order_id, amount_cents);
      return `Refunded $${(amount_cents / 100).toFixed(2)} for order ${order_id}.`;
    },
  });
  return new Agent<DexToolContext>({
    name: "orders",
    instructions: "You help customers with their orders. Look an order up before you refund it.",
    model,
    tools: [lookupOrder, refundOrder],
  });
}
