// Run an OpenAI Agents SDK for JavaScript agent (@openai/agents) as a
// durable runner: the TypeScript twin of the Python SDK's
// dex_runner.openai_agents.
//
// The agent you already wrote drops in: its instructions, model and model
// settings, function tools (tool()) and handoffs. Every model call is one
// RunModel Step (the model's getStreamedResponse, one request, its text
// streamed live); every tool call the model makes comes back to the
// session as a deferred call with its effect class and approval, and runs
// in ExecuteDeferredToolCall through the tool's own invoke(). A handoff is
// a deferred read: once recorded, the next model call runs the agent it
// names, and since the transcript holds it, the active agent survives
// restarts. The session's own tools (ask_user, durable_wait, write_todos,
// MCP tools) are offered too; the session runs their calls.
//
//     import { serve } from "@dex-agents/runner";
//     import { OpenAIAgentsRunner } from "@dex-agents/runner/openai-agents";
//     serve(new OpenAIAgentsRunner((name, cfg) => ordersAgent, { toolEffects: { refund_order: "non_idempotent_write" } }));
//
// Stored messages are the SDK's own protocol items (AgentInputItem JSON). A
// tool reads its call's idempotency key from runContext.context (a
// DexToolContext, or what contextFactory makes of it).

import {
  Agent,
  RunContext,
  Usage,
  getTransferMessage,
  handoff as toHandoff,
  assistant,
  protocol,
  user,
  type AgentInputItem,
  type FunctionTool,
  type Handoff,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type SerializedHandoff,
  type SerializedTool,
  type StreamEvent,
} from "@openai/agents-core";
import { toSmartString } from "@openai/agents-core/utils";
import { OpenAIProvider } from "@openai/agents-openai";

import {
  estimateTokens,
  fitSummaryInput,
  planNote,
  selectCutoff,
  summaryInstructions,
  summaryNote,
  summaryOmission,
} from "./context";
import { describeToolCallOutcome, finalStatuses } from "./outcome";
import { effects, resolvePolicy } from "./policy";
import { permanent, type CallContext, type InfoResult, type Runner, type ToolCallContext } from "./runner";
import type {
  BuildUnfinishedTurnMessagesRequest,
  BuildUnfinishedTurnMessagesResponse,
  BuildUserMessageRequest,
  BuildUserMessageResponse,
  CompactionCutoffRequest,
  CompactionCutoffResponse,
  ConfigureRequest,
  ConfigureResponse,
  DeferredToolCall,
  ExecuteToolRequest,
  ExecuteToolResponse,
  FrameworkMessage,
  Message,
  RunModelStepRequest,
  RunModelStepResponse,
  SummarizeContextRequest,
  SummarizeContextResponse,
  ToolCall,
  ToolDefinition,
  ToolPolicy,
  TurnContext,
  Usage as ContractUsage,
} from "./types";

/** What a tool knows about its call: the session's idempotency key and the
 * call's place. Outside a tool call the key and call ID are empty. */
export interface DexToolContext {
  idempotencyKey: string;
  attempt: number;
  sessionId: string;
  turnId: string;
  toolCallId: string;
  agent: string;
}

/** build makes an agent's root Agent from its name and runner_config. */
export type BuildAgent = (agentName: string, runnerConfig: Record<string, unknown>) => Agent<any, any>;

export interface OpenAIAgentsRunnerOptions {
  /** toolEffects gives each tool its effect class. */
  toolEffects?: Record<string, string>;
  /** modelProvider resolves a string model name (default: OpenAIProvider). */
  modelProvider?: ModelProvider;
  /** contextFactory makes the tools' run context from the call. */
  contextFactory?: (c: DexToolContext) => unknown;
  name?: string;
  version?: string;
}

// A handoff changes the active agent and nothing else: a read.
const handoffPolicy: ToolPolicy = { effect: "read", requires_approval: false };

/** OpenAIAgentsRunner is a runner over OpenAI Agents SDK agents. */
export class OpenAIAgentsRunner implements Runner {
  private readonly effects: Record<string, string>;
  private readonly provider: ModelProvider;
  private readonly contextFactory: (c: DexToolContext) => unknown;
  private readonly agents = new Map<string, Agent<any, any>>();

