// The orders agent: its runner_config, its two tools and how they run.

import { Store, NoOrderError, RefundError, dollars } from "./store";

/** AgentConfig is the agent's runner_config:
 *
 *   runner_config:
 *     store_path: /var/lib/dex/orders.json
 *     model:
 *       base_url: https://api.openai.com/v1   # any OpenAI-compatible server
 *       name: gpt-5-mini
 *       api_key_env: OPENAI_API_KEY           # listed in plugins.<name>.env
 *       api: chat                             # chat (default) or responses
 *     instructions: ...                       # optional
 *     max_model_calls_per_turn: 16            # optional
 */
export interface AgentConfig {
  storePath: string;
  model: ModelConfig;
  instructions: string;
  maxModelCallsPerTurn: number;
}

export interface ModelConfig {
  baseURL: string;
  name: string;
  apiKeyEnv: string;
  api: "chat" | "responses";
}

export const defaultInstructions =
  "You help customers with their orders: look orders up and refund them. " +
  "Look an order up before you refund it. Refund the whole remaining amount unless the customer names one (amount_cents is in cents). " +
  "After a refund, tell the customer what was refunded.";

const defaultBaseURL = "https://api.openai.com/v1";
const defaultMaxModelCalls = 16;

/** ConfigError is a runner_config the plugin refuses; its message names
 * the problem. */
export class ConfigError extends Error {}

function expectObject(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw new ConfigError(`${what} must be an object`);
  }
  return v as Record<string, unknown>;
}

function only(obj: Record<string, unknown>, what: string, keys: string[]): void {
  for (const k of Object.keys(obj)) {
    if (!keys.includes(k)) {
      throw new ConfigError(`${what} has an unknown key ${JSON.stringify(k)} (it takes ${keys.join(", ")})`);
    }
  }
}

function str(obj: Record<string, unknown>, key: string, what: string, required: boolean): string {
  const v = obj[key];
  if (v === undefined || v === null || v === "") {
    if (required) {
      throw new ConfigError(`${what}.${key} is required`);
    }
    return "";
  }
  if (typeof v !== "string") {
    throw new ConfigError(`${what}.${key} must be a string`);
  }
  return v;
}

/** parseConfig reads runner_config (JSON text) and checks it against the
 * plugin's environment, which holds only what the worker config grants. */
export function parseConfig(raw: string, env: NodeJS.ProcessEnv): AgentConfig {
  let v: unknown;
  try {
    v = JSON.parse(raw || "null");
  } catch (err) {
    throw new ConfigError(`runner_config is not JSON: ${(err as Error).message}`);
  }
  if (v === null) {
    throw new ConfigError("runner_config is required: set store_path and model");
  }
  const cfg = expectObject(v, "runner_config");
  only(cfg, "runner_config", ["store_path", "model", "instructions", "max_model_calls_per_turn"]);
  const storePath = str(cfg, "store_path", "runner_config", true);
  const m = expectObject(cfg.model, "runner_config.model");
  only(m, "runner_config.model", ["base_url", "name", "api_key_env", "api"]);
  const apiKeyEnv = str(m, "api_key_env", "runner_config.model", true);
  if (!env[apiKeyEnv]) {
    throw new ConfigError(
      `runner_config.model.api_key_env names ${apiKeyEnv}, which is not set in the plugin's environment: ` +
        `set it for the worker and list it in the plugin's env`,
    );
  }
  const api = str(m, "api", "runner_config.model", false) || "chat";
  if (api !== "chat" && api !== "responses") {
    throw new ConfigError(`runner_config.model.api is ${JSON.stringify(api)}, want "chat" or "responses"`);
  }
  const baseURL = str(m, "base_url", "runner_config.model", false) || defaultBaseURL;
  try {
    new URL(baseURL);
  } catch {
    throw new ConfigError(`runner_config.model.base_url ${JSON.stringify(baseURL)} is not a URL`);
  }
  let maxCalls = defaultMaxModelCalls;
  if (cfg.max_model_calls_per_turn !== undefined) {
    const n = cfg.max_model_calls_per_turn;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) {
      throw new ConfigError("runner_config.max_model_calls_per_turn must be a positive integer");
    }
    maxCalls = n;
  }
  return {
    storePath,
    model: { baseURL, name: str(m, "name", "runner_config.model", true), apiKeyEnv, api },
    instructions: str(cfg, "instructions", "runner_config", false) || defaultInstructions,
    maxModelCallsPerTurn: maxCalls,
  };
}

/** OwnTool is one of the agent's own tools: what the model is offered and
 * the effect class the framework gives it (the worker's tool_policies
 * override it). */
export interface OwnTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  effect: "read" | "idempotent_write" | "non_idempotent_write" | "unclassified";
}

export const ownTools: OwnTool[] = [
  {
    name: "lookup_order",
    description: "Look up an order by its ID.",
    inputSchema: {
      type: "object",
      properties: { order_id: { type: "string", description: 'The order\'s ID, such as "7".' } },
      required: ["order_id"],
      additionalProperties: false,
    },
    effect: "read",
  },
  {
    name: "refund_order",
    description: "Refund an order, in whole or in part.",
    inputSchema: {
      type: "object",
      properties: {
        order_id: { type: "string", description: "The order's ID." },
        amount_cents: { type: "integer", description: "Cents to refund; the whole remaining amount when omitted." },
      },
      required: ["order_id"],
      additionalProperties: false,
    },
    effect: "non_idempotent_write",
  },
];

/** ToolOutcome is what a tool call answers: a result, or a failure the
 * model sees. Any exception is a failure of the call itself. */
export type ToolOutcome = { result: string } | { error: string };

export function runTool(store: Store, name: string, argText: string, idempotencyKey: string): ToolOutcome {
  const tool = ownTools.find((t) => t.name === name);
  if (!tool) {
    return { error: "unknown tool " + name };
  }
  let args: Record<string, unknown>;
  try {
    const v: unknown = JSON.parse(argText || "{}");
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      return { error: `${name}: the arguments must be a JSON object` };
    }
    args = v as Record<string, unknown>;
  } catch (err) {
    return { error: `${name}: the arguments are not JSON: ${(err as Error).message}` };
  }
  const orderID = args.order_id;
  if (typeof orderID !== "string" || orderID === "") {
    return { error: `${name}: order_id (a string) is required` };
  }
  try {
    if (name === "lookup_order") {
      return { result: JSON.stringify(store.get(orderID)) };
    }
    const amount = args.amount_cents ?? 0;
    if (typeof amount !== "number" || !Number.isInteger(amount)) {
      return { error: "refund_order: amount_cents must be an integer" };
    }
    const { order, refund } = store.refund(orderID, amount, idempotencyKey);
    return { result: `Refunded ${dollars(refund.amount_cents)} of order ${order.id} (${order.item}); order status: ${order.status}.` };
  } catch (err) {
    if (err instanceof NoOrderError || err instanceof RefundError) {
      return { error: err.message };
    }
    throw err;
  }
}
