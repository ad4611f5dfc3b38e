// The runner plugin of the orders agent on the OpenAI Agents SDK for
// JavaScript.
//
// runner_config:
//
//     ledger_path: refunds.json      # the refunds ledger
//     model: {name: gpt-5-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}
//     # or model: {provider: scripted}: the demo's scripted model, no key
//
// List the key's variable in plugins.<name>.env; the plugin sees nothing else.

import { serve } from "@dex-agents/runner";
import { OpenAIAgentsRunner } from "@dex-agents/runner/openai-agents";
import { OpenAIResponsesModel } from "@openai/agents";
import OpenAI from "openai";

import { Ledger, buildAgent } from "./orders_agent";
import { ScriptedModel } from "./scripted";

function build(_agent: string, cfg: Record<string, unknown>) {
  const unknown = Object.keys(cfg).filter((k) => k !== "ledger_path" && k !== "model");
  if (unknown.length) throw new Error(`runner_config: unknown keys ${JSON.stringify(unknown.sort())}`);
  const ledger = new Ledger(String(cfg.ledger_path ?? "refunds.json"));
  const m = (cfg.model ?? {}) as { provider?: string; name?: string; base_url?: string; api_key_env?: string };
  if (m.provider === "scripted") return buildAgent(new ScriptedModel(), ledger);
  const keyEnv = m.api_key_env ?? "OPENAI_API_KEY";
  const key = process.env[keyEnv];
  if (!key) throw new Error(`runner_config.model.api_key_env names ${keyEnv}, which is not set (list it in plugins.<name>.env)`);
  // No retries of the client's own: the worker retries the Step.
  const client = new OpenAI({ apiKey: key, baseURL: m.base_url || undefined, maxRetries: 0 });
  return buildAgent(new OpenAIResponsesModel(client, m.name ?? "gpt-5-mini"), ledger);
}

serve(new OpenAIAgentsRunner(build, { toolEffects: { lookup_order: "read", refund_order: "non_idempotent_write" }, name: "orders-openai-agents-ts" }));