  constructor(
    private readonly build: BuildAgent,
    private readonly options: OpenAIAgentsRunnerOptions = {},
  ) {
    this.effects = { ...(options.toolEffects ?? {}) };
    for (const [tool, effect] of Object.entries(this.effects)) {
      if (!effects.includes(effect)) {
        throw new Error(`toolEffects[${JSON.stringify(tool)}]: ${JSON.stringify(effect)} is not one of ${effects.join(", ")}`);
      }
    }
    this.provider = options.modelProvider ?? new OpenAIProvider();
    this.contextFactory = options.contextFactory ?? ((c) => c);
  }

  info(): InfoResult {
    return { name: this.options.name ?? "dex-runner-openai-agents-ts", version: this.options.version ?? "0.1.0" };
  }

  async configure(req: ConfigureRequest): Promise<ConfigureResponse> {
    const cfg: unknown = JSON.parse(req.runner_config || "{}") ?? {};
    if (typeof cfg !== "object" || Array.isArray(cfg)) {
      throw new Error("runner_config must be a JSON object");
    }
    const root = this.build(req.agent, cfg as Record<string, unknown>);
    const rc = new RunContext<unknown>(this.contextFactory(dexContext(req.agent)));
    const tools: string[] = [];
    const policies: Record<string, ToolPolicy> = {};
    for (const agent of graph(root)) {
      const problem = unsupported(agent);
      if (problem) {
        throw new Error(`agent ${JSON.stringify(agent.name)}: ${problem}`);
      }
      for (const t of await functionTools(agent, rc)) {
        if (!tools.includes(t.name)) {
          tools.push(t.name);
          policies[t.name] = await this.ownPolicy(t, rc);
        }
      }
      for (const h of handoffs(agent)) {
        if (!tools.includes(h.toolName)) {
          tools.push(h.toolName);
          policies[h.toolName] = handoffPolicy;
        }
      }
    }
    this.agents.set(req.agent, root);
    return { tools, tool_policies: policies };
  }

  private async ownPolicy(t: FunctionTool<any, any, any>, rc: RunContext<unknown>, args?: unknown, callId = ""): Promise<ToolPolicy> {
    const p: ToolPolicy = { effect: this.effects[t.name] ?? "" };
    try {
      if (await t.needsApproval(rc, (args ?? {}) as never, callId)) {
        p.requires_approval = true;
      }
    } catch {
      // A rule that fails (or needs the call's arguments, at configure)
      // asks for approval.
      p.requires_approval = true;
    }
    return p;
  }

  private root(agent: string): Agent<any, any> {
    const root = this.agents.get(agent);
    if (!root) {
      throw permanent(`agent ${JSON.stringify(agent)} is not configured in this runner`);
    }
    return root;
  }

  buildUserMessage(req: BuildUserMessageRequest): BuildUserMessageResponse {
    return { message: { role: "user", text: req.text, framework_item: JSON.stringify(user(req.text)) } };
  }

