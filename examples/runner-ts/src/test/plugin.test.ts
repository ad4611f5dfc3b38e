// Starts dist/main.js as the go-plugin host does and talks to it over
// mutual TLS: the handshake line, Info, Configure, the health service, a
// tool call and the optional calls it does not implement.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import { makeCert, protoDir } from "@dex-agents/runner";

const root = path.resolve(__dirname, "..", "..");
const mainJS = path.join(root, "dist", "main.js");
const loadOptions = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

function load(file: string): grpc.GrpcObject {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, loadOptions));
}

function pem(der: Buffer): string {
  return "-----BEGIN CERTIFICATE-----\n" + der.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n?$/, "\n") + "-----END CERTIFICATE-----\n";
}

interface Plugin {
  proc: ChildProcess;
  line: string;
  stderr: string[];
}

const started: ChildProcess[] = [];
after(() => {
  for (const p of started) {
    p.kill("SIGKILL");
  }
});

function startPlugin(env: Record<string, string>): Promise<Plugin> {
  const proc = spawn(process.execPath, [mainJS], { env, stdio: ["ignore", "pipe", "pipe"] });
  started.push(proc);
  const stderr: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on("line", (l) => stderr.push(l));
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: proc.stdout! });
    lines.once("line", (line) => resolve({ proc, line, stderr }));
    proc.once("exit", (code) => reject(Object.assign(new Error(`exit ${code}: ${stderr.join("\n")}`), { code, stderr })));
  });
}

test("a plugin started without the host's magic cookie says so and exits 1", async () => {
  const err = (await startPlugin({}).catch((e) => e)) as { code: number; stderr: string[] };
  assert.equal(err.code, 1);
  assert.match(err.stderr.join("\n"), /plugin of dex-agent-worker/);
});

