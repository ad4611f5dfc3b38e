"""The Pydantic AI adapter: a pydantic_ai.Agent with deps, function tools
(one that needs approval) and an output type, driven through whole turns by
RunnerSession over the framework's own FunctionModel. Each model request is
one RunModelStep; tool calls come back as deferred calls with their
policies, run through the agent's toolset with the idempotency key in the
deps, and resume the run as the framework's deferred-tool results; stored
messages are Pydantic AI's own message JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.usage import RequestUsage

from dex_runner import pb
from dex_runner.context import PLANNING_NOTE, SUMMARY_INSTRUCTIONS
from dex_runner.pydantic_ai import DexToolContext, PydanticAIRunner
from dex_runner.testing import RunnerSession


@dataclass
class Deps:
    dex: DexToolContext
    refunds: list[str] = field(default_factory=list)


REFUNDS: list[str] = []


class Refund(BaseModel):
    order_id: str
    refunded: bool


class Script:
    """Answers from the conversation as a model would: the last user
    prompt says what to do, and a tool's return ends the exchange."""

    def __init__(self) -> None:
        self.requests: list[tuple[list[ModelMessage], AgentInfo]] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append((list(messages), info))
        last = messages[-1]
        usage = RequestUsage(input_tokens=10, output_tokens=2)
        if info.instructions == SUMMARY_INSTRUCTIONS or any(
            isinstance(p, UserPromptPart) and p.content == SUMMARY_INSTRUCTIONS for p in last.parts
        ):
            return ModelResponse(parts=[TextPart(f"summary of {len(messages)} messages")], usage=usage)
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returns:
            if info.output_tools and not info.allow_text_output:
                args = {"order_id": "9", "refunded": returns[-1].outcome == "success"}
                return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args, "out1")], usage=usage)
            said = "; ".join(str(p.content) for p in returns)
            return ModelResponse(parts=[TextPart(f"[{info.instructions}] {said}")], usage=usage)
        prompts = [p.content for p in last.parts if isinstance(p, UserPromptPart)]
        words = str(prompts[-1] if prompts else "").split()
        names = [t.name for t in info.function_tools]
        if words and words[0] == "both":
            calls = [ToolCallPart("lookup_order", {"order_id": o}, f"c{o}") for o in words[1:3]]
            return ModelResponse(parts=list(calls), usage=usage)
        if words and words[0] == "lookup":
            return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": words[1]}, "c1")], usage=usage)
        if words and words[0] == "refund":
            return ModelResponse(parts=[ToolCallPart("refund_order", {"order_id": words[1]}, "c2")], usage=usage)
        if words and words[0] == "ask" and "ask_user" in names:
            return ModelResponse(parts=[ToolCallPart("ask_user", {"question": "Which order?"}, "c4")], usage=usage)
        return ModelResponse(parts=[TextPart(f"[{info.instructions}] you said {' '.join(words)}")], usage=usage)

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        resp = self.respond(messages, info)
        for i, part in enumerate(resp.parts):
            if isinstance(part, TextPart):
                for j in range(0, len(part.content), 8):  # in chunks, as a stream
                    yield part.content[j : j + 8]
            elif isinstance(part, ToolCallPart):
                yield {i: DeltaToolCall(part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id)}


def orders_agent(script: Script, output_type: Any = str) -> Agent[Deps, Any]:
    agent: Agent[Deps, Any] = Agent(
        FunctionModel(script.respond, stream_function=script.stream),
        deps_type=Deps,
        output_type=output_type,
        instructions="orders desk",
    )

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return f"order {order_id}: a chair, $20"

    @agent.tool(requires_approval=True)
    def refund_order(ctx: RunContext[Deps], order_id: str) -> str:
        """Refund an order."""
        REFUNDS.append(f"{order_id} {ctx.deps.dex.idempotency_key}")
        return f"refunded order {order_id}"

    return agent


def runner(script: Script, output_type: Any = str) -> PydanticAIRunner:
    return PydanticAIRunner(
        lambda name, cfg: orders_agent(script, output_type),
        tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
        deps=lambda dex: Deps(dex),
    )