  async runModelStep(req: RunModelStepRequest, ctx: CallContext): Promise<RunModelStepResponse> {
    const turn = req.turn!;
    const root = this.root(turn.agent);
    const items: AgentInputItem[] = turn.messages.flatMap(storedItem);
    const newMessages: FrameworkMessage[] = [];
    for (const rec of unansweredCalls(turn)) {
      const item = resultItem(rec);
      items.push(item);
      newMessages.push(toolMessage(item, rec));
    }
    const summary = turn.context_summary?.text ?? "";
    const agent = activeAgent(root, items, summaryAgent(summary), notSucceeded([...turn.messages, ...newMessages]));
    const rc = new RunContext<unknown>(this.contextFactory(dexContext(turn.agent, turn)));
    let tools: SerializedTool[] = (await functionTools(agent, rc)).map(serializeTool);
    let hs = handoffs(agent);
    let host = turn.host_tools;
    if (turn.interaction_mode === "planning") {
      // A planning turn offers only write_todos.
      tools = [];
      hs = [];
      host = host.filter((d) => d.name === "write_todos");
    }
    tools = tools.concat(host.map(hostTool));
    const model = await this.model(agent);
    const request: ModelRequest = {
      systemInstructions: await agent.getSystemPrompt(rc),
      input: modelInput(turn, items),
      modelSettings: { ...agent.modelSettings },
      tools,
      handoffs: hs.map(serializeHandoff),
      outputType: "text",
      tracing: false,
      signal: ctx.signal,
    };
    const done = await stream(model, request, ctx);
    const calls: DeferredToolCall[] = [];
    for (const out of done.output as AgentInputItem[]) {
      if (out.type === "function_call") {
        calls.push({
          tool_call_id: out.callId,
          tool_name: out.name,
          arguments: out.arguments || "{}",
          policy: await this.claim(turn, agent, out, rc),
        });
        newMessages.push({ role: "assistant", framework_item: JSON.stringify(out) });
        continue;
      }
      newMessages.push({ role: "assistant", text: messageText(out), framework_item: JSON.stringify(out) });
    }
    const usage = contractUsage(done.usage);
    const metadata = { request_model: modelName(agent), response_id: done.id ?? "", provider_name: "openai" };
    if (calls.length === 0) {
      return { turn_completed: { new_messages: newMessages, usage, metadata } };
    }
    return {
      tool_calls_requested: {
        run_state: JSON.stringify({ active_agent: agent.name }),
        tool_calls: calls,
        new_messages: newMessages,
        usage,
        metadata,
      },
    };
  }

  private async model(agent: Agent<any, any>): Promise<Model> {
    if (agent.model && typeof agent.model !== "string") {
      return agent.model;
    }
    return this.provider.getModel(agent.model || undefined);
  }

  private async claim(turn: TurnContext, agent: Agent<any, any>, call: protocol.FunctionCallItem, rc: RunContext<unknown>): Promise<ToolPolicy> {
    const hostDef = turn.host_tools.find((d) => d.name === call.name);
    if (hostDef) {
      // A tool the session runs (a built-in, an MCP tool).
      return resolvePolicy(turn.policies, call.name, hostDef.effect);
    }
    if (handoffs(agent).some((h) => h.toolName === call.name)) {
      return resolvePolicy(turn.policies, call.name, "", handoffPolicy);
    }
    const t = (await functionTools(agent, rc)).find((x) => x.name === call.name);
    if (t) {
      let args: unknown = {};
      try {
        args = JSON.parse(call.arguments || "{}");
      } catch {
        // The tool Step reports arguments that are not JSON.
      }
      return resolvePolicy(turn.policies, call.name, "", await this.ownPolicy(t, rc, args, call.callId));
    }
    // Not a tool of the agent: the worker fails it as unknown.
    return { effect: "unclassified", requires_approval: false };
  }

  async executeDeferredToolCall(req: ExecuteToolRequest, _ctx: ToolCallContext): Promise<ExecuteToolResponse> {
    const root = this.root(req.agent);
    const call = req.tool_call!;
    const all = graph(root);
    for (const agent of all) {
      for (const h of handoffs(agent)) {
        if (h.toolName === call.tool_name) {
          const target = all.find((a) => a.name === h.agentName) ?? h.agent;
          return { result: { output: getTransferMessage(target) } };
        }
      }
      const dex: DexToolContext = {
        idempotencyKey: req.idempotency_key, attempt: req.attempt, sessionId: req.session_id, turnId: req.turn_id,
        toolCallId: call.tool_call_id, agent: req.agent,
      };
      const rc = new RunContext<unknown>(this.contextFactory(dex));
      const t = (await functionTools(agent, rc)).find((x) => x.name === call.tool_name);
      if (t) {
        const toolCall: protocol.FunctionCallItem = {
          type: "function_call", callId: call.tool_call_id, name: call.tool_name, arguments: call.arguments, status: "completed",
        };
        const out = await t.invoke(rc, call.arguments || "{}", { toolCall });
        return { result: { output: toSmartString(out) } };
      }
    }
    return { error: { message: `unknown tool ${call.tool_name}` } };
  }

