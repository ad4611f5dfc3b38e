// The Runner service of proto/dex/runner/v1/runner.proto.
//
// Every call derives what it needs from its request: the transcript, the
// run state and the tool call records come with each RunModelStep, so a call
// repeated after a crash or a retry does the same thing. The only state the
// process keeps is each agent's parsed runner_config, which the host sends
// again (Configure) after every restart.

import { createOpenAI } from "@ai-sdk/openai";
import { APICallError, RetryError, jsonSchema, streamText, tool } from "ai";
import type { AssistantModelMessage, LanguageModelUsage, ModelMessage, ToolSet } from "ai";
import { RunnerError, logger, permanent, resolvePolicy, status } from "@dex-agents/runner";
import type {
  BuildUnfinishedTurnMessagesRequest,
  BuildUnfinishedTurnMessagesResponse,
  BuildUserMessageRequest,
  BuildUserMessageResponse,
  CallContext,
  ConfigureRequest,
  ConfigureResponse,
  DeferredToolCall,
  ExecuteToolRequest,
  ExecuteToolResponse,
  InfoResult,
  Runner,
  RunModelStepRequest,
  RunModelStepResponse,
  ToolPolicy,
  TurnContext,
  Usage,
} from "@dex-agents/runner";

import { AgentConfig, ConfigError, ownTools, parseConfig, runTool } from "./agent";
import {
  FrameworkMessage,
  ModelCallLimitToolResultFormat,
  assistantMessage,
  isFinal,
  rebuild,
  resultOf,
  toolCallsOf,
  toolResultMessage,
  userMessage,
} from "./conversation";
import { Store } from "./store";

export const pluginName = "dex-runner-ts";
export const pluginVersion = "0.1.0";

// ---------------------------------------------------------------------------
// Errors

// Provider answers that retrying cannot fix (the proto's FAILED_PRECONDITION).
const permanentHTTP = new Set([400, 401, 403, 404, 422]);

/** providerError names a model provider's failure; one retrying cannot fix
 * is permanent. Other errors pass unchanged: the SDK reports them. */
function providerError(err: unknown, what: string): unknown {
  let cause: unknown = err;
  if (RetryError.isInstance(cause)) {
    cause = cause.lastError;
  }
  if (!APICallError.isInstance(cause)) {
    return err;
  }
  const code = cause.statusCode;
  const message = `${what}: the model provider answered ${code ?? "without a status"}: ${cause.message}`;
  return code !== undefined && permanentHTTP.has(code) ? permanent(message) : new RunnerError(status.UNKNOWN, message);
}

// ---------------------------------------------------------------------------
// Agents

interface Agent {
  cfg: AgentConfig;
  store: Store;
}

const agents = new Map<string, Agent>();

function agentOf(name: string): Agent {
  const a = agents.get(name);
  if (!a) {
    throw new RunnerError(status.UNKNOWN, `agent ${JSON.stringify(name)} is not configured in this runner`);
  }
  return a;
}

// ---------------------------------------------------------------------------
// Policies: pluginapi.PolicySet.Resolve, and the Stepwise runner's order
// (a host tool: its definition's effect; an own tool: the explicit
// policy, else the tool's own effect; an unknown tool: unclassified
// without approval, so it fails in its tool Step at once).

function policyOf(turn: TurnContext, name: string): ToolPolicy {
  const host = turn.host_tools.find((h) => h.name === name);
  if (host) {
    return resolvePolicy(turn.policies, name, host.effect);
  }
  const own = ownTools.find((t) => t.name === name);
  if (!own) {
    return { effect: "unclassified", requires_approval: false };
  }
  return resolvePolicy(turn.policies, name, own.effect);
}

/** offeredTools are the model's tools, declared without execute functions
 * so that streamText hands their calls back: the agent's own, then the
 * tools the session runs (whose names win). A planning turn offers only
 * write_todos. */
