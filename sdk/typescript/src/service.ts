// The dex.runner.v1.Runner gRPC service over a Runner: requests in, the
// runner's answers checked against the contract, live frames and one
// outcome out, errors as the statuses the host reads.

import * as grpc from "@grpc/grpc-js";

import {
  checkBuildUserMessageResponse,
  checkCompactionCutoffResponse,
  checkConfigureResponse,
  checkExecuteToolResponse,
  checkRunModelStepResponse,
} from "./check";
import { checkEvent } from "./events";
import { logger } from "./log";
import { CallContext, Runner, RunnerError, ToolCallContext, capabilitiesOf, protocolVersion } from "./runner";

/** ServiceState is shared by the service and serve(): once stopping, the
 * failures of calls still running are UNAVAILABLE (the host retries them).
 * A stop lets running calls finish within its grace period; it does not
 * abort them. */
export class ServiceState {
  stopping = false;

  stop(): void {
    this.stopping = true;
  }
}

/** Malformed is an answer that breaks the contract: INVALID_ARGUMENT. */
class Malformed extends Error {}

function toStatus(err: unknown, method: string, state: ServiceState): grpc.ServiceError {
  let code = grpc.status.UNKNOWN;
  let message = `${method}: ${err instanceof Error ? err.message : String(err)}`;
  if (err instanceof RunnerError) {
    code = err.code;
    message = err.message;
  } else if (err instanceof Malformed) {
    code = grpc.status.INVALID_ARGUMENT;
    message = err.message;
  }
  if (state.stopping && code !== grpc.status.FAILED_PRECONDITION && code !== grpc.status.INVALID_ARGUMENT) {
    code = grpc.status.UNAVAILABLE;
    message = `${message} (the plugin is shutting down)`;
  }
  const e = new Error(message) as grpc.ServiceError;
  e.code = code;
  e.details = message;
  e.metadata = new grpc.Metadata();
  return e;
}

function refuse(reason: string): void {
  if (reason) {
    throw new Malformed(reason);
  }
}

function unary<Req, Res>(method: string, state: ServiceState, f: (req: Req) => Res | Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => f(call.request))
      .then(
        (res) => callback(null, res),
        (err: unknown) => {
          const st = toStatus(err, method, state);
          logger.warn(method + " failed", { error: st.details, code: grpc.status[st.code] });
          callback(st);
        },
      );
  };
}

type Frame = Record<string, unknown>;

/** liveContext is the CallContext of one streaming call: each write is one
 * frame, in order, until the call returns. */
function liveContext(call: grpc.ServerWritableStream<unknown, Frame>, signal: AbortSignal, checkpoints: boolean): ToolCallContext & { close(): void } {
  let open = true;
  const write = (f: Frame) => {
    if (open && !call.cancelled && !call.writableEnded) {
      call.write(f);
    }
  };
  return {
    signal,
    writeTextDelta: (text) => write({ text_delta: { text: text.toWellFormed() } }),
    writeReasoningDelta: (text) => write({ reasoning_delta: { text: text.toWellFormed() } }),
    writeEvent: (type, payload) => {
      const reason = checkEvent(type, payload);
      if (reason) {
        throw new Error("writeEvent: " + reason);
      }
      write({ event: { type, payload_json: JSON.stringify(payload) } });
    },
    heartbeat: () => write({ heartbeat: {} }),
    saveHeartbeatCheckpoint: (text) => {
      if (!checkpoints) {
        throw new Error("saveHeartbeatCheckpoint: only tool calls keep checkpoints");
      }
      write({ heartbeat_checkpoint: { text } });
    },
    close: () => {
      open = false;
    },
  };
}

function streaming<Req, Res>(
  method: string,
  state: ServiceState,
  checkpoints: boolean,
  f: (req: Req, ctx: ToolCallContext) => Promise<Res>,
  check: (req: Req, res: Res) => string,
): grpc.handleServerStreamingCall<Req, Frame> {
  return (call) => {
    const abort = new AbortController();
    call.on("cancelled", () => abort.abort(new Error("the host cancelled the call")));
    const ctx = liveContext(call as grpc.ServerWritableStream<unknown, Frame>, abort.signal, checkpoints);
    Promise.resolve()
      .then(() => f(call.request, ctx))
      .then((outcome) => {
        refuse(check(call.request, outcome));
        return outcome;
      })
      .then(
        (outcome) => {
          ctx.close();
          if (!call.cancelled) {
            call.write({ outcome });
          }
          call.end();
        },
        (err: unknown) => {
          ctx.close();
          const st = toStatus(err, method, state);
          if (!call.cancelled) {
            logger.warn(method + " failed", { error: st.details, code: grpc.status[st.code] });
          }
          call.emit("error", st);
        },
      );
  };
}