test("the plugin serves the runner protocol over mutual TLS", async () => {
  const client = makeCert();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runner-ts-plugin-"));
  const p = await startPlugin({
    DEX_RUNNER_PLUGIN: "9f1c7e2a-dex-runner-plugin",
    PLUGIN_PROTOCOL_VERSIONS: "1",
    PLUGIN_MIN_PORT: "20000",
    PLUGIN_MAX_PORT: "25000",
    PLUGIN_CLIENT_CERT: client.certPem,
    TEST_KEY: "sk-test",
  });
  const m = /^1\|1\|tcp\|127\.0\.0\.1:(\d+)\|grpc\|([A-Za-z0-9+/]+)$/.exec(p.line);
  assert.ok(m, `handshake line ${p.line}`);
  const port = Number(m[1]);
  assert.ok(port >= 20000 && port <= 25000, `port ${port}`);
  const serverDer = Buffer.from(m[2], "base64");
  const creds = grpc.credentials.createSsl(Buffer.from(pem(serverDer)), Buffer.from(client.keyPem), Buffer.from(client.certPem));
  const opts = { "grpc.ssl_target_name_override": "localhost" };
  const addr = `127.0.0.1:${port}`;
  const Runner = (load(path.join(protoDir, "dex", "runner", "v1", "runner.proto")) as any).dex.runner.v1.Runner;
  const Health = (load(path.join(protoDir, "health.proto")) as any).grpc.health.v1.Health;
  const runner = new Runner(addr, creds, opts);
  const health = new Health(addr, creds, opts);
  const unary = (c: any, method: string, req: unknown) =>
    new Promise<any>((resolve, reject) => c[method](req, (err: unknown, res: unknown) => (err ? reject(err) : resolve(res))));
  const stream = (method: string, req: unknown) =>
    new Promise<{ frames: any[]; error?: grpc.ServiceError }>((resolve) => {
      const frames: any[] = [];
      const s = runner[method](req);
      s.on("data", (f: any) => frames.push(f));
      s.on("error", (error: grpc.ServiceError) => resolve({ frames, error }));
      s.on("end", () => resolve({ frames }));
    });

  assert.deepEqual(await unary(health, "Check", { service: "plugin" }), { status: "SERVING" });
  const info = await unary(runner, "Info", {});
  assert.equal(info.name, "dex-runner-ts");
  assert.deepEqual(info.protocol_versions, [1]);
  assert.equal(info.capabilities.unfinished_turn_messages, true);
  assert.equal(info.capabilities.transcript_cache, false);
  assert.equal(info.capabilities.compaction, false);

  // A bad runner_config names the problem.
  await assert.rejects(unary(runner, "Configure", { agent: "orders", runner_config: "null" }), /runner_config is required/);
  await assert.rejects(
    unary(runner, "Configure", { agent: "orders", runner_config: JSON.stringify({ store_path: path.join(dir, "o.json"), model: { name: "m", api_key_env: "NOT_GRANTED" } }) }),
    /api_key_env names NOT_GRANTED, which is not set/,
  );
  await assert.rejects(
    unary(runner, "Configure", { agent: "orders", runner_config: JSON.stringify({ store_path: "x", model: { name: "m", api_key_env: "TEST_KEY" }, extra: 1 }) }),
    /unknown key "extra"/,
  );
  const cfg = { store_path: path.join(dir, "orders.json"), model: { base_url: "http://127.0.0.1:9/v1", name: "m", api_key_env: "TEST_KEY" } };
  assert.deepEqual(await unary(runner, "Configure", { agent: "orders", runner_config: JSON.stringify(cfg), protocol_version: 1 }), {
    tools: ["lookup_order", "refund_order"],
    setting_choices: [],
    tool_policies: { lookup_order: { effect: "read" }, refund_order: { effect: "non_idempotent_write" } },
    default_tool_effect: "",
  });
  assert.ok(fs.existsSync(cfg.store_path), "Configure seeds the store");

  const um = await unary(runner, "BuildUserMessage", { agent: "orders", text: "hi" });
  assert.equal(um.message.role, "user");
  assert.equal(um.message.framework_item, '{"role":"user","content":"hi"}');

  // A tool call: exactly one outcome frame, then OK.
  const call = (tool: string, args: string) => ({
    agent: "orders",
    session_id: "s",
    turn_id: "turn-1",
    idempotency_key: "s/turn-1/c1",
    attempt: 1,
    tool_call: { tool_call_id: "c1", tool_name: tool, arguments: args, effect: "read", status: "approved" },
  });
  let r = await stream("ExecuteDeferredToolCall", call("lookup_order", '{"order_id":"7"}'));
  assert.equal(r.error, undefined);
  assert.equal(r.frames.length, 1);
  assert.equal(r.frames[0].frame, "outcome");
  assert.equal(JSON.parse(r.frames[0].outcome.result.output).item, "office chair");
  r = await stream("ExecuteDeferredToolCall", call("nope", "{}"));
  assert.deepEqual(r.frames.map((f) => f.outcome?.error?.message), ["unknown tool nope"]);

  // A model call that cannot reach its provider fails the call (a retry
  // may succeed), with no outcome.
  r = await stream("RunModelStep", {
    turn: { agent: "orders", session_id: "s", turn_id: "turn-1", attempt: 1, messages: [{ sequence: 1, role: "user", text: "hi", framework_item: um.message.framework_item }] },
  });
  assert.equal(r.error?.code, grpc.status.UNKNOWN, String(r.error));
  assert.match(r.error?.details ?? "", /RunModelStep/);
  assert.equal(r.frames.filter((f) => f.frame === "outcome").length, 0);

  // The optional calls it does not implement.
  await assert.rejects(unary(runner, "EstimateInputTokens", { turn: {} }), (e: grpc.ServiceError) => e.code === grpc.status.UNIMPLEMENTED);
  r = await stream("PollToolTask", { agent: "orders" });
  assert.equal(r.error?.code, grpc.status.UNIMPLEMENTED);

  // An unknown agent fails with its name.
  await assert.rejects(unary(runner, "BuildUserMessage", { agent: "nobody", text: "x" }), /agent "nobody" is not configured/);

  // A client without the host's certificate is refused.
  const stranger = makeCert();
  const other = new Runner(addr, grpc.credentials.createSsl(Buffer.from(pem(serverDer)), Buffer.from(stranger.keyPem), Buffer.from(stranger.certPem)), opts);
  await assert.rejects(unary(other, "Info", {}), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
  other.close();

  // Every stderr line is a go-hclog JSON line.
  for (const l of p.stderr) {
    const v = JSON.parse(l);
    assert.ok(typeof v["@level"] === "string" && typeof v["@message"] === "string", l);
    // go-plugin reads only this timestamp format (microseconds).
    assert.match(v["@timestamp"], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, l);
  }

  // SIGTERM stops it gracefully.
  runner.close();
  health.close();
  const code = await new Promise<number | null>((resolve) => {
    p.proc.once("exit", (c) => resolve(c));
    p.proc.kill("SIGTERM");
  });
  assert.equal(code, 0);
});