function offeredTools(turn: TurnContext): ToolSet {
  const tools: ToolSet = {};
  const planning = turn.interaction_mode === "planning";
  if (!planning) {
    for (const t of ownTools) {
      tools[t.name] = tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) });
    }
  }
  for (const h of turn.host_tools) {
    if (planning && h.name !== "write_todos") {
      continue;
    }
    let schema: Record<string, unknown> = { type: "object" };
    if (h.input_schema) {
      try {
        schema = JSON.parse(h.input_schema) as Record<string, unknown>;
      } catch {
        throw new RunnerError(status.UNKNOWN, `host tool ${h.name}: input_schema is not JSON`);
      }
    }
    tools[h.name] = tool({ description: h.description, inputSchema: jsonSchema(schema) });
  }
  return tools;
}

// ---------------------------------------------------------------------------
// The run state: the turn's model call count and the calls awaiting
// results (whose results the next model call stores).

interface RunState {
  model_calls: number;
  pending: string[];
}

function parseRunState(s: string): RunState {
  if (!s) {
    return { model_calls: 0, pending: [] };
  }
  try {
    const v = JSON.parse(s) as Partial<RunState>;
    return { model_calls: Number(v.model_calls ?? 0), pending: Array.isArray(v.pending) ? v.pending.map(String) : [] };
  } catch (err) {
    throw new RunnerError(status.UNKNOWN, `run state is not this runner's: ${(err as Error).message}`);
  }
}

function instructionsOf(cfg: AgentConfig, turn: TurnContext): string {
  let system = cfg.instructions;
  if (turn.context_summary?.text) {
    system += "\n\nA summary of the earlier conversation:\n" + turn.context_summary.text;
  }
  const plan = turn.plan;
  if (plan && plan.tasks?.length) {
    system += `\n\nThe session's plan (revision ${plan.revision}, ${plan.status}):\n` + plan.tasks.map((t) => `- [${t.status}] ${t.content}`).join("\n");
  }
  return system;
}

function usageOf(u: LanguageModelUsage | undefined): Usage & { input_tokens: number; output_tokens: number } {
  const out: Usage & { input_tokens: number; output_tokens: number } = {
    input_tokens: u?.inputTokens ?? 0,
    output_tokens: u?.outputTokens ?? 0,
    cached_input_tokens: u?.inputTokenDetails?.cacheReadTokens ?? 0,
    reasoning_tokens: u?.outputTokenDetails?.reasoningTokens ?? 0,
  };
  if (u?.totalTokens !== undefined) {
    out.total_tokens = u.totalTokens;
  }
  return out;
}

/** fixToolCallIDs gives every tool call of the response an ID the session
 * takes (non-empty, no "/", unique within the turn), in the stored message
 * too. Providers' IDs pass unchanged. */
function fixToolCallIDs(msg: AssistantModelMessage, turn: TurnContext): void {
  if (typeof msg.content === "string") {
    return;
  }
  const used = new Set(turn.tool_calls.map((c) => c.tool_call_id));
  let n = 0;
  for (const part of msg.content) {
    if (part.type !== "tool-call" || part.providerExecuted) {
      continue;
    }
    if (!part.toolCallId || part.toolCallId.includes("/") || used.has(part.toolCallId)) {
      do {
        n++;
        part.toolCallId = `${turn.turn_id}-call-${n}`;
      } while (used.has(part.toolCallId));
    }
    used.add(part.toolCallId);
  }
}

// ---------------------------------------------------------------------------
// Live frames

/** LiveWriter batches text and reasoning deltas: one write (one frame) at
 * most every 50 ms or 64 characters per kind. Live frames are best effort. */
class LiveWriter {
  private kind: "text" | "reasoning" | "" = "";
  private buf = "";
  private timer: NodeJS.Timeout | undefined;
  frames = 0;

  constructor(private readonly ctx: CallContext) {}

  write(kind: "text" | "reasoning", text: string): void {
    if (!text) {
      return;
    }
    if (kind !== this.kind) {
      this.flush();
      this.kind = kind;
    }
    this.buf += text;
    if (this.buf.length >= 64) {
      this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), 50);
    }
  }

  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.buf && !this.ctx.signal.aborted) {
      if (this.kind === "text") {
        this.ctx.writeTextDelta(this.buf);
      } else if (this.kind === "reasoning") {
        this.ctx.writeReasoningDelta(this.buf);
      }
      this.frames++;
    }
    this.buf = "";
  }
}

// ---------------------------------------------------------------------------
// The calls