  buildUnfinishedTurnMessages(req: BuildUnfinishedTurnMessagesRequest): BuildUnfinishedTurnMessagesResponse {
    const turn = req.turn!;
    const messages = unansweredCalls(turn, true).map((rec) => toolMessage(resultItem(rec), rec));
    return { messages };
  }

  selectCompactionCutoff(req: CompactionCutoffRequest): CompactionCutoffResponse {
    return { through_sequence: selectCutoff(req.turn!.messages, req.retained_token_budget, opens, closes) };
  }

  async summarizeContext(req: SummarizeContextRequest, ctx: CallContext): Promise<SummarizeContextResponse> {
    const turn = req.turn!;
    const root = this.root(turn.agent);
    const msgs = req.messages.filter((m) => m.framework_item);
    const agent = activeAgent(root, msgs.map((m) => load(m.framework_item)), summaryAgent(req.previous_summary), notSucceeded(msgs));
    const head: AgentInputItem[] = req.previous_summary ? [user(summaryNote(req.previous_summary))] : [];
    const build = (rest: readonly Message[], omitted: number): AgentInputItem[] => [
      ...head,
      ...(omitted ? [user(summaryOmission(omitted))] : []),
      ...rest.map((m) => load(m.framework_item)),
    ];
    const size = (rest: readonly Message[], omitted: number) =>
      estimateTokens(summaryInstructions + JSON.stringify(build(rest, omitted))) + (agent.modelSettings.maxTokens ?? 0);
    let omitted: number;
    let rest: readonly Message[];
    try {
      [omitted, rest] = fitSummaryInput(msgs, req.input_token_budget, size, opens, closes);
    } catch (e) {
      throw permanent((e as Error).message);
    }
    const done = await stream(
      await this.model(agent),
      {
        systemInstructions: summaryInstructions, input: build(rest, omitted), modelSettings: { ...agent.modelSettings },
        tools: [], handoffs: [], outputType: "text", tracing: false, signal: ctx.signal,
      },
      ctx,
    );
    let text = (done.output as AgentInputItem[]).map(messageText).join("");
    if (agent !== root) {
      text += "\n\n" + activeAgentLine + agent.name;
    }
    return {
      summary: text,
      usage: contractUsage(done.usage),
      metadata: { request_model: modelName(agent), response_id: done.id ?? "", provider_name: "openai" },
    };
  }
}

/** What of the agent this adapter does not run yet, or "". */
function unsupported(agent: Agent<any, any>): string {
  for (const t of agent.tools) {
    if (t.type !== "function") {
      return `tool ${JSON.stringify(t.name)} is a ${t.type} tool: only function tools run here yet`;
    }
  }
  if (agent.mcpServers.length > 0) {
    return "mcpServers are not supported yet: declare the MCP servers in the worker config (mcp_servers) instead";
  }
  if (agent.outputType !== "text") {
    return "a structured outputType is not supported yet";
  }
  if (agent.inputGuardrails.length > 0 || agent.outputGuardrails.length > 0) {
    return "guardrails are not supported yet";
  }
  for (const h of handoffs(agent)) {
    if (h.inputFilter) {
      return `handoff ${JSON.stringify(h.toolName)}: inputFilter is not supported yet`;
    }
  }
  return "";
}

function dexContext(agent: string, turn?: TurnContext): DexToolContext {
  return { idempotencyKey: "", attempt: 0, sessionId: turn?.session_id ?? "", turnId: turn?.turn_id ?? "", toolCallId: "", agent };
}

async function functionTools(agent: Agent<any, any>, rc: RunContext<unknown>): Promise<FunctionTool<any, any, any>[]> {
  const out: FunctionTool<any, any, any>[] = [];
  for (const t of await agent.getAllTools(rc)) {
    if (t.type === "function" && (await t.isEnabled(rc, agent))) {
      out.push(t);
    }
  }
  return out;
}

