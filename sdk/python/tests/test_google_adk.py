"""The Google ADK adapter: an LlmAgent with function tools (one made with
require_confirmation) driven through whole turns by RunnerSession over a
scripted BaseLlm. Each model call is one RunModelStep through ADK's own
Runner; function calls come back as deferred calls and run through the
agent's own tools with the idempotency key in tool_context.state; stored
messages are ADK's own event JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import BaseModel, Field

from dex_runner import pb
from dex_runner.context import PLANNING_NOTE, SUMMARY_INSTRUCTIONS
from dex_runner.google_adk import IDEMPOTENCY_KEY, GoogleADKRunner
from dex_runner.testing import RunnerSession

REFUNDS: list[str] = []


class Scripted(BaseLlm):
    """Answers from the conversation as a model would: the last user text
    says what to do, and a function's response ends the exchange."""

    model: str = "scripted"
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse]:
        self.requests.append(llm_request.model_copy(deep=True))
        content = self._respond(llm_request)
        text = "".join(p.text or "" for p in content.parts or [])
        if stream and text:
            for i in range(0, len(text), 8):
                yield LlmResponse(content=types.ModelContent(text[i : i + 8]), partial=True)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=2, total_token_count=12
        )
        yield LlmResponse(
            content=content, partial=False if stream else None, usage_metadata=usage, model_version="scripted-1"
        )

    def _respond(self, req: LlmRequest) -> types.Content:
        if req.config.system_instruction == SUMMARY_INSTRUCTIONS:
            return types.ModelContent(f"summary of {len(req.contents)} contents")
        last = req.contents[-1]
        responses = [p.function_response for p in last.parts or [] if p.function_response]
        if responses:
            said = "; ".join(str((r.response or {}).get("result", r.response)) for r in responses)
            return types.ModelContent(f"[model] {said}")
        texts = [p.text for c in req.contents if c.role == "user" for p in c.parts or [] if p.text]
        words = [t for t in texts if not t.startswith("[Dex]")][-1].split()
        names = [d.name for t in req.config.tools or [] for d in (t.function_declarations or [])]  # type: ignore[union-attr]
        calls = {"lookup": "lookup_order", "refund": "refund_order", "close": "close_order", "ask": "ask_user"}
        if words[0] in calls and calls[words[0]] in names:
            args = {"question": "Which order?"} if words[0] == "ask" else {"order_id": words[-1]}
            part = types.Part(function_call=types.FunctionCall(name=calls[words[0]], args=args, id=f"c-{words[0]}"))
            return types.Content(role="model", parts=[part])
        return types.ModelContent(f"[model] you said {' '.join(words)}")


def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: a chair, $20"


def refund_order(order_id: str, tool_context: ToolContext) -> str:
    """Refund an order."""
    REFUNDS.append(f"{order_id} {tool_context.state[IDEMPOTENCY_KEY]}")
    return f"refunded order {order_id}"


def close_order(order_id: str) -> dict[str, str]:
    """Close an order."""
    return {"status": f"closed order {order_id}"}


