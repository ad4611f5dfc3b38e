"""The demo's scripted chat model (runner_config model: {provider:
scripted}): a LangChain chat model that reads the conversation as a model
would and answers without a key, streaming token by token. It knows three
moves:

- "refund order 7": look the order up, then refund its total (an approval);
- "where is order 7?": look it up and say what the tool returned;
- anything else: say what it can do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

HELP = 'I look orders up and refund them. Try "where is order 7?" or "refund order 7".'


def respond(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted answer to the conversation so far."""
    at = max(
        (i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not m.text.startswith("[Dex]")), default=0
    )
    asked = messages[at].text if messages else ""
    results = [m for m in messages[at:] if isinstance(m, ToolMessage)]
    order = re.search(r"order\s*#?(\d+)", asked, re.IGNORECASE)
    if order is None:
        return AIMessage(HELP)
    if not results:
        return AIMessage(
            "", tool_calls=[{"name": "lookup_order", "args": {"order_id": order.group(1)}, "id": f"call_lookup_{at}"}]
        )
    last = results[-1]
    total = re.search(r"\$(\d+)\.(\d\d)", last.text)
    if last.name == "lookup_order" and "refund" in asked.lower() and total:
        cents = int(total.group(1)) * 100 + int(total.group(2))
        args = {"order_id": order.group(1), "amount_cents": cents}
        return AIMessage("", tool_calls=[{"name": "refund_order", "args": args, "id": f"call_refund_{at}"}])
    return AIMessage(last.text)


class ScriptedChatModel(BaseChatModel):
    """The demo's model: no key, no network."""

    @property
    def _llm_type(self) -> str:
        return "orders-demo-script"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=respond(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        msg = respond(messages)
        for word in re.findall(r"\S+\s*", msg.text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
        for i, c in enumerate(msg.tool_calls):
            part = tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[part]))
        usage = {"input_tokens": sum(len(m.text) for m in messages) // 3, "output_tokens": 20, "total_tokens": 0}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))  # type: ignore[arg-type]
