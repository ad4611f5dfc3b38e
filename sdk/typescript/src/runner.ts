// The Runner interface: what a runner implements, in TypeScript terms. It
// mirrors the Go SDK (pluginapi.Runner and its optional interfaces): the
// five required methods, and optional ones whose presence the SDK announces
// in Info as capabilities.

import { status } from "@grpc/grpc-js";

import type {
  BuildUnfinishedTurnMessagesRequest,
  BuildUnfinishedTurnMessagesResponse,
  BuildUserMessageRequest,
  BuildUserMessageResponse,
  CancelToolTaskRequest,
  CancelToolTaskResponse,
  Capabilities,
  CompactionCutoffRequest,
  CompactionCutoffResponse,
  ConfigureRequest,
  ConfigureResponse,
  EstimateInputTokensRequest,
  EstimateInputTokensResponse,
  ExecuteToolRequest,
  ExecuteToolResponse,
  InfoRequest,
  PollToolTaskRequest,
  RunModelStepRequest,
  RunModelStepResponse,
  SummarizeContextRequest,
  SummarizeContextResponse,
} from "./types";

/** The runner contract version this SDK speaks (dex.runner.v1). */
export const protocolVersion = 1;

type MaybePromise<T> = T | Promise<T>;

/** CallContext is what a streaming call gives the runner: the call's
 * cancellation and its live writer. Live frames are best effort: the host
 * may drop them and a retry repeats them, so never put a result only in a
 * live frame. Writes after the call returned are dropped. */
export interface CallContext {
  /** signal aborts when the host cancels the call (the user stopped the
   * turn, the Step timed out) or the plugin is stopping. Stop working and
   * return (or throw) when it does. */
  readonly signal: AbortSignal;
  /** writeTextDelta writes one chunk of visible model text: one frame. */
  writeTextDelta(text: string): void;
  /** writeReasoningDelta writes one chunk of a reasoning summary. */
  writeReasoningDelta(text: string): void;
  /** writeEvent writes one event whose payload is a JSON object: a standard
   * type a runner may write (runnerEventTypes) or a custom type with an
   * adapter prefix ("myframework.handoff"). It throws for a type the
   * session writes itself, a custom type without a prefix, or a standard
   * event without its fields. */
  writeEvent(type: string, payload: Record<string, unknown>): void;
  /** heartbeat records liveness, for long loops that write nothing else. */
  heartbeat(): void;
}

/** ToolCallContext is the CallContext of a tool call, with checkpoints. */
export interface ToolCallContext extends CallContext {
  /** saveHeartbeatCheckpoint records text that a retried attempt reads as
   * ExecuteToolRequest.heartbeat_checkpoint, so it can resume remote work. */
  saveHeartbeatCheckpoint(text: string): void;
}

/** InfoResult names the runner; the SDK adds the protocol versions and the
 * capabilities. */
export interface InfoResult {
  name: string;
  version: string;
}

/**
 * Runner is the contract every runner implements: the agent loop that turns
 * a session's transcript into the next model call. The session calls it
 * from durable Steps, so every method may run again after a crash or a
 * retry: keep no state between calls that the request does not carry. One
 * plugin process serves every agent that names it; each request names its
 * agent.
 */
export interface Runner {
  /** info names the plugin, for logs. */
  info(req: InfoRequest): MaybePromise<InfoResult>;
  /** configure receives one agent's runner_config (JSON text); throw an
   * error that names the problem for bad config. */
  configure(req: ConfigureRequest): MaybePromise<ConfigureResponse>;
  /** buildUserMessage turns user text into the framework's user item,
   * role "user". */
  buildUserMessage(req: BuildUserMessageRequest): MaybePromise<BuildUserMessageResponse>;
  /** runModelStep makes at most one model call and returns exactly one
   * outcome: turn_completed or tool_calls_requested. It never runs a tool
   * it can defer. */
  runModelStep(req: RunModelStepRequest, ctx: CallContext): Promise<RunModelStepResponse>;
  /** executeDeferredToolCall runs one approved tool call once. A failure
   * the model should see is the error outcome, not a thrown error. */
  executeDeferredToolCall(req: ExecuteToolRequest, ctx: ToolCallContext): Promise<ExecuteToolResponse>;

  /** Optional (unfinished_turn_messages): the messages to store when a turn
   * fails or stops after items appeared. */
  buildUnfinishedTurnMessages?(req: BuildUnfinishedTurnMessagesRequest): MaybePromise<BuildUnfinishedTurnMessagesResponse>;
  /** Optional (tool_task_polling): polls a tool task a call started. */
  pollToolTask?(req: PollToolTaskRequest, ctx: ToolCallContext): Promise<ExecuteToolResponse>;
  /** Optional (tool_task_cancelling): stops a task's remote work, best
   * effort; idempotent by task ID. */
  cancelToolTask?(req: CancelToolTaskRequest): MaybePromise<CancelToolTaskResponse>;
  /** Optional (input_token_estimation): the size of the next model input. */
  estimateInputTokens?(req: EstimateInputTokensRequest): MaybePromise<EstimateInputTokensResponse>;
  /** Optional (compaction, with summarizeContext): which stored messages a
   * summary may replace. */
  selectCompactionCutoff?(req: CompactionCutoffRequest): MaybePromise<CompactionCutoffResponse>;
  /** Optional (compaction, with selectCompactionCutoff): the summary. */
  summarizeContext?(req: SummarizeContextRequest, ctx: CallContext): Promise<SummarizeContextResponse>;
}

/** capabilitiesOf reports the optional methods runner implements. */
export function capabilitiesOf(runner: Runner): Capabilities {
  return {
    unfinished_turn_messages: typeof runner.buildUnfinishedTurnMessages === "function",
    tool_task_polling: typeof runner.pollToolTask === "function",
    tool_task_cancelling: typeof runner.cancelToolTask === "function",
    input_token_estimation: typeof runner.estimateInputTokens === "function",
    compaction: typeof runner.selectCompactionCutoff === "function" && typeof runner.summarizeContext === "function",
    // The host sends the whole transcript with every call.
    transcript_cache: false,
  };
}

/** RunnerError fails a call with a gRPC status code the host reads (see
 * runner.proto's "Errors"). Any other thrown error is UNKNOWN. */
export class RunnerError extends Error {
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
    this.name = "RunnerError";
  }
}

/** permanent fails a call that retrying cannot fix (a provider's 400, 401,
 * 403, 404 or 422): the host fails the Step at once. */
export function permanent(message: string): RunnerError {
  return new RunnerError(status.FAILED_PRECONDITION, message);
}
