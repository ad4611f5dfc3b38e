// A TypeScript framework example, unchanged but for its store: each refund
// first appends its idempotency key to refunds-started.log in the gate
// directory, then stops at the FileGate "refund" when the test armed it
// (the same files as agenttest.FileGate), so a test can SIGKILL the plugin
// in the middle of the write.
//
//     node ts_gated_refund.js EXAMPLE_DIR GATE_DIR STORE_CLASS METHOD
//
// STORE_CLASS.METHOD in the example's dist/orders_agent.js writes a refund;
// one of its arguments is the call's idempotency key.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const [example, gateDir, store, method] = process.argv.slice(2);
const agent = require(path.join(example, "dist", "orders_agent.js"));
const proto = agent[store].prototype;
const refund = proto[method];
proto[method] = function (...args) {
  const key = args.find((a) => typeof a === "string" && a.includes("/turn-"));
  fs.appendFileSync(path.join(gateDir, "refunds-started.log"), key + "\n");
  const gate = path.join(gateDir, "gate-refund.");
  if (fs.existsSync(gate + "armed")) {
    fs.writeFileSync(gate + "reached", String(process.pid));
    while (!fs.existsSync(gate + "release")) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
  return refund.apply(this, args);
};
require(path.join(example, "dist", "main.js"));