// The framework's classes are matched by shape, not instanceof: the agent
// may come from the application's own copy of @openai/agents.
function handoffs(agent: Agent<any, any>): Handoff<any, any>[] {
  return agent.handoffs.map((h) => ("toolName" in h ? (h as Handoff<any, any>) : toHandoff(h as Agent<any, any>)));
}

/** The root agent and every agent a handoff reaches, once each. */
function graph(root: Agent<any, any>): Agent<any, any>[] {
  const seen: Agent<any, any>[] = [];
  const todo = [root];
  while (todo.length) {
    const a = todo.shift()!;
    if (seen.includes(a)) {
      continue;
    }
    seen.push(a);
    todo.push(...handoffs(a).map((h) => h.agent));
  }
  return seen;
}

// The last line of a summary made while a handoff's agent was active.
const activeAgentLine = "[Dex] Active agent: ";

function summaryAgent(summary: string): string {
  const m = /\n\[Dex\] Active agent: (.+)$/.exec(summary);
  return m ? m[1] : "";
}

/** The agent the transcript's last completed handoff reached, else the one
 * the context summary names, else root. */
function activeAgent(root: Agent<any, any>, items: AgentInputItem[], start: string, failed: Set<string>): Agent<any, any> {
  const all = graph(root);
  const outputs = new Set(
    items.filter((i) => i.type === "function_call_result").map((i) => (i as protocol.FunctionCallResultItem).callId).filter((id) => !failed.has(id)),
  );
  let active = all.find((a) => a.name === start) ?? root;
  for (const i of items) {
    if (i.type !== "function_call" || !outputs.has(i.callId)) {
      continue;
    }
    const h = handoffs(active).find((x) => x.toolName === i.name);
    const next = h && all.find((a) => a.name === h.agentName);
    if (next) {
      active = next;
    }
  }
  return active;
}

/** The model's input: the context summary first, then the stored items,
 * with the plan note just before the turn's user message. */
function modelInput(turn: TurnContext, items: AgentInputItem[]): AgentInputItem[] {
  const out: AgentInputItem[] = [];
  if (turn.context_summary) {
    out.push(user(summaryNote(turn.context_summary.text)));
  }
  const note = planNote(turn);
  let at = items.length;
  if (note) {
    at = 0;
    items.forEach((it, i) => {
      if ("role" in it && it.role === "user") {
        at = i;
      }
    });
  }
  out.push(...items.slice(0, at));
  if (note) {
    out.push(user(note));
  }
  return out.concat(items.slice(at));
}

function serializeTool(t: FunctionTool<any, any, any>): SerializedTool {
  return { type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: t.strict };
}

function serializeHandoff(h: Handoff<any, any>): SerializedHandoff {
  return { toolName: h.toolName, toolDescription: h.toolDescription, inputJsonSchema: h.inputJsonSchema, strictJsonSchema: h.strictJsonSchema };
}

/** A tool the session runs, offered to the model like the agent's own. */
function hostTool(d: ToolDefinition): SerializedTool {
  return { type: "function", name: d.name, description: d.description, parameters: JSON.parse(d.input_schema || '{"type":"object"}'), strict: false };
}

type Done = Extract<StreamEvent, { type: "response_done" }>["response"];

/** stream drains one streamed model call, writing its text and reasoning
 * live, and returns the completed response. A provider's answer a retry
 * cannot fix (400, 401, 403, 404, 422) fails the Step at once. */
async function stream(model: Model, request: ModelRequest, ctx: CallContext): Promise<Done> {
  let done: Done | undefined;
  try {
    for await (const ev of model.getStreamedResponse(request)) {
      if (ev.type === "output_text_delta") {
        ctx.writeTextDelta(ev.delta);
      } else if (ev.type === "response_done") {
        done = ev.response;
      } else if (ev.type === "model") {
        const raw = ev.event as { type?: string; delta?: string };
        if (raw?.type === "response.reasoning_summary_text.delta" && raw.delta) {
          ctx.writeReasoningDelta(raw.delta);
        } else if (raw?.type === "response.failed" || raw?.type === "response.incomplete" || raw?.type === "error") {
          throw new Error(`the model's response ended with ${raw.type}`);
        }
      }
    }
  } catch (e) {
    // Matched by shape: the client may be the application's own copy of openai.
    const st = (e as { status?: unknown } | null)?.status;
    if (typeof st === "number" && [400, 401, 403, 404, 422].includes(st)) {
      throw permanent(`the model provider answered ${st}: ${(e as Error).message}`);
    }
    throw e;
  }
  if (!done) {
    throw new Error("the model's stream ended without response_done");
  }
  return done;
}

