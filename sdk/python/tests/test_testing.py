"""RunnerSession drives a runner built on ToolSet through whole turns:
deferred calls settle by their policies, approvals and questions reach the
test, and the final records go back to the model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from dex_runner import (
    InfoResult,
    ToolContext,
    ToolInputRequested,
    ToolSet,
    describe_tool_call_outcome,
    function_tool,
    pb,
)
from dex_runner.runner import CallContext, ToolCallContext
from dex_runner.testing import RunnerSession, TurnError

refunds: list[str] = []


@function_tool(effect="read")
async def lookup_order(order_id: str) -> str:
    return f"order {order_id}: $20"


@function_tool(effect="non_idempotent_write")
async def refund_order(ctx: ToolContext, order_id: str) -> str:
    if not ctx.input_answers:
        raise ToolInputRequested("Refund in full?", choices=["yes", "no"])
    refunds.append(f"{order_id} {ctx.idempotency_key} {ctx.input_answers[0]}")
    return f"refunded {order_id}"


class ScriptedRunner:
    """Calls lookup_order and refund_order, then answers with the records'
    outcomes: a runner's loop in a few lines."""

    tools = ToolSet([lookup_order, refund_order])

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult("scripted", "1")

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        return pb.ConfigureResponse(tools=self.tools.names(), tool_policies=self.tools.policies())

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        return pb.BuildUserMessageResponse(message=pb.FrameworkMessage(role="user", text=req.text))

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        turn = req.turn
        if turn.tool_calls:
            text = "; ".join(f"{c.tool_name}: {describe_tool_call_outcome(c)}" for c in turn.tool_calls)
            ctx.write_text_delta(text)
            msg = pb.FrameworkMessage(role="assistant", text=text)
            return pb.RunModelStepResponse(
                turn_completed=pb.TurnCompleted(new_messages=[msg], usage=pb.Usage(model_calls=1))
            )
        calls = [
            pb.DeferredToolCall(
                tool_call_id=f"c{i}",
                tool_name=name,
                arguments=json.dumps({"order_id": "7"}),
                policy=self.tools.claim(turn, name),
            )
            for i, name in enumerate(("lookup_order", "refund_order"))
        ]
        return pb.RunModelStepResponse(
            tool_calls_requested=pb.ToolCallsRequested(run_state="{}", tool_calls=calls, usage=pb.Usage(model_calls=1))
        )

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        return await self.tools.execute(req, ctx)


def test_a_turn_with_an_approval_and_a_question() -> None:
    refunds.clear()

    async def run() -> None:
        async with RunnerSession(ScriptedRunner(), agent="orders") as s:
            asked: list[str] = []
            s.approve = lambda call: (True, "")

            def answer(call: pb.DeferredToolCall, q: pb.ToolInputRequested) -> str:
                asked.append(q.question)
                return "yes"

            s.answer = answer
            turn = await s.send("refund order 7")
            assert turn.text() == "lookup_order: order 7: $20; refund_order: refunded 7"
            assert asked == ["Refund in full?"]
            assert refunds == ["7 runnertest/turn-1/c1 yes"]
            lookup, refund = turn.call("lookup_order"), turn.call("refund_order")
            assert lookup is not None and (lookup.effect, lookup.requires_approval) == ("read", False)
            assert refund is not None and (refund.effect, refund.requires_approval) == ("non_idempotent_write", True)
            assert turn.model_calls == 2 and turn.usage.model_calls == 2
            assert s.text() == turn.text()

            # A rejection is the record's outcome; the tool never runs.
            s.approve = lambda call: (False, "Not today.")
            turn = await s.send("again")
            assert turn.text() == "lookup_order: order 7: $20; refund_order: Not today."
            assert len(refunds) == 1
            assert [m.sequence for m in s.messages] == [1, 2, 3, 4]

    asyncio.run(run())


def test_a_runner_that_breaks_the_contract_fails_the_turn() -> None:
    class Broken(ScriptedRunner):
        async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> Any:
            return pb.RunModelStepResponse()

    async def run() -> None:
        async with RunnerSession(Broken()) as s:
            with pytest.raises(TurnError, match="INVALID_ARGUMENT: RunModelStep returned no outcome"):
                await s.send("hi")

    asyncio.run(run())
