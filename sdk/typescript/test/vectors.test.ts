// Replays the runner contract's shared test vectors
// (proto/testdata/vectors, see its README) through the SDK's gRPC service,
// as the Go SDK's vectors_test.go does: a vector runner plays each call's
// runner side, a raw gRPC client in the host's place checks the request the
// runner got, the frames on the wire and the status.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protobuf from "protobufjs";

import { CallContext, Runner, ToolCallContext, newServer, protoDir, runnerService, runnerServiceDefinition } from "../src";

const repo = path.resolve(__dirname, "..", "..", "..", "..");
const vectorsDir = path.join(repo, "proto", "testdata", "vectors");
const root = new protobuf.Root().loadSync(path.join(protoDir, "dex", "runner", "v1", "runner.proto"), { keepCase: true });
const type = (name: string) => root.lookupType("dex.runner.v1." + name);

interface VectorCall {
  method: string;
  request: Record<string, unknown>;
  runner: { frames?: Record<string, unknown>[]; response?: Record<string, unknown>; wait_for_cancel?: boolean };
  cancel_after_frames?: number;
  wire?: { frames?: Record<string, unknown>[]; status?: string; message_contains?: string };
}

interface Vector {
  contract_version: number;
  case: string;
  description: string;
  calls: VectorCall[];
}

// The message types of each method: request, response, stream frame.
const methods: Record<string, { request: string; response: string; frame?: string }> = {
  BuildUserMessage: { request: "BuildUserMessageRequest", response: "BuildUserMessageResponse" },
  SelectCompactionCutoff: { request: "CompactionCutoffRequest", response: "CompactionCutoffResponse" },
  RunModelStep: { request: "RunModelStepRequest", response: "RunModelStepResponse", frame: "RunModelStepFrame" },
  ExecuteDeferredToolCall: { request: "ExecuteToolRequest", response: "ExecuteToolResponse", frame: "ToolCallFrame" },
  PollToolTask: { request: "PollToolTaskRequest", response: "ExecuteToolResponse", frame: "ToolCallFrame" },
  SummarizeContext: { request: "SummarizeContextRequest", response: "SummarizeContextResponse", frame: "SummarizeContextFrame" },
};

/** prune drops what proto3 cannot tell from absent (empty strings, zeros,
 * false, empty lists and messages), and reads an event's payload as JSON:
 * SDKs may order its keys differently. */
function prune(v: unknown, key = ""): unknown {
  if (key === "payload_json" && typeof v === "string") {
    return JSON.parse(v);
  }
  if (Array.isArray(v)) {
    const out = v.map((x) => prune(x));
    return out.length ? out : undefined;
  }
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const p = prune(x, k);
      if (p !== undefined) {
        out[k] = p;
      }
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (v === "" || v === 0 || v === false || v === null) {
    return undefined;
  }
  return v;
}

/** normal is a message as the proto reads it, pruned: the same for the
 * vector's proto3 JSON and for what grpc-js decoded. */
function normal(typeName: string, obj: unknown): unknown {
  const t = type(typeName);
  const m = t.fromObject(obj as Record<string, unknown>);
  return prune(t.toObject(m, { longs: Number, enums: String, defaults: false, oneofs: false })) ?? {};
}

let current: { call: VectorCall; cancelled: Promise<void>; markCancelled: () => void } | undefined;

function want(typeName: string, got: unknown): void {
  assert.ok(current, "no call set");
  assert.deepEqual(normal(typeName, got), normal(typeName, current.call.request), "the runner got another request than the vector's");
}

