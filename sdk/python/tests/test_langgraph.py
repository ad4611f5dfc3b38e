"""The LangGraph adapter: LangChain's create_agent and a hand-built
StateGraph (a model node and a ToolNode), driven through whole turns by
RunnerSession over a scripted chat model. Each model call is one
RunModelStep (the graph stops before its tool node); tool calls come back
as deferred calls and run through the graph's own ToolNode with the
idempotency key in the runtime context; a tool's interrupt() is a session
question; the graph's other state survives steps and turns with no
checkpointer."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from dex_runner import pb
from dex_runner.context import SUMMARY_INSTRUCTIONS
from dex_runner.langgraph import DexToolContext, LangGraphRunner, session_tools
from dex_runner.testing import RunnerSession

REFUNDS: list[str] = []
CALLS: list[list[str]] = []


class Scripted(BaseChatModel):
    """Answers from the conversation as a model would: the last human
    message says what to do, and a tool's result ends the exchange."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kw: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kw)

    def _respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        names = [t["function"]["name"] for t in tools]
        CALLS.append(names)
        usage = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
        if any(isinstance(m, SystemMessage) and m.text == SUMMARY_INSTRUCTIONS for m in messages):
            return AIMessage(f"summary of {len(messages)} messages", usage_metadata=usage)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            said = "; ".join(
                m.text for m in messages[messages.index(_last_human(messages)) :] if isinstance(m, ToolMessage)
            )
            return AIMessage(f"[model] {said}", usage_metadata=usage)
        words = _last_human(messages).text.split()
        calls = {
            "lookup": ("lookup_order", {"order_id": words[-1]}),
            "refund": ("refund_order", {"order_id": words[-1]}),
            "confirm": ("confirm_refund", {"order_id": words[-1]}),
            "plan": ("write_todos", {"todos": [{"content": "Refund order 7", "status": "pending"}]}),
        }
        if words and words[0] in calls and calls[words[0]][0] in names:
            name, args = calls[words[0]]
            return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}"}], usage_metadata=usage)
        return AIMessage(f"[model] you said {' '.join(words)}", usage_metadata=usage)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._respond(messages, kw.get("tools") or []))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kw: Any,
    ) -> Iterator[ChatGenerationChunk]:
        msg = self._respond(messages, kw.get("tools") or [])
        for tok in re.findall(r"\S+\s*", msg.text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=tok))
            if run_manager:
                run_manager.on_llm_new_token(tok, chunk=chunk)
            yield chunk
        for i, c in enumerate(msg.tool_calls):
            tc = tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[tc]))
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=msg.usage_metadata))


def _last_human(messages: list[BaseMessage]) -> BaseMessage:
    humans = [m for m in messages if isinstance(m, HumanMessage) and not m.text.startswith("[Dex]")]
    return humans[-1]


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: a chair, $20"


@tool
def refund_order(order_id: str, runtime: ToolRuntime[DexToolContext]) -> str:
    """Refund an order."""
    REFUNDS.append(f"{order_id} {runtime.context.idempotency_key}")
    return f"refunded order {order_id}"


@tool
def confirm_refund(order_id: str) -> str:
    """Refund an order once the user confirms."""
    answer = interrupt({"question": f"Refund order {order_id}?", "choices": ["yes", "no"]})
    return f"refunded order {order_id}" if answer == "yes" else "not refunded"


EFFECTS = {"lookup_order": "read", "refund_order": "non_idempotent_write", "confirm_refund": "non_idempotent_write"}


def agent_runner() -> LangGraphRunner:
    model = Scripted()
    tools = [lookup_order, refund_order, confirm_refund, *session_tools("write_todos")]
    return LangGraphRunner(
        lambda name, cfg: create_agent(model, tools=tools, context_schema=DexToolContext),
        tool_effects=EFFECTS,
        summary_model=model,
    )


def test_create_agent_tools_approvals_and_questions() -> None:
    REFUNDS.clear()

    async def run() -> None:
        async with RunnerSession(agent_runner(), agent="orders") as s:
            turn = await s.send("lookup 7")
            assert turn.text() == "[model] order 7: a chair, $20"
            rec = turn.call("lookup_order")
            assert rec is not None and (rec.effect, rec.status) == ("read", "succeeded")
            assert turn.model_calls == 2 and turn.usage.input_tokens == 20
            assert s.text() == "[model] order 7: a chair, $20"  # streamed live

            s.approve = lambda call: (call.tool_name != "refund_order", "Refunds need a manager.")
            turn = await s.send("refund 9")
            assert turn.text() == "[model] Refunds need a manager." and REFUNDS == []
            s.approve = None
            turn = await s.send("refund 9")
            assert turn.text() == "[model] refunded order 9"
            assert REFUNDS == [f"9 runnertest/{turn.id}/c-refund_order"]

            asked: list[str] = []

            def answer(call: pb.DeferredToolCall, q: pb.ToolInputRequested) -> str:
                asked.append(f"{q.question} {list(q.choices)} {q.allows_free_text}")
                return "yes"

            s.answer = answer
            turn = await s.send("confirm 4")
            assert asked == ["Refund order 4? ['yes', 'no'] False"]
            assert turn.text() == "[model] refunded order 4"

            # Stored messages are LangChain's own message dicts.
            kinds = [json.loads(m.framework_item)["type"] for m in s.messages[:4]]
            assert kinds == ["human", "ai", "tool", "ai"]

    asyncio.run(run())


