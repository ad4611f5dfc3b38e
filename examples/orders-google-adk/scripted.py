"""The demo's scripted model (runner_config model: {provider: scripted}):
an ADK BaseLlm that reads the conversation as a model would and answers
without a key, streaming word by word. It knows three moves:

- "refund order 7": look the order up, then refund its total (an approval);
- "where is order 7?": look it up and describe it;
- anything else: say what it can do.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

HELP = 'I look orders up and refund them. Try "where is order 7?" or "refund order 7".'


def respond(contents: list[types.Content]) -> types.Content:
    """The scripted answer to the conversation so far."""
    at, asked = 0, ""
    for i, c in enumerate(contents):
        text = "".join(p.text or "" for p in c.parts or [])
        if c.role == "user" and text and not text.startswith("[Dex]"):
            at, asked = i, text
    results = [p.function_response for c in contents[at:] for p in c.parts or [] if p.function_response]
    order = re.search(r"order\s*#?(\d+)", asked, re.IGNORECASE)
    if order is None:
        return types.ModelContent(HELP)
    if not results:
        return _call("lookup_order", {"order_id": order.group(1)})
    last = results[-1]
    out: dict[str, Any] = dict(last.response or {})
    if "result" in out and isinstance(out["result"], str) and out["result"].startswith("{"):
        out = dict(json.loads(out["result"]))
    if last.name == "lookup_order" and "refund" in asked.lower() and "total_cents" in out:
        left = int(out["total_cents"]) - int(out.get("refunded_cents", 0))
        return _call("refund_order", {"order_id": order.group(1), "amount_cents": left})
    if "item" in out:
        return types.ModelContent(
            f"Order {out['order_id']}: {out['item']}, ${int(out['total_cents']) / 100:.2f}, "
            f"${int(out.get('refunded_cents', 0)) / 100:.2f} refunded."
        )
    return types.ModelContent(str(out.get("report") or out.get("error_message") or out.get("result") or out))


def _call(name: str, args: dict[str, Any]) -> types.Content:
    return types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args=args))])


class ScriptedModel(BaseLlm):
    """The demo's model: no key, no network."""

    model: str = "orders-demo-script"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse]:
        content = respond(list(llm_request.contents))
        text = "".join(p.text or "" for p in content.parts or [])
        if stream and text:
            for word in re.findall(r"\S+\s*", text):
                yield LlmResponse(content=types.ModelContent(word), partial=True)
        size = sum(len(c.model_dump_json()) for c in llm_request.contents) // 3
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=size, candidates_token_count=20, total_token_count=size + 20
        )
        yield LlmResponse(content=content, partial=False if stream else None, usage_metadata=usage)