def runner(model: Scripted) -> GoogleADKRunner:
    def build(name: str, cfg: dict[str, Any]) -> LlmAgent:
        return LlmAgent(
            name="orders",
            model=model,
            instruction="You help with orders.",
            tools=[lookup_order, refund_order, FunctionTool(close_order, require_confirmation=True)],
        )

    return GoogleADKRunner(build, tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"})


def test_tools_approvals_and_adks_event_json() -> None:
    REFUNDS.clear()
    model = Scripted(requests=[])

    async def run() -> None:
        async with RunnerSession(runner(model), agent="orders") as s:
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
            assert REFUNDS == [f"9 runnertest/{turn.id}/c-refund"]

            # A confirmation tool waits for the session's approval, then runs
            # confirmed.
            approvals: list[str] = []

            def approve(call: pb.DeferredToolCall) -> tuple[bool, str]:
                approvals.append(f"{call.tool_name} {call.policy.requires_approval}")
                return True, ""

            s.approve = approve
            turn = await s.send("close 4")
            assert turn.text() == '[model] {"status": "closed order 4"}'
            assert "close_order True" in approvals

            kinds = [json.loads(m.framework_item)["author"] for m in s.messages[:4]]
            assert kinds == ["user", "orders", "orders", "orders"]
        # One model call per step.
        assert len(model.requests) == 8

    asyncio.run(run())


def test_configure_reports_tools_and_refuses_what_does_not_map() -> None:
    r = runner(Scripted(requests=[]))
    resp = asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    assert list(resp.tools) == ["lookup_order", "refund_order", "close_order"]
    assert resp.tool_policies["close_order"].requires_approval
    assert not resp.tool_policies["lookup_order"].requires_approval

    class Answer(BaseModel):
        text: str

    cases = [
        (
            LlmAgent(name="root", model=Scripted(requests=[]), sub_agents=[LlmAgent(name="child", model="x")]),
            "sub_agents are",
        ),
        (LlmAgent(name="root", model=Scripted(requests=[]), output_schema=Answer), "output_schema is"),
    ]
    for agent, what in cases:

        def build(n: str, c: dict[str, Any], a: LlmAgent = agent) -> LlmAgent:
            return a

        try:
            asyncio.run(GoogleADKRunner(build).configure(pb.ConfigureRequest(agent="a", runner_config="{}")))
        except ValueError as err:
            assert f"{what} not supported yet" in str(err)
        else:
            raise AssertionError(f"configure accepted {what}")

    def rule(order_id: str) -> bool:
        return order_id == "9"

    def confirmed(order_id: str) -> str:
        """Close an order."""
        return "ok"

    conf = LlmAgent(
        name="root", model=Scripted(requests=[]), tools=[FunctionTool(confirmed, require_confirmation=rule)]
    )
    resp = asyncio.run(GoogleADKRunner(lambda n, c: conf).configure(pb.ConfigureRequest(agent="a", runner_config="{}")))
    assert resp.tool_policies["confirmed"].requires_approval  # a rule that is a function asks for every call


def test_the_sessions_tools_are_offered_and_a_planning_turn_offers_only_write_todos() -> None:
    from dex_runner.service import LiveContext

    model = Scripted(requests=[])
    schema = json.dumps({"type": "object", "properties": {"question": {"type": "string"}}})
    host = [
        pb.ToolDefinition(name=n, description="session tool", input_schema=schema, effect="read")
        for n in ("ask_user", "write_todos")
    ]

    async def run() -> None:
        async with RunnerSession(runner(model), agent="orders", host_tools=host) as s:
            s.host_tool = lambda call: '{"status":"answered","answer":"7"}'
            turn = await s.send("ask me")
            assert turn.text() == '[model] {"status":"answered","answer":"7"}'

        r = runner(model)
        await r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}"))
        event = json.loads(
            (
                await r.build_user_message(pb.BuildUserMessageRequest(agent="orders", text="plan it"))
            ).message.framework_item
        )
        msg = pb.Message(sequence=1, role="user", text="plan it", framework_item=json.dumps(event), turn_id="turn-1")
        turn_ctx = pb.TurnContext(
            agent="orders",
            session_id="s1",
            turn_id="turn-1",
            interaction_mode="planning",
            host_tools=host,
            messages=[msg],
        )
        await r.run_model_step(pb.RunModelStepRequest(turn=turn_ctx), LiveContext(pb.RunModelStepFrame, False))
        req = model.requests[-1]
        assert [d.name for t in req.config.tools or [] for d in (t.function_declarations or [])] == ["write_todos"]  # type: ignore[union-attr]
        texts = [p.text for c in req.contents for p in c.parts or [] if p.text]
        assert texts == [PLANNING_NOTE, "plan it"]

    asyncio.run(run())


def test_compaction_cuts_where_every_call_has_its_result() -> None:
    from dex_runner.service import LiveContext

    model = Scripted(requests=[])
    r = runner(model)

    async def run() -> None:
        await r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}"))
        async with RunnerSession(r, agent="orders") as s:
            await s.send("lookup 7 " + "x" * 300)
            await s.send("thanks")
            msgs = list(s.messages)
        turn = pb.TurnContext(agent="orders", session_id="s1", turn_id="turn-3", messages=msgs)
        cut = await r.select_compaction_cutoff(pb.CompactionCutoffRequest(turn=turn, retained_token_budget=1))
        roles = [m.role for m in msgs]
        assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
        assert cut.through_sequence == msgs[4].sequence
        resp = await r.summarize_context(
            pb.SummarizeContextRequest(turn=turn, messages=msgs[:4]), LiveContext(pb.RunModelStepFrame, False)
        )
        assert resp.summary == "summary of 5 contents" and resp.usage.model_calls == 1

    asyncio.run(run())
