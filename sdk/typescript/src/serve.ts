// serve: the go-plugin side of a runner plugin, as runner.proto's header
// describes it for plugins written without go-plugin: the magic cookie and
// the protocol version, AutoMTLS with a fresh certificate trusting only the
// host's, a port in the allowed range, the one handshake line on stdout,
// the gRPC health service, go-plugin's controller (Shutdown) and stdio
// services, logs as go-hclog JSON on stderr, and a graceful stop.

import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import { logger } from "./log";
import { Runner, protocolVersion } from "./runner";
import { ServiceState, runnerService } from "./service";
import { handshakeCert, makeCert } from "./tls";

/** The magic cookie of the runner plugins' go-plugin handshake. */
export const magicCookieKey = "DEX_RUNNER_PLUGIN";
export const magicCookieValue = "9f1c7e2a-dex-runner-plugin";

/** The package's proto directory: runner.proto, the health service and
 * go-plugin's services. */
export const protoDir = path.resolve(__dirname, "..", "..", "proto");

/** The options the SDK loads runner.proto with; its generated types assume
 * them. */
export const loadOptions: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

/** loadService returns a service's definition from a proto file of the
 * package. */
export function loadService(file: string, dotted: string): grpc.ServiceDefinition {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(path.join(protoDir, file), { ...loadOptions, includeDirs: [protoDir] }));
  let v: unknown = pkg;
  for (const part of dotted.split(".")) {
    v = (v as Record<string, unknown>)[part];
  }
  const ctor = v as { service?: grpc.ServiceDefinition } | undefined;
  if (!ctor?.service) {
    throw new Error(`service ${dotted} is not in ${file}`);
  }
  return ctor.service;
}

/** runnerServiceDefinition is dex.runner.v1.Runner's definition. */
export function runnerServiceDefinition(): grpc.ServiceDefinition {
  return loadService("dex/runner/v1/runner.proto", "dex.runner.v1.Runner");
}

/** ServeOptions configure serve. */
export interface ServeOptions {
  /** shutdownGraceMs is how long a stop waits for calls in flight before
   * it cuts them (default 1500). */
  shutdownGraceMs?: number;
  /** env is the environment to read the handshake from (default
   * process.env). */
  env?: NodeJS.ProcessEnv;
}

class HandshakeError extends Error {}

function checkHandshakeEnv(env: NodeJS.ProcessEnv): void {
  if (env[magicCookieKey] !== magicCookieValue) {
    throw new HandshakeError(
      "This program is a runner plugin of dex-agent-worker. It is not meant to be run directly:\n" +
        "list it under plugins in the worker's config (command: node, args: [.../dist/main.js]).",
    );
  }
  const versions = (env.PLUGIN_PROTOCOL_VERSIONS ?? "").split(",").map((v) => v.trim());
  if (!versions.includes(String(protocolVersion))) {
    throw new HandshakeError(
      `this runner speaks runner contract version ${protocolVersion}; the host offers ${JSON.stringify(env.PLUGIN_PROTOCOL_VERSIONS ?? "")}`,
    );
  }
  if (!env.PLUGIN_CLIENT_CERT) {
    throw new HandshakeError("PLUGIN_CLIENT_CERT is not set: the host must use go-plugin's AutoMTLS");
  }
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

/** newServer is a gRPC server that takes what the Go host sends: a request
 * carries the whole transcript, so it accepts up to 2 GB, not gRPC's
 * default 4 MB. */
export function newServer(): grpc.Server {
  return new grpc.Server({
    "grpc.max_receive_message_length": 2147483647,
    "grpc.max_send_message_length": 2147483647,
  });
}

/**
 * serve runs runner as a plugin of dex-agent-worker and resolves once it
 * prints its handshake line. Call it from the program's main module:
 *
 *     serve(new MyRunner());
 *
 * Nothing but the handshake line may reach stdout: serve sends console.log
 * and its siblings to stderr as log lines. Run by hand (without the host's
 * environment) it says so on stderr and exits with status 1.
 */
export async function serve(runner: Runner, options: ServeOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  try {
    checkHandshakeEnv(env);
  } catch (err) {
    if (err instanceof HandshakeError) {
      process.stderr.write(err.message + "\n");
      process.exit(1);
    }
    throw err;
  }
  console.log = (...args: unknown[]) => logger.info(args.map(String).join(" "));
  console.info = console.log;
  console.debug = (...args: unknown[]) => logger.debug(args.map(String).join(" "));
  console.warn = (...args: unknown[]) => logger.warn(args.map(String).join(" "));
  console.error = (...args: unknown[]) => logger.error(args.map(String).join(" "));
  process.on("unhandledRejection", (err) => {
    logger.error("unhandled rejection", { error: err instanceof Error ? err.stack : String(err) });
  });

  const cert = makeCert();
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(env.PLUGIN_CLIENT_CERT ?? ""),
    [{ private_key: Buffer.from(cert.keyPem), cert_chain: Buffer.from(cert.certPem) }],
    true, // require a client certificate, signed by PLUGIN_CLIENT_CERT
  );
  const server = newServer();
  const state = new ServiceState();
  server.addService(runnerServiceDefinition(), runnerService(runner, state));
  server.addService(loadService("health.proto", "grpc.health.v1.Health"), {
    Check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const name = call.request.service;
      if (name === "" || name === "plugin") {
        cb(null, { status: state.stopping ? "NOT_SERVING" : "SERVING" });
      } else {
        cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${name}` });
      }
    },
  });
  const stdioStreams = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  server.addService(loadService("go_plugin.proto", "plugin.GRPCController"), {
    Shutdown: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      cb(null, {});
      setImmediate(() => stop("the host called GRPCController.Shutdown"));
    },
  });
  server.addService(loadService("go_plugin.proto", "plugin.GRPCStdio"), {
    // The host copies what arrives here to its log. The plugin writes to
    // stderr, which the host reads directly, so the stream stays open and
    // empty until the plugin stops.
    StreamStdio: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      stdioStreams.add(call);
      call.on("cancelled", () => stdioStreams.delete(call));
    },
  });

  const grace = options.shutdownGraceMs ?? 1500;
  const stop = (why: string) => {
    if (state.stopping) {
      return;
    }
    logger.info("stopping", { reason: why });
    state.stop();
    for (const s of stdioStreams) {
      s.end();
    }
    const force = setTimeout(() => {
      logger.warn("calls still running after the grace period: cutting them");
      server.forceShutdown();
      process.exit(0);
    }, grace);
    force.unref();
    server.tryShutdown(() => process.exit(0));
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));

  const port = await listen(server, creds, env);
  logger.info("serving", { port, pid: process.pid, node: process.version });
  process.stdout.write(`1|${protocolVersion}|tcp|127.0.0.1:${port}|grpc|${handshakeCert(cert.der)}\n`);
}
