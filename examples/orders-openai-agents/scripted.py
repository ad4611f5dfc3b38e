"""A scripted agents.Model for the demo (runner_config model: {provider:
scripted}): it reads the conversation as a model would and answers without
a key, streaming like the Responses API. It knows three moves:

- "refund order 7": look the order up, then refund its total (an approval);
- "where is order 7?": look it up and say what the tool returned;
- anything else: say what it can do.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from agents import ModelSettings
from agents.items import ModelResponse
from agents.models.interface import Model
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

HELP = 'I look orders up and refund them. Try "where is order 7?" or "refund order 7".'


def _text(t: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_scripted", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=t, annotations=[])],
    )  # fmt: skip


def _call(n: int, name: str, args: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=f"call_{name}_{n}", name=name, arguments=json.dumps(args), id=f"fc_{n}"
    )


def _content(item: dict[str, Any]) -> str:
    c = item.get("content")
    if isinstance(c, str):
        return c
    return "".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def respond(items: list[dict[str, Any]]) -> list[Any]:
    """The scripted answer to a conversation of Responses input items."""
    at = max(
        (i for i, it in enumerate(items) if it.get("role") == "user" and not _content(it).startswith("[Dex]")),
        default=-1,
    )
    asked = _content(items[at]) if at >= 0 else ""
    since = items[at + 1 :]
    calls = {i["call_id"]: i for i in since if i.get("type") == "function_call"}
    outputs = [i for i in since if i.get("type") == "function_call_output"]
    m = re.search(r"order\s*#?(\d+)", asked, re.IGNORECASE)
    if not m:
        return [_text(HELP)]
    order = m.group(1)
    if not outputs:
        return [_call(len(items), "lookup_order", {"order_id": order})]
    last = outputs[-1]
    name = calls.get(last["call_id"], {}).get("name", "")
    out = str(last.get("output", ""))
    if name == "lookup_order" and "refund" in asked.lower():
        total = re.search(r"\$(\d+)\.(\d\d)", out)
        if total:
            cents = int(total.group(1)) * 100 + int(total.group(2))
            return [_call(len(items), "refund_order", {"order_id": order, "amount_cents": cents})]
    return [_text(out)]


class ScriptedModel(Model):
    """The demo's model: no key, no network; one streamed response per call."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise NotImplementedError("the adapter streams: use stream_response")

    async def stream_response(
        self, system_instructions: str | None, input: Any, model_settings: ModelSettings, tools: Any,
        output_schema: Any, handoffs: Any, tracing: Any, **_: Any,
    ) -> AsyncIterator[Any]:  # fmt: skip
        items = [input] if isinstance(input, str) else list(input)
        output = respond([{"role": "user", "content": i} if isinstance(i, str) else dict(i) for i in items])
        seq = 0
        for o in output:
            if isinstance(o, ResponseOutputMessage):
                t = "".join(getattr(p, "text", "") for p in o.content)
                for word in re.findall(r"\S+\s*", t):
                    seq += 1
                    yield ResponseTextDeltaEvent.model_construct(
                        type="response.output_text.delta", delta=word, item_id=o.id, output_index=0,
                        content_index=0, sequence_number=seq, logprobs=[],
                    )  # fmt: skip
        size = sum(len(json.dumps(i, default=str)) for i in items) // 3
        usage = ResponseUsage(
            input_tokens=size, output_tokens=20, total_tokens=size + 20,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )  # fmt: skip
        resp = Response.model_construct(id=f"resp_scripted_{len(items)}", output=output, usage=usage)
        yield ResponseCompletedEvent.model_construct(type="response.completed", response=resp, sequence_number=seq + 1)