def test_tools_approvals_and_the_frameworks_message_json() -> None:
    REFUNDS.clear()
    script = Script()

    async def run() -> None:
        async with RunnerSession(runner(script), agent="orders") as s:
            turn = await s.send("lookup 7")
            assert turn.text() == "[orders desk] order 7: a chair, $20"
            rec = turn.call("lookup_order")
            assert rec is not None and (rec.effect, rec.requires_approval, rec.status) == ("read", False, "succeeded")
            assert turn.model_calls == 2 and turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0
            assert s.text() == "[orders desk] order 7: a chair, $20"  # streamed live, in chunks

            s.approve = lambda call: (call.tool_name != "refund_order", "Refunds need a manager.")
            turn = await s.send("refund 9")
            assert turn.text() == "[orders desk] Refunds need a manager."
            assert REFUNDS == []
            rec = turn.call("refund_order")
            assert rec is not None and (rec.effect, rec.requires_approval, rec.status) == (
                "non_idempotent_write",
                True,
                "rejected",
            )

            s.approve = None
            turn = await s.send("refund 9")
            assert turn.text() == "[orders desk] refunded order 9"
            assert REFUNDS == [f"9 runnertest/{turn.id}/c2"]

            # Every stored message is one of the framework's own messages,
            # and the history reads back as Pydantic AI wrote it.
            history = ModelMessagesTypeAdapter.validate_json(
                "[" + ",".join(m.framework_item for m in s.messages if m.framework_item) + "]"
            )
            kinds = [type(m).__name__ for m in history]
            assert kinds[:4] == ["ModelRequest", "ModelResponse", "ModelRequest", "ModelResponse"]
            denied = [
                p
                for m in history
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart) and p.outcome == "denied"
            ]
            assert [p.content for p in denied] == ["Refunds need a manager."]
        # One model request per step: never more than the turns needed.
        assert len(script.requests) == 6

    asyncio.run(run())


def test_structured_output_is_the_turns_answer() -> None:
    REFUNDS.clear()
    script = Script()

    async def run() -> None:
        async with RunnerSession(runner(script, Refund), agent="orders") as s:
            turn = await s.send("refund 9")
            assert json.loads(turn.text()) == {"order_id": "9", "refunded": True}
            assert REFUNDS == [f"9 runnertest/{turn.id}/c2"]
            # The next turn goes on from the stored output call and its return.
            turn = await s.send("lookup 3")
            assert json.loads(turn.text()) == {"order_id": "9", "refunded": True}

    asyncio.run(run())


def test_configure_reports_tools_and_policies_and_refuses_what_does_not_map() -> None:
    r = runner(Script())
    resp = asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    assert list(resp.tools) == ["lookup_order", "refund_order"]
    assert resp.tool_policies["lookup_order"].effect == "read"
    assert not resp.tool_policies["lookup_order"].requires_approval
    assert resp.tool_policies["refund_order"].requires_approval

    exhaustive: Agent[None, str] = Agent(FunctionModel(Script().respond), end_strategy="exhaustive")
    try:
        asyncio.run(
            PydanticAIRunner(lambda n, c: exhaustive).configure(pb.ConfigureRequest(agent="a", runner_config="{}"))
        )
    except ValueError as err:
        assert "end_strategy 'exhaustive' is not supported" in str(err)
    else:
        raise AssertionError("configure accepted end_strategy='exhaustive'")


def test_the_sessions_tools_are_external_and_a_planning_turn_offers_only_write_todos() -> None:
    from dex_runner.service import LiveContext

    script = Script()
    host = [
        pb.ToolDefinition(
            name=n,
            description="session tool",
            input_schema='{"type": "object", "properties": {"question": {"type": "string"}}}',
            effect="read",
        )
        for n in ("ask_user", "write_todos")
    ]

    async def run() -> None:
        async with RunnerSession(runner(script), agent="orders", host_tools=host) as s:
            asked: list[str] = []

            def host_tool(call: pb.DeferredToolCall) -> str:
                asked.append(f"{call.tool_name} {call.arguments} {call.policy.effect}")
                return '{"status":"answered","answer":"7"}'

            s.host_tool = host_tool
            turn = await s.send("ask me")
            assert asked == ['ask_user {"question":"Which order?"} read']
            assert turn.text() == '[orders desk] {"status":"answered","answer":"7"}'

        r = runner(script)
        await r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}"))
        item = ModelMessagesTypeAdapter.dump_json([ModelRequest(parts=[UserPromptPart("plan it")])]).decode()[1:-1]
        msg = pb.Message(sequence=1, role="user", text="plan it", framework_item=item, turn_id="turn-1")
        turn_ctx = pb.TurnContext(
            agent="orders", turn_id="turn-1", interaction_mode="planning", host_tools=host, messages=[msg]
        )
        await r.run_model_step(pb.RunModelStepRequest(turn=turn_ctx), LiveContext(pb.RunModelStepFrame, False))
        messages, info = script.requests[-1]
        assert [t.name for t in info.function_tools] == ["write_todos"]
        prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
        assert prompts == [PLANNING_NOTE, "plan it"]

    asyncio.run(run())