function contractUsage(u: Done["usage"]): ContractUsage {
  const usage = new Usage(u);
  const cached = usage.inputTokensDetails.reduce((n, d) => n + (d?.cached_tokens ?? 0), 0);
  const reasoning = usage.outputTokensDetails.reduce((n, d) => n + (d?.reasoning_tokens ?? 0), 0);
  return {
    model_calls: 1, input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, total_tokens: usage.totalTokens,
    cached_input_tokens: cached, reasoning_tokens: reasoning,
  };
}

/** This turn's call records whose result no stored message holds yet,
 * among the calls the stored messages still hold: a compaction in the
 * middle of a turn may have summarized a call and its result away, and a
 * result without its call is an error at every provider. */
function unansweredCalls(turn: TurnContext, finalOnly = false): ToolCall[] {
  const answered = new Set(turn.messages.filter((m) => m.turn_id === turn.turn_id && m.role === "tool").map((m) => m.tool_call_id));
  const visible = new Set(turn.messages.flatMap(opens));
  return turn.tool_calls.filter(
    (c) => !answered.has(c.tool_call_id) && visible.has(c.tool_call_id) && (!finalOnly || finalStatuses.includes(c.status)),
  );
}

/** The call IDs whose result is not a success: a rejected, failed or
 * outcome-unknown handoff changes no agent. */
function notSucceeded(messages: ReadonlyArray<{ role?: string; tool_status?: string; tool_call_id?: string }>): Set<string> {
  return new Set(messages.filter((m) => m.role === "tool" && m.tool_status && m.tool_status !== "succeeded").map((m) => m.tool_call_id ?? ""));
}

function resultItem(rec: ToolCall): protocol.FunctionCallResultItem {
  return {
    type: "function_call_result", callId: rec.tool_call_id, name: rec.tool_name, status: "completed",
    output: { type: "text", text: describeToolCallOutcome(rec) },
  };
}

function toolMessage(item: protocol.FunctionCallResultItem, rec: ToolCall): FrameworkMessage {
  return {
    role: "tool", text: describeToolCallOutcome(rec), framework_item: JSON.stringify(item), tool_call_id: rec.tool_call_id,
    tool_name: rec.tool_name, tool_status: rec.status,
  };
}

function messageText(item: AgentInputItem): string {
  if (item.type !== "message" && item.type !== undefined) {
    return "";
  }
  if (!("role" in item) || item.role !== "assistant") {
    return "";
  }
  return item.content.map((c) => (c.type === "output_text" ? c.text : "")).join("");
}

function opens(m: Message): string[] {
  if (m.role !== "assistant" || !m.framework_item.includes('"function_call"')) {
    return [];
  }
  const item = load(m.framework_item);
  return item.type === "function_call" ? [item.callId] : [];
}

function closes(m: Message): string[] {
  return m.role === "tool" ? [m.tool_call_id] : [];
}

/** A stored message as a protocol item: its framework item, or for a text
 * the session stored without one (a user message whose BuildUserMessage
 * failed, a turn-failure note), the text itself. */
function storedItem(m: Message): AgentInputItem[] {
  if (m.framework_item) {
    return [load(m.framework_item)];
  }
  if (m.role === "user" && m.text) {
    return [user(m.text)];
  }
  if (m.role === "assistant" && m.text) {
    return [assistant(m.text)];
  }
  return [];
}

function load(item: string): AgentInputItem {
  return protocol.ModelItem.parse(JSON.parse(item)) as AgentInputItem;
}

function modelName(agent: Agent<any, any>): string {
  const m = agent.model;
  return typeof m === "string" ? m : ((m as { model?: string })?.model ?? "");
}