async function runModelStep(req: RunModelStepRequest, ctx: CallContext): Promise<RunModelStepResponse> {
  const turn = req.turn;
  if (!turn) {
    throw new RunnerError(status.UNKNOWN, "RunModelStep: the request has no turn");
  }
  const { cfg } = agentOf(turn.agent);
  const st = parseRunState(turn.run_state);
  const messages: ModelMessage[] = rebuild(turn.messages, st.pending);
  const newMessages: FrameworkMessage[] = [];
  // The results of the last response's calls, from their final records.
  const names = new Map<string, string>();
  for (const m of messages) {
    for (const c of toolCallsOf(m)) {
      names.set(c.toolCallId, c.toolName);
    }
  }
  for (const id of st.pending) {
    const { message, item } = resultOf(turn.tool_calls, id, names.get(id) ?? "");
    newMessages.push(message);
    messages.push(item);
  }
  const limitReached = st.model_calls >= cfg.maxModelCallsPerTurn;
  const provider = createOpenAI({ baseURL: cfg.model.baseURL, apiKey: process.env[cfg.model.apiKeyEnv] ?? "", name: "openai" });
  const model = cfg.model.api === "chat" ? provider.chat(cfg.model.name) : provider.responses(cfg.model.name);
  const live = new LiveWriter(ctx);
  const result = streamText({
    model,
    system: instructionsOf(cfg, turn),
    messages,
    tools: limitReached ? {} : offeredTools(turn),
    // One step: the calls of tools without execute functions come back.
    // The session's Step retries a failed call, so the SDK does not.
    maxRetries: 0,
    abortSignal: ctx.signal,
    // The Responses API would refer to earlier items by ID (item_reference),
    // which only a provider that stored them resolves: send them whole.
    providerOptions: cfg.model.api === "responses" ? { openai: { store: false } } : undefined,
    // The error reaches the loop below as an error part; without this the
    // SDK would also print it to stderr, not as a log line.
    onError: () => undefined,
  });
  let streamError: unknown;
  for await (const part of result.fullStream) {
    switch (part.type) {
      case "text-delta":
        live.write("text", part.text);
        break;
      case "reasoning-delta":
        live.write("reasoning", part.text);
        break;
      case "error":
        streamError ??= part.error;
        break;
      case "abort":
        streamError ??= new RunnerError(status.CANCELLED, "the model call was cancelled");
        break;
    }
  }
  live.flush();
  if (streamError !== undefined) {
    throw providerError(streamError, "RunModelStep");
  }
  const [response, usage, finishReason, rawFinishReason] = await Promise.all([result.response, result.usage, result.finishReason, result.rawFinishReason]);
  const metadata = {
    request_model: cfg.model.name,
    response_model: response.modelId ?? "",
    provider_name: "openai",
    response_id: response.id ?? "",
    finish_reasons: [rawFinishReason ?? finishReason].filter((r): r is string => !!r),
  };
  let answers = response.messages.filter((m): m is AssistantModelMessage => m.role === "assistant");
  if (answers.length === 0) {
    answers = [{ role: "assistant", content: [{ type: "text", text: "" }] }];
  }
  const calls: (Required<Pick<DeferredToolCall, "tool_call_id" | "tool_name" | "arguments" | "tool_source_reference">> & { policy: ToolPolicy })[] = [];
  for (const msg of answers) {
    fixToolCallIDs(msg, turn);
    newMessages.push(assistantMessage(msg));
    if (typeof msg.content === "string") {
      continue;
    }
    for (const part of msg.content) {
      if (part.type !== "tool-call" || part.providerExecuted) {
        continue;
      }
      calls.push({
        tool_call_id: part.toolCallId,
        tool_name: part.toolName,
        arguments: typeof part.input === "string" ? part.input : JSON.stringify(part.input ?? {}),
        policy: policyOf(turn, part.toolName),
        tool_source_reference: "",
      });
    }
  }
  const u = usageOf(usage);
  logger.info("model call", {
    session_id: turn.session_id,
    turn_id: turn.turn_id,
    attempt: turn.attempt,
    model: cfg.model.name,
    tool_calls: calls.length,
    live_frames: live.frames,
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
  });
  if (calls.length === 0) {
    return { turn_completed: { new_messages: newMessages, usage: u, metadata } };
  }
  if (limitReached) {
    const text = ModelCallLimitToolResultFormat.replace("%d", String(cfg.maxModelCallsPerTurn));
    for (const c of calls) {
      newMessages.push(toolResultMessage(c.tool_call_id, c.tool_name, "failed", text).message);
    }
    return { turn_completed: { new_messages: newMessages, usage: u, metadata } };
  }
  const next: RunState = { model_calls: st.model_calls + 1, pending: calls.map((c) => c.tool_call_id) };
  return {
    tool_calls_requested: { run_state: JSON.stringify(next), tool_calls: calls, new_messages: newMessages, usage: u, metadata },
  };
}

