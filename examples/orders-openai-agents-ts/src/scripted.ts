// The demo's scripted model (runner_config model: {provider: scripted}): an
// Agents SDK Model that reads the conversation as a model would and answers
// without a key, streaming word by word. It knows three moves:
// "refund order 7" (look it up, then refund its total: an approval),
// "where is order 7?" (look it up), and anything else (what it can do).

import { Usage, type AgentInputItem, type AgentOutputItem, type Model, type ModelRequest, type ModelResponse, type StreamEvent, type protocol } from "@openai/agents";

const help = 'I look orders up and refund them. Try "where is order 7?" or "refund order 7".';

function text(item: AgentInputItem): string {
  const c = (item as { content?: unknown }).content;
  if (typeof c === "string") return c;
  return Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? "").join("") : "";
}

export function respond(input: AgentInputItem[]): AgentOutputItem[] {
  let at = -1;
  input.forEach((it, i) => {
    if ((it as { role?: string }).role === "user" && !text(it).startsWith("[Dex]")) at = i;
  });
  const asked = at >= 0 ? text(input[at]) : "";
  const since = input.slice(at + 1);
  const order = /order\s*#?(\d+)/i.exec(asked);
  const say = (t: string): AgentOutputItem[] => [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: t }] }];
  const call = (name: string, args: object): AgentOutputItem[] => [
    { type: "function_call", callId: `call_${name}_${at}`, name, arguments: JSON.stringify(args), status: "completed" },
  ];
  if (!order) return say(help);
  const results = since.filter((i): i is protocol.FunctionCallResultItem => i.type === "function_call_result");
  if (results.length === 0) return call("lookup_order", { order_id: order[1] });
  const last = results[results.length - 1];
  const out = typeof last.output === "string" ? last.output : (last.output as { text?: string }).text ?? "";
  const total = /\$(\d+)\.(\d\d)/.exec(out);
  if (last.name === "lookup_order" && /refund/i.test(asked) && total) {
    return call("refund_order", { order_id: order[1], amount_cents: Number(total[1]) * 100 + Number(total[2]) });
  }
  return say(out);
}

export class ScriptedModel implements Model {
  async getResponse(req: ModelRequest): Promise<ModelResponse> {
    const output = respond(req.input as AgentInputItem[]);
    return { output, usage: new Usage({ inputTokens: 0, outputTokens: 0, totalTokens: 0 }) };
  }

  async *getStreamedResponse(req: ModelRequest): AsyncIterable<StreamEvent> {
    const input = req.input as AgentInputItem[];
    const output = respond(input);
    for (const o of output) {
      if (o.type === "message" && o.role === "assistant") {
        for (const c of o.content) {
          if (c.type === "output_text") for (const w of c.text.match(/\S+\s*/g) ?? []) yield { type: "output_text_delta", delta: w };
        }
      }
    }
    const inputTokens = Math.ceil(JSON.stringify(input).length / 3);
    yield {
      type: "response_done",
      response: { id: `resp_scripted_${input.length}`, usage: { inputTokens, outputTokens: 20, totalTokens: inputTokens + 20 }, output: output as protocol.OutputModelItem[] },
    };
  }
}
