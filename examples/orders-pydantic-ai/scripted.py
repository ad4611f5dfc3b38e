"""The demo's scripted model (runner_config model: {provider: scripted}):
Pydantic AI's own FunctionModel, reading the conversation as a model would
and answering without a key. It knows three moves:

- "refund order 7": look the order up, then refund its total (an approval);
- "where is order 7?": look it up and say what the tool returned;
- anything else: say what it can do.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

HELP = 'I look orders up and refund them. Try "where is order 7?" or "refund order 7".'


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted answer to the conversation so far."""
    asked, at = "", 0
    for i, m in enumerate(messages):
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, UserPromptPart) and isinstance(p.content, str) and not p.content.startswith("[Dex]"):
                    asked, at = p.content, i
    returns = [
        p for m in messages[at:] if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    order = re.search(r"order\s*#?(\d+)", asked, re.IGNORECASE)
    if order is None:
        return ModelResponse(parts=[TextPart(HELP)])
    if not returns:
        return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": order.group(1)}, f"call_lookup_{at}")])
    last = returns[-1]
    out = last.model_response_str()
    if last.tool_name == "lookup_order" and "refund" in asked.lower():
        total = re.search(r"\$(\d+)\.(\d\d)", out)
        if total:
            cents = int(total.group(1)) * 100 + int(total.group(2))
            args = {"order_id": order.group(1), "amount_cents": cents}
            return ModelResponse(parts=[ToolCallPart("refund_order", args, f"call_refund_{at}")])
    return ModelResponse(parts=[TextPart(out)])


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    for i, part in enumerate(respond(messages, info).parts):
        if isinstance(part, TextPart):
            for word in re.findall(r"\S+\s*", part.content):
                yield word
        elif isinstance(part, ToolCallPart):
            yield {i: DeltaToolCall(part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id)}


def scripted_model() -> FunctionModel:
    return FunctionModel(respond, stream_function=stream, model_name="orders-demo-script")
