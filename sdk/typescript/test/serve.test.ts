// Starts a runner built on the SDK (fixtures/echo.ts) as the go-plugin host
// does and talks to it over mutual TLS: the handshake line, the health
// service, Info, a model call, and a stop through go-plugin's controller.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, ChildProcess } from "node:child_process";
import * as path from "node:path";
import * as readline from "node:readline";
import * as grpc from "@grpc/grpc-js";

import { loadService, makeCert, runnerServiceDefinition } from "../src";

const echoJS = path.resolve(__dirname, "..", "fixtures", "echo.js");

function pem(der: Buffer): string {
  return "-----BEGIN CERTIFICATE-----\n" + der.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n?$/, "\n") + "-----END CERTIFICATE-----\n";
}

const started: ChildProcess[] = [];
after(() => {
  for (const p of started) {
    p.kill("SIGKILL");
  }
});

interface Plugin {
  proc: ChildProcess;
  line: string;
  stdout: string[];
  stderr: string[];
}

function startPlugin(env: Record<string, string>): Promise<Plugin> {
  const proc = spawn(process.execPath, [echoJS], { env, stdio: ["ignore", "pipe", "pipe"] });
  started.push(proc);
  const stderr: string[] = [];
  const stdout: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on("line", (l) => stderr.push(l));
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on("line", (line) => {
      stdout.push(line);
      if (stdout.length === 1) {
        resolve({ proc, line, stdout, stderr });
      }
    });
    proc.once("exit", (code) => reject(Object.assign(new Error(`exit ${code}: ${stderr.join("\n")}`), { code, stderr })));
  });
}

test("a runner started without the host's magic cookie says so and exits 1", async () => {
  const err = (await startPlugin({}).catch((e) => e)) as { code: number; stderr: string[] };
  assert.equal(err.code, 1);
  assert.match(err.stderr.join("\n"), /runner plugin of dex-agent-worker/);
});

test("a runner refuses a host that offers another contract version", async () => {
  const err = (await startPlugin({ DEX_RUNNER_PLUGIN: "9f1c7e2a-dex-runner-plugin", PLUGIN_PROTOCOL_VERSIONS: "2", PLUGIN_CLIENT_CERT: "x" }).catch(
    (e) => e,
  )) as { code: number; stderr: string[] };
  assert.equal(err.code, 1);
  assert.match(err.stderr.join("\n"), /speaks runner contract version 1; the host offers "2"/);
});

test("serve answers the handshake and serves the contract over mutual TLS", async () => {
  const host = makeCert();
  const p = await startPlugin({
    DEX_RUNNER_PLUGIN: "9f1c7e2a-dex-runner-plugin",
    PLUGIN_PROTOCOL_VERSIONS: "1",
    PLUGIN_MIN_PORT: "25001",
    PLUGIN_MAX_PORT: "30000",
    PLUGIN_CLIENT_CERT: host.certPem,
  });
  const m = /^1\|1\|tcp\|127\.0\.0\.1:(\d+)\|grpc\|([A-Za-z0-9+/]+)$/.exec(p.line);
  assert.ok(m, `handshake line ${p.line}`);
  const port = Number(m[1]);
  assert.ok(port >= 25001 && port <= 30000, `port ${port}`);
  const serverDer = Buffer.from(m[2], "base64");
  const creds = grpc.credentials.createSsl(Buffer.from(pem(serverDer)), Buffer.from(host.keyPem), Buffer.from(host.certPem));
  const opts = { "grpc.ssl_target_name_override": "localhost" };
  const addr = `127.0.0.1:${port}`;
  /* eslint-disable @typescript-eslint/no-explicit-any */
  const Runner = grpc.makeGenericClientConstructor(runnerServiceDefinition(), "Runner") as any;
  const Health = grpc.makeGenericClientConstructor(loadService("health.proto", "grpc.health.v1.Health"), "Health") as any;
  const Controller = grpc.makeGenericClientConstructor(loadService("go_plugin.proto", "plugin.GRPCController"), "Controller") as any;
  const runner = new Runner(addr, creds, opts);
  const health = new Health(addr, creds, opts);
  const controller = new Controller(addr, creds, opts);
  const unary = (c: any, method: string, req: unknown) =>
    new Promise<any>((resolve, reject) => c[method](req, (err: unknown, res: unknown) => (err ? reject(err) : resolve(res))));

  assert.deepEqual(await unary(health, "Check", { service: "plugin" }), { status: "SERVING" });
  const info = await unary(runner, "Info", {});
  assert.equal(info.name, "echo");
  assert.deepEqual(info.protocol_versions, [1]);
  assert.deepEqual(info.capabilities, {
    unfinished_turn_messages: false,
    tool_task_polling: false,
    tool_task_cancelling: false,
    input_token_estimation: false,
    compaction: false,
    transcript_cache: false,
  });
  const frames: any[] = [];
  await new Promise<void>((resolve, reject) => {
    const s = runner.RunModelStep({ turn: { agent: "a", messages: [{ sequence: 1, role: "user", text: "hello" }] } });
    s.on("data", (f: any) => frames.push(f));
    s.on("error", reject);
    s.on("end", resolve);
  });
  assert.deepEqual(frames.map((f) => f.frame), ["text_delta", "outcome"]);
  assert.equal(frames[1].outcome.turn_completed.new_messages[0].text, "hello");
  await assert.rejects(unary(runner, "EstimateInputTokens", { turn: {} }), (e: grpc.ServiceError) => e.code === grpc.status.UNIMPLEMENTED);

  // A client without the host's certificate is refused.
  const stranger = makeCert();
  const other = new Runner(addr, grpc.credentials.createSsl(Buffer.from(pem(serverDer)), Buffer.from(stranger.keyPem), Buffer.from(stranger.certPem)), opts);
  await assert.rejects(unary(other, "Info", {}), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
  other.close();

  // go-plugin's controller stops it; nothing but the handshake line
  // reached stdout, and every stderr line is go-hclog JSON.
  const exited = new Promise<number | null>((resolve) => p.proc.once("exit", (c) => resolve(c)));
  await unary(controller, "Shutdown", {});
  assert.equal(await exited, 0);
  assert.deepEqual(p.stdout, [p.line]);
  assert.ok(p.stderr.some((l) => JSON.parse(l)["@message"] === "serving"), p.stderr.join("\n"));
  for (const l of p.stderr) {
    const v = JSON.parse(l);
    assert.ok(typeof v["@level"] === "string" && typeof v["@message"] === "string", l);
    assert.match(v["@timestamp"], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, l);
  }
  runner.close();
  health.close();
  controller.close();
});