async function executeDeferredToolCall(req: ExecuteToolRequest): Promise<ExecuteToolResponse> {
  const { store } = agentOf(req.agent);
  const tc = req.tool_call;
  if (!tc) {
    throw new RunnerError(status.UNKNOWN, "ExecuteDeferredToolCall: the request has no tool_call");
  }
  const out = runTool(store, tc.tool_name, tc.arguments, req.idempotency_key);
  logger.info("tool call", {
    session_id: req.session_id,
    turn_id: req.turn_id,
    tool: tc.tool_name,
    tool_call_id: tc.tool_call_id,
    attempt: req.attempt,
    outcome: "result" in out ? "result" : "error",
  });
  return "result" in out ? { result: { output: out.result } } : { error: { message: out.error } };
}

function buildUnfinishedTurnMessages(req: BuildUnfinishedTurnMessagesRequest): BuildUnfinishedTurnMessagesResponse {
  const turn = req.turn;
  if (!turn) {
    return { messages: [] };
  }
  const st = parseRunState(turn.run_state);
  const messages: FrameworkMessage[] = [];
  for (const id of st.pending) {
    const rec = turn.tool_calls.find((c) => c.tool_call_id === id);
    if (rec && isFinal(rec.status)) {
      messages.push(resultOf(turn.tool_calls, id, rec.tool_name).message);
    }
  }
  return { messages };
}

function configure(req: ConfigureRequest): ConfigureResponse {
  const cfg = parseConfig(req.runner_config, process.env);
  let store: Store;
  try {
    store = Store.open(cfg.storePath);
  } catch (err) {
    throw new ConfigError(`runner_config.store_path ${cfg.storePath}: ${(err as Error).message}`);
  }
  agents.set(req.agent, { cfg, store });
  logger.info("agent configured", { agent: req.agent, model: cfg.model.name, base_url: cfg.model.baseURL, api: cfg.model.api, store_path: cfg.storePath });
  // The tools' effects are this runner's policies: they apply where the
  // worker's tool_policies are silent, and config validate shows them.
  const tool_policies = Object.fromEntries(ownTools.map((t) => [t.name, { effect: t.effect }]));
  return { tools: ownTools.map((t) => t.name), setting_choices: [], tool_policies };
}

/** OrdersRunner is the orders agent on the AI SDK, as a runner of the
 * contract: the SDK (@dex-agents/runner) serves it. It implements
 * BuildUnfinishedTurnMessages and none of the other optional calls, so
 * the SDK announces only that capability. */
export class OrdersRunner implements Runner {
  info(): InfoResult {
    return { name: pluginName, version: pluginVersion };
  }

  configure(req: ConfigureRequest): ConfigureResponse {
    return configure(req);
  }

  buildUserMessage(req: BuildUserMessageRequest): BuildUserMessageResponse {
    agentOf(req.agent);
    return { message: userMessage(req.text) };
  }

  runModelStep(req: RunModelStepRequest, ctx: CallContext): Promise<RunModelStepResponse> {
    return runModelStep(req, ctx);
  }

  executeDeferredToolCall(req: ExecuteToolRequest): Promise<ExecuteToolResponse> {
    return executeDeferredToolCall(req);
  }

  buildUnfinishedTurnMessages(req: BuildUnfinishedTurnMessagesRequest): BuildUnfinishedTurnMessagesResponse {
    return buildUnfinishedTurnMessages(req);
  }
}