async function play(ctx: CallContext): Promise<void> {
  const call = current!.call;
  for (const f of call.runner.frames ?? []) {
    const [kind, body] = Object.entries(f)[0] as [string, Record<string, string>];
    switch (kind) {
      case "text_delta":
        ctx.writeTextDelta(body.text);
        break;
      case "reasoning_delta":
        ctx.writeReasoningDelta(body.text);
        break;
      case "event":
        ctx.writeEvent(body.type, JSON.parse(body.payload_json));
        break;
      case "heartbeat_checkpoint":
        (ctx as ToolCallContext).saveHeartbeatCheckpoint(body.text);
        break;
      default:
        throw new Error("a runner does not write " + kind + " frames");
    }
  }
  if (call.runner.wait_for_cancel) {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("the call was never cancelled")), 10_000);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(t);
        current!.markCancelled();
        resolve();
      });
    });
    throw new Error("cancelled");
  }
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const vectorRunner: Runner = {
  info: () => ({ name: "vectors", version: "1" }),
  configure: () => ({}),
  buildUserMessage: (req) => {
    want("BuildUserMessageRequest", req);
    return current!.call.runner.response as any;
  },
  runModelStep: async (req, ctx) => {
    want("RunModelStepRequest", req);
    await play(ctx);
    return current!.call.runner.response as any;
  },
  executeDeferredToolCall: async (req, ctx) => {
    want("ExecuteToolRequest", req);
    await play(ctx);
    return current!.call.runner.response as any;
  },
  pollToolTask: async (req, ctx) => {
    want("PollToolTaskRequest", req);
    await play(ctx);
    return current!.call.runner.response as any;
  },
  selectCompactionCutoff: (req) => {
    want("CompactionCutoffRequest", req);
    return current!.call.runner.response as any;
  },
  summarizeContext: async (req, ctx) => {
    want("SummarizeContextRequest", req);
    await play(ctx);
    return current!.call.runner.response as any;
  },
};

const server = newServer();
server.addService(runnerServiceDefinition(), runnerService(vectorRunner));
const port = new Promise<number>((resolve, reject) =>
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
);
const Client = grpc.makeGenericClientConstructor(runnerServiceDefinition(), "Runner");
let client: any;
after(() => {
  client?.close();
  server.forceShutdown();
});

function statusName(code: number): string {
  return grpc.status[code];
}

async function replay(call: VectorCall): Promise<void> {
  const m = methods[call.method];
  assert.ok(m, "unknown method " + call.method);
  let markCancelled = () => {};
  const cancelled = new Promise<void>((r) => (markCancelled = r));
  current = { call, cancelled, markCancelled };
  const wantStatus = call.wire?.status ?? "OK";
  const wantText = call.wire?.message_contains ?? "";

  if (!m.frame) {
    const [err, res] = await new Promise<[grpc.ServiceError | null, unknown]>((resolve) =>
      client[call.method](call.request, (e: grpc.ServiceError | null, r: unknown) => resolve([e, r])),
    );
    assert.equal(err ? statusName(err.code) : "OK", wantStatus, `${call.method}: ${err?.details}`);
    if (!err) {
      assert.deepEqual(normal(m.response, res), normal(m.response, call.runner.response));
    }
    return;
  }

  const expected: unknown[] = (call.wire?.frames ?? call.runner.frames ?? []).map((f) => normal(m.frame!, f));
  if (!call.wire?.frames && call.runner.response) {
    expected.push(normal(m.frame, { outcome: call.runner.response }));
  }
  const got: unknown[] = [];
  const stream = client[call.method](call.request) as grpc.ClientReadableStream<unknown>;
  const end = await new Promise<{ code: number; details: string }>((resolve) => {
    stream.on("data", (f: Record<string, unknown>) => {
      if (f.frame === "heartbeat") {
        return;
      }
      got.push(normal(m.frame!, f));
      if (call.cancel_after_frames && got.length === call.cancel_after_frames) {
        stream.cancel();
      }
    });
    stream.on("error", (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details }));
    stream.on("status", (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) {
        resolve({ code: s.code, details: s.details });
      }
    });
  });
  assert.equal(statusName(end.code), wantStatus, `${call.method} ended ${statusName(end.code)} ${end.details}`);
  assert.ok(end.details.includes(wantText), `${call.method}: status message ${JSON.stringify(end.details)} lacks ${JSON.stringify(wantText)}`);
  assert.deepEqual(got, expected, `${call.method}: the frames on the wire`);
  if (call.runner.wait_for_cancel) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      cancelled,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("the runner's signal did not abort after the cancel")), 10_000);
      }),
    ]).finally(() => clearTimeout(timer));
  }
}

const files = fs.readdirSync(vectorsDir).filter((f) => f.endsWith(".json")).sort();

test("the vectors are there", () => {
  assert.ok(files.length >= 8, `found ${files.length} vectors in ${vectorsDir}`);
});

for (const file of files) {
  const v = JSON.parse(fs.readFileSync(path.join(vectorsDir, file), "utf8")) as Vector;
  test(`vector ${v.case}`, async () => {
    assert.equal(v.contract_version, 1);
    assert.equal(v.case + ".json", file);
    client ??= new Client(`127.0.0.1:${await port}`, grpc.credentials.createInsecure());
    for (const call of v.calls) {
      await replay(call);
    }
  });
}