def test_configure_lists_the_graphs_tools_without_the_sessions() -> None:
    r = agent_runner()
    resp = asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    assert list(resp.tools) == ["lookup_order", "refund_order", "confirm_refund"]
    assert resp.tool_policies["refund_order"].effect == "non_idempotent_write"
    from dex_runner.runner import capabilities_of

    assert capabilities_of(r).compaction
    assert not capabilities_of(LangGraphRunner(lambda n, c: None)).compaction


def test_session_tools_are_left_to_the_session() -> None:
    async def run() -> None:
        async with RunnerSession(agent_runner(), agent="orders", host_tools=_host("write_todos")) as s:
            ran: list[str] = []

            def host_tool(call: pb.DeferredToolCall) -> str:
                ran.append(f"{call.tool_name} {call.policy.effect}")
                return '{"status":"updated","revision":1,"task_count":1}'

            s.host_tool = host_tool
            turn = await s.send("plan 7")
            assert ran == ["write_todos read"]
            assert turn.text() == '[model] {"status":"updated","revision":1,"task_count":1}'

    asyncio.run(run())


class Counted(MessagesState):
    model_calls: int


def test_a_hand_built_graph_keeps_its_state_across_steps_and_turns() -> None:
    model = Scripted().bind_tools([lookup_order])

    def call_model(state: Counted, runtime: Runtime[DexToolContext]) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])], "model_calls": state.get("model_calls", 0) + 1}

    def build(name: str, cfg: dict[str, Any]) -> Any:
        g = StateGraph(Counted, context_schema=DexToolContext)
        g.add_node("model", call_model)
        g.add_node("tools", ToolNode([lookup_order]))
        g.add_edge(START, "model")
        g.add_conditional_edges("model", tools_condition)
        g.add_edge("tools", "model")
        return g.compile()

    async def run() -> None:
        async with RunnerSession(LangGraphRunner(build, tool_effects=EFFECTS), agent="orders") as s:
            turn = await s.send("lookup 3")
            assert turn.text() == "[model] order 3: a chair, $20"
            turn = await s.send("hello")
            assert turn.text() == "[model] you said hello"
            last = json.loads(s.messages[-1].framework_item)
            # Three model calls in two turns: the count went through the run
            # state between the steps and the stored message between turns.
            assert last["dex_graph_state"] == {"model_calls": 3}

    asyncio.run(run())


def test_compaction_cuts_between_a_call_and_its_result_never() -> None:
    from dex_runner.service import LiveContext

    r = agent_runner()
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    msgs = [
        HumanMessage("lookup 7 " + "x" * 300),
        AIMessage("", tool_calls=[{"name": "lookup_order", "args": {"order_id": "7"}, "id": "c1"}]),
        ToolMessage("a chair", tool_call_id="c1"),
        AIMessage("order 7 is a chair"),
        HumanMessage("thanks"),
    ]
    roles = ["user", "assistant", "tool", "assistant", "user"]
    from dex_runner.langgraph import _dump

    stored = [
        pb.Message(sequence=i + 1, role=roles[i], framework_item=_dump(m), tool_call_id="c1" if i == 2 else "")
        for i, m in enumerate(msgs)
    ]
    turn = pb.TurnContext(agent="orders", turn_id="turn-2", messages=stored)
    cut = asyncio.run(r.select_compaction_cutoff(pb.CompactionCutoffRequest(turn=turn, retained_token_budget=1)))
    assert cut.through_sequence == 4
    resp = asyncio.run(
        r.summarize_context(
            pb.SummarizeContextRequest(turn=turn, messages=stored[:4]), LiveContext(pb.RunModelStepFrame, False)
        )
    )
    assert resp.summary == "summary of 6 messages" and resp.usage.model_calls == 1


def _host(*names: str) -> list[pb.ToolDefinition]:
    defs = {t.name: t for t in session_tools()}
    return [
        pb.ToolDefinition(name=n, description=defs[n].description, input_schema=json.dumps(defs[n].args), effect="read")
        for n in names
    ]


def test_a_tool_message_the_graph_makes_is_stored_as_a_tool_result() -> None:
    """A node of the graph's own that answers a call (as a structured-output
    node does) makes a ToolMessage: it is stored as the call's result, with
    its status, not as a user message."""

    def model(state: MessagesState) -> dict[str, Any]:
        call = {"name": "Answer", "args": {"text": "done"}, "id": "s1", "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [ToolMessage(content="recorded", tool_call_id="s1", name="Answer"), AIMessage("done")]}

    def build(name: str, cfg: dict[str, Any]) -> Any:
        g = StateGraph(MessagesState)
        g.add_node("model", model)
        g.add_node("answer", answer)
        g.add_edge(START, "model")
        g.add_edge("model", "answer")
        return g.compile()

    async def run() -> None:
        async with RunnerSession(LangGraphRunner(build), agent="orders") as s:
            turn = await s.send("hello")
            assert turn.text() == "done"
            roles = [(m.role, m.tool_call_id, m.tool_name, m.tool_status) for m in s.messages]
            assert roles == [
                ("user", "", "", ""), ("assistant", "", "", ""), ("tool", "s1", "Answer", "succeeded"),
                ("assistant", "", "", ""),
            ]  # fmt: skip

    asyncio.run(run())