function unimplemented(method: string, capability: string): RunnerError {
  return new RunnerError(grpc.status.UNIMPLEMENTED, `runner does not implement ${method} (capability ${capability})`);
}

/** runnerService is the dex.runner.v1.Runner service over runner. */
export function runnerService(runner: Runner, state: ServiceState = new ServiceState()): grpc.UntypedServiceImplementation {
  const caps = capabilitiesOf(runner);
  /* eslint-disable @typescript-eslint/no-explicit-any */
  return {
    Info: unary("Info", state, async (req: any) => {
      const info = await runner.info(req);
      return { name: info.name, version: info.version, protocol_versions: [protocolVersion], capabilities: caps };
    }),
    Configure: unary("Configure", state, async (req: any) => {
      const res = (await runner.configure(req)) ?? {};
      refuse(checkConfigureResponse(res));
      return res;
    }),
    BuildUserMessage: unary("BuildUserMessage", state, async (req: any) => {
      const res = await runner.buildUserMessage(req);
      refuse(checkBuildUserMessageResponse(res));
      return res;
    }),
    RunModelStep: streaming(
      "RunModelStep",
      state,
      false,
      (req: any, ctx) => runner.runModelStep(req, ctx as CallContext),
      (req: any, res) => checkRunModelStepResponse(res, req.turn),
    ),
    ExecuteDeferredToolCall: streaming(
      "ExecuteDeferredToolCall",
      state,
      true,
      (req: any, ctx) => runner.executeDeferredToolCall(req, ctx),
      (req: any, res) => checkExecuteToolResponse("ExecuteDeferredToolCall", res, false, !!req.supports_tool_tasks),
    ),
    BuildUnfinishedTurnMessages: unary("BuildUnfinishedTurnMessages", state, async (req: any) => {
      if (!runner.buildUnfinishedTurnMessages) {
        throw unimplemented("BuildUnfinishedTurnMessages", "unfinished_turn_messages");
      }
      return runner.buildUnfinishedTurnMessages(req);
    }),
    PollToolTask: streaming(
      "PollToolTask",
      state,
      true,
      (req: any, ctx) => {
        if (!runner.pollToolTask) {
          throw unimplemented("PollToolTask", "tool_task_polling");
        }
        return runner.pollToolTask(req, ctx);
      },
      (_req, res) => checkExecuteToolResponse("PollToolTask", res, true, true),
    ),
    CancelToolTask: unary("CancelToolTask", state, async (req: any) => {
      if (!runner.cancelToolTask) {
        throw unimplemented("CancelToolTask", "tool_task_cancelling");
      }
      return (await runner.cancelToolTask(req)) ?? {};
    }),
    EstimateInputTokens: unary("EstimateInputTokens", state, async (req: any) => {
      if (!runner.estimateInputTokens) {
        throw unimplemented("EstimateInputTokens", "input_token_estimation");
      }
      return runner.estimateInputTokens(req);
    }),
    SelectCompactionCutoff: unary("SelectCompactionCutoff", state, async (req: any) => {
      if (!caps.compaction || !runner.selectCompactionCutoff) {
        throw unimplemented("SelectCompactionCutoff", "compaction");
      }
      const res = await runner.selectCompactionCutoff(req);
      refuse(checkCompactionCutoffResponse(res, req));
      return res;
    }),
    SummarizeContext: streaming(
      "SummarizeContext",
      state,
      false,
      (req: any, ctx) => {
        if (!caps.compaction || !runner.summarizeContext) {
          throw unimplemented("SummarizeContext", "compaction");
        }
        return runner.summarizeContext(req, ctx as CallContext);
      },
      (_req, res) => (res ? "" : "SummarizeContext returned no response"),
    ),
  };
}
