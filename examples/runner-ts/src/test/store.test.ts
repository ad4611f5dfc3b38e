import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { runTool } from "../agent";
import { Store, dollars } from "../store";

function tempStore(): Store {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runner-ts-store-"));
  return Store.open(path.join(dir, "sub", "orders.json"));
}

test("the store is seeded like examples/orders", () => {
  const s = tempStore();
  const o = s.get("7");
  assert.deepEqual(o, { id: "7", customer: "customer-7", item: "office chair", total_cents: 6250, refunded_cents: 0, status: "delivered" });
  assert.throws(() => s.get("42"), /no such order: 42/);
  assert.equal(dollars(6250), "$62.50");
  assert.equal(dollars(5), "$0.05");
});

test("a refund applies once per idempotency key", () => {
  const s = tempStore();
  const first = s.refund("7", 1000, "sess/turn-1/c1");
  assert.equal(first.order.refunded_cents, 1000);
  assert.equal(first.order.status, "partially_refunded");
  const again = s.refund("7", 1000, "sess/turn-1/c1");
  assert.deepEqual(again.refund, first.refund);
  assert.equal(s.get("7").refunded_cents, 1000);
  assert.equal(s.get("7").refunds?.length, 1);
  // The rest (amount 0 means all that is left).
  assert.equal(s.refund("7", 0, "sess/turn-1/c2").order.status, "refunded");
  assert.throws(() => s.refund("7", 1, "sess/turn-1/c3"), /cannot refund 1 cents of order 7: 0 cents remain refundable/);
});

test("a lock left by a killed process is taken over", () => {
  const s = tempStore();
  // A PID that is not running.
  fs.writeFileSync(s.file + ".lock", "2147483646");
  assert.equal(s.get("3").item, "monitor arm");
  assert.equal(fs.existsSync(s.file + ".lock"), false);
});

test("the tools answer failures the model should see as tool errors", () => {
  const s = tempStore();
  assert.deepEqual(runTool(s, "no_such_tool", "{}", "k"), { error: "unknown tool no_such_tool" });
  assert.deepEqual(runTool(s, "lookup_order", "{}", "k"), { error: "lookup_order: order_id (a string) is required" });
  assert.deepEqual(runTool(s, "lookup_order", "[1]", "k"), { error: "lookup_order: the arguments must be a JSON object" });
  assert.deepEqual(runTool(s, "lookup_order", '{"order_id":"42"}', "k"), { error: "no such order: 42" });
  const lookup = runTool(s, "lookup_order", '{"order_id":"3"}', "k");
  assert.ok("result" in lookup && JSON.parse(lookup.result).item === "monitor arm");
  assert.deepEqual(runTool(s, "refund_order", '{"order_id":"3","amount_cents":250}', "s/turn-1/r"), {
    result: "Refunded $2.50 of order 3 (monitor arm); order status: partially_refunded.",
  });
  assert.deepEqual(runTool(s, "refund_order", '{"order_id":"3","amount_cents":999999}', "s/turn-1/r2"), {
    error: "cannot refund 999999 cents of order 3: 3000 cents remain refundable",
  });
});
