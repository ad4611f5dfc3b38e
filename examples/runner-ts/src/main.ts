// dex-runner-ts is a dex-agent-worker runner plugin written in TypeScript:
// the orders demo agent on the AI SDK. The SDK (@dex-agents/runner, in
// sdk/typescript) does the go-plugin handshake, AutoMTLS, the health and
// shutdown services and the contract's wire; this program is the agent
// loop (runner.ts) and its tools (agent.ts, store.ts).
//
// The host starts it as `node dist/main.js` with only the environment its
// config grants, plus go-plugin's variables.

import { serve, setLogModule } from "@dex-agents/runner";

import { OrdersRunner } from "./runner";

setLogModule("runner-ts");
serve(new OrdersRunner()).catch((err: unknown) => {
  process.stderr.write(`dex-runner-ts: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
