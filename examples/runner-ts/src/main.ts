// dex-runner-ts is a dex-agent-worker runner plugin written in TypeScript:
// the orders demo agent on the AI SDK. It implements
// proto/dex/runner/v1/runner.proto by hand and the go-plugin handshake that
// the proto's header describes for plugins written without go-plugin.
//
// The host starts it as `node dist/main.js` with only the environment its
// config grants, plus go-plugin's variables.

import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import { logger } from "./log";
import { beginShutdown, pluginName, pluginVersion, runnerService } from "./runner";
import { handshakeCert, makeCert } from "./tls";

const magicCookieKey = "DEX_RUNNER_PLUGIN";
const magicCookieValue = "9f1c7e2a-dex-runner-plugin";
const protocolVersion = "1";
// How long a graceful stop waits for calls in flight before it cuts them.
const shutdownGraceMs = 1500;

// The package root: dist/.. (this file runs as dist/main.js).
const root = path.resolve(__dirname, "..");
const runnerProto = path.resolve(root, "..", "..", "proto", "dex", "runner", "v1", "runner.proto");

function fatal(message: string): never {
  process.stderr.write(message + "\n");
  process.exit(1);
}

function checkHandshakeEnv(env: NodeJS.ProcessEnv): void {
  if (env[magicCookieKey] !== magicCookieValue) {
    fatal(
      "This binary is a plugin of dex-agent-worker. It is not meant to be run directly:\n" +
        "list it under plugins in the worker's config (command: node, args: [.../dist/main.js]).",
    );
  }
  const versions = (env.PLUGIN_PROTOCOL_VERSIONS ?? "").split(",").map((v) => v.trim());
  if (!versions.includes(protocolVersion)) {
    fatal(`dex-runner-ts speaks runner protocol version ${protocolVersion}; the host offers ${JSON.stringify(env.PLUGIN_PROTOCOL_VERSIONS ?? "")}`);
  }
  if (!env.PLUGIN_CLIENT_CERT) {
    fatal("PLUGIN_CLIENT_CERT is not set: the host must use go-plugin's AutoMTLS");
  }
}

const loadOptions: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

function load(file: string): grpc.GrpcObject {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, loadOptions));
}

function service(pkg: grpc.GrpcObject, dotted: string): grpc.ServiceDefinition {
  let v: unknown = pkg;
  for (const part of dotted.split(".")) {
    v = (v as Record<string, unknown>)[part];
  }
  const ctor = v as { service?: grpc.ServiceDefinition } | undefined;
  if (!ctor?.service) {
    throw new Error(`service ${dotted} is not in its proto file`);
  }
  return ctor.service;
}

function bind(server: grpc.Server, port: number, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, creds, (err, p) => (err ? reject(err) : resolve(p))));
}

/** listen binds a port between PLUGIN_MIN_PORT and PLUGIN_MAX_PORT when
 * they are set (from a random start, as go-plugin does), else any port. */
async function listen(server: grpc.Server, creds: grpc.ServerCredentials, env: NodeJS.ProcessEnv): Promise<number> {
  const min = Number(env.PLUGIN_MIN_PORT || 0);
  const max = Number(env.PLUGIN_MAX_PORT || 0);
  if (!(min > 0 && max >= min)) {
    return bind(server, 0, creds);
  }
  const span = max - min + 1;
  const start = Math.floor(Math.random() * span);
  let last: unknown;
  for (let i = 0; i < span; i++) {
    try {
      return await bind(server, min + ((start + i) % span), creds);
    } catch (err) {
      last = err;
    }
  }
  throw new Error(`no free port between ${min} and ${max}: ${(last as Error)?.message}`);
}

async function main(): Promise<void> {
  const env = process.env;
  checkHandshakeEnv(env);
  // Nothing but the handshake line may reach stdout.
  console.log = (...args: unknown[]) => logger.info(args.map(String).join(" "));
  console.info = console.log;
  console.debug = (...args: unknown[]) => logger.debug(args.map(String).join(" "));
  // Libraries that print warnings and errors get log lines too.
  console.warn = (...args: unknown[]) => logger.warn(args.map(String).join(" "));
  console.error = (...args: unknown[]) => logger.error(args.map(String).join(" "));

  const cert = makeCert();
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(env.PLUGIN_CLIENT_CERT ?? ""),
    [{ private_key: Buffer.from(cert.keyPem), cert_chain: Buffer.from(cert.certPem) }],
    true, // require a client certificate, signed by PLUGIN_CLIENT_CERT
  );
  const server = new grpc.Server({
    // A request carries the whole transcript: accept what the Go side
    // allows (2 GB) instead of gRPC's default 4 MB.
    "grpc.max_receive_message_length": 2147483647,
    "grpc.max_send_message_length": 2147483647,
  });
  let stopping = false;
  server.addService(service(load(runnerProto), "dex.runner.v1.Runner"), runnerService());
  server.addService(service(load(path.join(root, "proto", "health.proto")), "grpc.health.v1.Health"), {
    Check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const name = call.request.service;
      if (name === "" || name === "plugin") {
        cb(null, { status: stopping ? "NOT_SERVING" : "SERVING" });
      } else {
        cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${name}` });
      }
    },
  });
  const goPlugin = load(path.join(root, "proto", "go_plugin.proto"));
  const stdioStreams = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  server.addService(service(goPlugin, "plugin.GRPCController"), {
    Shutdown: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      cb(null, {});
      setImmediate(() => stop("the host called GRPCController.Shutdown"));
    },
  });
  server.addService(service(goPlugin, "plugin.GRPCStdio"), {
    // The host copies what arrives here to its log. This plugin writes to
    // stderr, which the host reads directly, so the stream stays open and
    // empty until the plugin stops.
    StreamStdio: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      stdioStreams.add(call);
      call.on("cancelled", () => stdioStreams.delete(call));
    },
  });

  const stop = (why: string) => {
    if (stopping) {
      return;
    }
    stopping = true;
    beginShutdown();
    logger.info("stopping", { reason: why });
    for (const s of stdioStreams) {
      s.end();
    }
    const force = setTimeout(() => {
      logger.warn("calls still running after the grace period: cutting them");
      server.forceShutdown();
      process.exit(0);
    }, shutdownGraceMs);
    force.unref();
    server.tryShutdown(() => process.exit(0));
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));

  const port = await listen(server, creds, env);
  logger.info("serving", { name: pluginName, version: pluginVersion, port, pid: process.pid, node: process.version });
  process.stdout.write(`1|${protocolVersion}|tcp|127.0.0.1:${port}|grpc|${handshakeCert(cert.der)}\n`);
}

process.on("unhandledRejection", (err) => {
  logger.error("unhandled rejection", { error: err instanceof Error ? err.stack : String(err) });
});

main().catch((err: unknown) => {
  logger.error("start failed", { error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