def test_compaction_cuts_where_every_call_has_its_result() -> None:
    from dex_runner.service import LiveContext

    script = Script()
    r = runner(script)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))

    def stored(seq: int, role: str, m: ModelMessage, call: str = "") -> pb.Message:
        item = ModelMessagesTypeAdapter.dump_json([m]).decode()[1:-1]
        return pb.Message(sequence=seq, role=role, framework_item=item, turn_id="turn-1", tool_call_id=call)

    msgs = [
        stored(1, "user", ModelRequest(parts=[UserPromptPart("lookup 7 " + "x" * 300)])),
        stored(2, "assistant", ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": "7"}, "c1")])),
        stored(3, "tool", ModelRequest(parts=[ToolReturnPart("lookup_order", "a chair", "c1")]), "c1"),
        stored(4, "assistant", ModelResponse(parts=[TextPart("order 7 is a chair")])),
        stored(5, "user", ModelRequest(parts=[UserPromptPart("thanks")])),
    ]
    turn = pb.TurnContext(agent="orders", turn_id="turn-2", messages=msgs)
    cut = asyncio.run(r.select_compaction_cutoff(pb.CompactionCutoffRequest(turn=turn, retained_token_budget=1)))
    assert cut.through_sequence == 4  # never after 2, where c1 is open; never the last
    resp = asyncio.run(
        r.summarize_context(
            pb.SummarizeContextRequest(turn=turn, messages=msgs[:4]), LiveContext(pb.RunModelStepFrame, False)
        )
    )
    assert resp.summary == "summary of 5 messages" and resp.usage.model_calls == 1
    turn.context_summary.CopyFrom(pb.ContextSummary(generation=1, first_sequence=1, last_sequence=4, text=resp.summary))
    del turn.messages[:4]
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), LiveContext(pb.RunModelStepFrame, False)))
    messages, _ = script.requests[-1]
    first = messages[0].parts[0]
    assert (
        isinstance(first, UserPromptPart)
        and first.content == "[Dex] Summary of the earlier conversation:\nsummary of 5 messages"
    )


def test_system_prompts_reach_every_request_and_are_never_stored() -> None:
    script = Script()

    def build(name: str, cfg: dict[str, Any]) -> Agent[None, str]:
        return Agent(FunctionModel(script.respond, stream_function=script.stream), system_prompt="You are terse.")

    async def run() -> None:
        async with RunnerSession(PydanticAIRunner(build), agent="orders") as s:
            await s.send("hello")
            await s.send("again")
            stored = "".join(m.framework_item for m in s.messages)
            assert "You are terse." not in stored
            assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant"]

    asyncio.run(run())
    for messages, _ in script.requests:
        first = messages[0].parts[0]
        assert isinstance(first, SystemPromptPart) and first.content == "You are terse."


def test_a_response_with_two_calls_stores_a_result_for_each() -> None:
    script = Script()

    async def run() -> None:
        async with RunnerSession(runner(script), agent="orders") as s:
            turn = await s.send("both 3 7")
            assert turn.text() == "[orders desk] order 3: a chair, $20; order 7: a chair, $20"
            tools = [m for m in s.messages if m.role == "tool"]
            assert [(m.tool_call_id, m.tool_status) for m in tools] == [("c3", "succeeded"), ("c7", "succeeded")]
            # The next turn reads the split results back as the framework's
            # history and goes on.
            turn = await s.send("lookup 9")
            assert turn.text() == "[orders desk] order 9: a chair, $20"

    asyncio.run(run())


def test_a_message_stored_without_an_item_reaches_the_model_as_text() -> None:
    from dex_runner.service import LiveContext

    script = Script()
    r = runner(script)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    item = ModelMessagesTypeAdapter.dump_json([ModelRequest(parts=[UserPromptPart("hi again")])]).decode()[1:-1]
    msgs = [
        pb.Message(sequence=1, role="user", text="hello there", turn_id="turn-1"),
        pb.Message(sequence=2, role="assistant", text="[Dex] The turn failed.", turn_id="turn-1"),
        pb.Message(sequence=3, role="user", text="hi again", framework_item=item, turn_id="turn-2"),
    ]
    turn = pb.TurnContext(agent="orders", turn_id="turn-2", messages=msgs)
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), LiveContext(pb.RunModelStepFrame, False)))
    messages, _ = script.requests[-1]
    texts = [getattr(p, "content", "") for m in messages for p in m.parts]
    assert texts[:2] == ["hello there", "[Dex] The turn failed."]


def test_a_framework_usage_error_fails_the_step_at_once() -> None:
    from pydantic_ai.exceptions import UserError

    from dex_runner.pydantic_ai import _provider_errors
    from dex_runner.runner import RunnerError

    try:
        with _provider_errors():
            raise UserError("Tool call results need to be provided for all deferred tool calls")
    except RunnerError as err:
        assert err.message.startswith("pydantic_ai: Tool call results need to be provided")
        assert err.code.name == "FAILED_PRECONDITION"
    else:
        raise AssertionError("a UserError was not made permanent")
