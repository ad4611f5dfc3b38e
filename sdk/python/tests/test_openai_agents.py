"""The OpenAI Agents SDK adapter: an agents.Agent with function tools and a
handoff, driven through whole turns by RunnerSession over a scripted
agents Model. Each model call is one RunModelStep; tool calls come back as
deferred calls with their policies and run through the tools' own
on_invoke_tool with the idempotency key; a handoff changes the active agent
durably (it is derived from the stored items)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelSettings, RunContextWrapper, function_tool, handoff
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

from dex_runner import pb
from dex_runner.context import PLANNING_NOTE, SUMMARY_INSTRUCTIONS, SUMMARY_NOTE_HEADER, SUMMARY_OMISSION_FORMAT
from dex_runner.openai_agents import DexToolContext, OpenAIAgentsRunner
from dex_runner.runner import RunnerError
from dex_runner.testing import RunnerSession

refunds: list[str] = []


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: a chair, $20"


@function_tool(needs_approval=True)
def refund_order(ctx: RunContextWrapper[DexToolContext], order_id: str) -> str:
    """Refund an order."""
    refunds.append(f"{order_id} {ctx.context.idempotency_key}")
    return f"refunded order {order_id}"


def text(t: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=t, annotations=[])],
    )  # fmt: skip


def fcall(call_id: str, name: str, args: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(args), id="fc-" + call_id
    )


class Scripted(Model):
    """Answers from the last input item, as a model would from the
    conversation: the agent it runs for is in the instructions. It streams
    as the Responses API does: text deltas, then response.completed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[str]]] = []
        self.inputs: list[list[Any]] = []

    def _respond(self, system_instructions: str | None, input: Any, tools: Any, handoffs: Any) -> list[Any]:
        names = [t.name for t in tools] + [h.tool_name for h in handoffs]
        self.calls.append((system_instructions, names))
        self.inputs.append(list(input))
        if system_instructions == SUMMARY_INSTRUCTIONS:
            return [text(f"summary of {len(input)} items")]
        last = input[-1]
        if last.get("type") == "function_call_output":
            return [text(f"[{system_instructions}] {last['output']}")]
        words = str(last.get("content", "")).split()
        if words[0] == "lookup":
            return [fcall("c1", "lookup_order", {"order_id": words[1]})]
        if words[0] == "refund":
            return [fcall("c2", "refund_order", {"order_id": words[1]})]
        if words[0] == "ask" and "ask_user" in names:
            return [fcall("c4", "ask_user", {"question": "Which order?"})]
        if words[0] == "transfer" and handoffs:
            return [fcall("c3", handoffs[0].tool_name, {})]
        return [text(f"[{system_instructions}] you said {' '.join(words)}")]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise AssertionError("the adapter streams")

    async def stream_response(
        self, system_instructions: str | None, input: Any, model_settings: ModelSettings, tools: Any,
        output_schema: Any, handoffs: Any, tracing: Any, **_: Any,
    ) -> AsyncIterator[Any]:  # fmt: skip
        output = self._respond(system_instructions, input, tools, handoffs)
        for o in output:
            if isinstance(o, ResponseOutputMessage):
                for i, part in enumerate(o.content):
                    t = getattr(part, "text", "")
                    for j in range(0, len(t), 8):  # in chunks, as a stream
                        yield ResponseTextDeltaEvent.model_construct(
                            type="response.output_text.delta", delta=t[j : j + 8], item_id=o.id, output_index=0,
                            content_index=i, sequence_number=j, logprobs=[],
                        )  # fmt: skip
        usage = ResponseUsage.model_construct(
            input_tokens=10, output_tokens=2, total_tokens=12,
            input_tokens_details=InputTokensDetails(cached_tokens=4, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=1),
        )  # fmt: skip
        resp = Response.model_construct(id="resp-1", output=output, usage=usage)
        yield ResponseCompletedEvent.model_construct(type="response.completed", response=resp, sequence_number=99)


def runner(model: Scripted) -> OpenAIAgentsRunner:
    def build(name: str, cfg: dict[str, Any]) -> Agent[Any]:
        refunds_agent: Agent[Any] = Agent(
            name="refunds", instructions="refunds desk", model=model, tools=[refund_order]
        )
        return Agent(
            name="triage", instructions="triage desk", model=model, tools=[lookup_order], handoffs=[refunds_agent]
        )

    return OpenAIAgentsRunner(build, tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"})


def test_tools_approvals_and_a_durable_handoff() -> None:
    refunds.clear()
    model = Scripted()

    async def run() -> None:
        async with RunnerSession(runner(model), agent="orders") as s:
            turn = await s.send("lookup 7")
            assert turn.text() == "[triage desk] order 7: a chair, $20"
            rec = turn.call("lookup_order")
            assert rec is not None and (rec.effect, rec.requires_approval, rec.status) == ("read", False, "succeeded")
            assert turn.model_calls == 2 and turn.usage.input_tokens == 20
            assert (turn.usage.cached_input_tokens, turn.usage.reasoning_tokens) == (8, 2)
            assert s.text() == "[triage desk] order 7: a chair, $20"  # streamed live, in chunks

            turn = await s.send("transfer me")
            assert turn.text().startswith("[refunds desk] ")
            assert "refunds" in turn.text()  # the SDK's transfer message names the agent
            # The active agent is derived from the transcript: a new turn
            # (a new process would do the same) stays with refunds.
            s.approve = lambda call: (call.tool_name != "refund_order", "Refunds need a manager.")
            turn = await s.send("refund 9")
            assert turn.text() == "[refunds desk] Refunds need a manager."
            assert refunds == []
            rec = turn.call("refund_order")
            assert rec is not None and (rec.effect, rec.requires_approval, rec.status) == (
                "non_idempotent_write",
                True,
                "rejected",
            )

            s.approve = None
            turn = await s.send("refund 9")
            assert turn.text() == "[refunds desk] refunded order 9"
            assert refunds == [f"9 runnertest/{turn.id}/c2"]
        assert [c[0] for c in model.calls] == ["triage desk"] * 3 + ["refunds desk"] * 5

    asyncio.run(run())


def test_configure_reports_tools_and_policies() -> None:
    r = runner(Scripted())
    resp = asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    assert list(resp.tools) == ["lookup_order", "transfer_to_refunds", "refund_order"]
    assert resp.tool_policies["lookup_order"].effect == "read"
    assert resp.tool_policies["refund_order"].requires_approval
    assert (
        resp.tool_policies["transfer_to_refunds"].effect,
        resp.tool_policies["transfer_to_refunds"].requires_approval,
    ) == ("read", False)


def test_what_does_not_map_yet_is_refused_at_configure() -> None:
    from agents import InputGuardrail, WebSearchTool
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    async def guard(*_: Any) -> Any:
        raise AssertionError("never run")

    cases = [
        (Agent(name="a", tools=[WebSearchTool()]), "is a WebSearchTool: only function tools run here yet"),
        (Agent(name="a", output_type=Answer), "a structured output_type is not supported yet"),
        (
            Agent(name="a", input_guardrails=[InputGuardrail(guardrail_function=guard)]),
            "guardrails are not supported yet",
        ),
    ]
    for agent, want in cases:
        r = OpenAIAgentsRunner(lambda name, cfg, a=agent: a)  # type: ignore[misc]
        try:
            asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
        except ValueError as err:
            assert want in str(err), err
        else:
            raise AssertionError(f"configure accepted {agent}")


def test_the_sessions_tools_are_offered_and_left_to_the_session() -> None:
    model = Scripted()
    ask = pb.ToolDefinition(
        name="ask_user",
        description="Ask the user.",
        input_schema=json.dumps(
            {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}
        ),
        effect="read",
    )

    async def run() -> None:
        async with RunnerSession(runner(model), agent="orders", host_tools=[ask]) as s:
            asked: list[str] = []

            def host_tool(call: pb.DeferredToolCall) -> str:
                asked.append(f"{call.tool_name} {call.arguments} {call.policy.effect}")
                return '{"status":"answered","answer":"7"}'

            s.host_tool = host_tool
            turn = await s.send("ask me")
            assert asked == ['ask_user {"question": "Which order?"} read']
            assert turn.text() == '[triage desk] {"status":"answered","answer":"7"}'
        assert "ask_user" in model.calls[0][1]

    asyncio.run(run())


def test_a_planning_turn_offers_only_write_todos() -> None:
    from dex_runner.service import LiveContext

    model = Scripted()
    r = runner(model)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    host = [
        pb.ToolDefinition(name=n, input_schema='{"type": "object"}', effect="read") for n in ("ask_user", "write_todos")
    ]
    item = '{"role": "user", "content": "plan it"}'
    msg = pb.Message(sequence=1, role="user", text="plan it", framework_item=item, turn_id="turn-1")
    turn = pb.TurnContext(
        agent="orders", turn_id="turn-1", interaction_mode="planning", host_tools=host, messages=[msg]
    )
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), LiveContext(pb.RunModelStepFrame, False)))
    turn.interaction_mode = "chat"
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), LiveContext(pb.RunModelStepFrame, False)))
    assert model.calls[0][1] == ["write_todos"]
    assert model.calls[1][1] == ["lookup_order", "ask_user", "write_todos", "transfer_to_refunds"]


def stored(turn: Any, *items: dict[str, Any], first: int = 1) -> list[pb.Message]:
    """Stored messages of items, as the session keeps them."""
    out = []
    for i, it in enumerate(items):
        role = "tool" if it.get("type") == "function_call_output" else str(it.get("role", "assistant"))
        out.append(
            pb.Message(
                sequence=first + i, role=role, framework_item=json.dumps(it), turn_id=turn,
                tool_call_id=str(it.get("call_id", "")) if role == "tool" else "",
            )
        )  # fmt: skip
    return out


def live() -> Any:
    from dex_runner.service import LiveContext

    return LiveContext(pb.RunModelStepFrame, False)


def test_the_plan_note_comes_before_the_turns_message() -> None:
    model = Scripted()
    r = runner(model)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    msgs = stored(
        "turn-1", {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "plan the refunds"},
    )  # fmt: skip
    plan = pb.Plan(revision=2, status="draft", tasks=[pb.PlanTask(content="Look up order 7", status="pending")])
    turn = pb.TurnContext(agent="orders", turn_id="turn-2", interaction_mode="planning", messages=msgs, plan=plan)
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), live()))
    note = (
        PLANNING_NOTE + "\n[Dex] The current plan (revision 2, draft):\n1. [pending] Look up order 7\n"
        "Keep the task statuses current with write_todos."
    )
    assert [i.get("content") for i in model.inputs[0]] == ["hi", "hello", note, "plan the refunds"]

    turn.interaction_mode, turn.plan.status = "executing", "active"
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), live()))
    assert model.inputs[1][2]["content"] == (
        "[Dex] The current plan (revision 2, active):\n1. [pending] Look up order 7\n"
        "Keep the task statuses current with write_todos."
    )


def test_compaction_cuts_between_whole_responses_and_keeps_the_handoff() -> None:
    model = Scripted()
    r = runner(model)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    msgs = stored(
        "turn-1",
        {"role": "user", "content": "transfer me " + "x" * 300},
        {"type": "function_call", "call_id": "h1", "name": "transfer_to_refunds", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "h1", "output": "{'assistant': 'refunds'}"},
        {"role": "assistant", "content": "refunds here"},
        {"role": "user", "content": "refund 9"},
        {"type": "function_call", "call_id": "c2", "name": "refund_order", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "refunded"},
        {"role": "user", "content": "thanks"},
    )  # fmt: skip
    turn = pb.TurnContext(agent="orders", turn_id="turn-3", messages=msgs)
    cut = asyncio.run(r.select_compaction_cutoff(pb.CompactionCutoffRequest(turn=turn, retained_token_budget=1)))
    # The newest cut within the budget that splits no call from its output:
    # not after sequence 6 (c2 is open), so after 7.
    assert cut.through_sequence == 7
    cut = asyncio.run(r.select_compaction_cutoff(pb.CompactionCutoffRequest(turn=turn, retained_token_budget=10**6)))
    assert cut.through_sequence == 1
    one = stored("turn-1", {"role": "user", "content": "hi"})
    cut = asyncio.run(
        r.select_compaction_cutoff(pb.CompactionCutoffRequest(turn=pb.TurnContext(agent="orders", messages=one)))
    )
    assert cut.through_sequence == 0

    req = pb.SummarizeContextRequest(turn=turn, messages=msgs[:7], previous_summary="they said hello")
    resp = asyncio.run(r.summarize_context(req, live()))
    assert model.calls[-1] == (SUMMARY_INSTRUCTIONS, [])
    assert model.inputs[-1][0] == {"role": "user", "content": SUMMARY_NOTE_HEADER + "\nthey said hello"}
    assert resp.summary == "summary of 8 items\n\n[Dex] Active agent: refunds"
    assert resp.usage.model_calls == 1 and resp.usage.input_tokens == 10

    # A budget that fits only the newest whole responses leaves the oldest
    # out and says how many.
    req.input_token_budget = 350
    resp = asyncio.run(r.summarize_context(req, live()))
    assert model.inputs[-1][1] == {"role": "user", "content": SUMMARY_OMISSION_FORMAT % 1}
    assert resp.summary == "summary of 8 items\n\n[Dex] Active agent: refunds"
    req.input_token_budget = 10
    try:
        asyncio.run(r.summarize_context(req, live()))
    except RunnerError as err:
        assert "does not fit the summary call's input budget" in err.message
    else:
        raise AssertionError("a budget nothing fits was accepted")

    # The next model call starts with the summary and stays with the agent
    # the summarized handoff made active.
    turn.context_summary.CopyFrom(pb.ContextSummary(generation=1, first_sequence=1, last_sequence=7, text=resp.summary))
    del turn.messages[:7]
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), live()))
    assert model.calls[-1][0] == "refunds desk"
    assert model.inputs[-1][0]["content"].startswith(SUMMARY_NOTE_HEADER + "\nsummary of 8 items")


def test_a_compaction_inside_the_turn_never_orphans_a_result() -> None:
    """A summary may replace a call and its result in the middle of a turn:
    only the calls the stored messages still hold get their results."""
    model = Scripted()
    r = runner(model)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    msgs = stored(
        "turn-1", {"type": "function_call", "call_id": "cb", "name": "lookup_order", "arguments": "{}"}, first=4
    )
    recs = [
        pb.ToolCall(tool_call_id="ca", tool_name="lookup_order", status="succeeded", output="a"),
        pb.ToolCall(tool_call_id="cb", tool_name="lookup_order", status="succeeded", output="b"),
    ]
    summary = pb.ContextSummary(generation=1, first_sequence=1, last_sequence=3, text="they looked order a up")
    turn = pb.TurnContext(agent="orders", turn_id="turn-1", messages=msgs, tool_calls=recs, context_summary=summary)
    resp = asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), live()))
    outputs = [i for i in model.inputs[-1] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["cb"]
    stored_results = [m.tool_call_id for m in resp.turn_completed.new_messages if m.role == "tool"]
    assert stored_results == ["cb"]
    unfinished = asyncio.run(r.build_unfinished_turn_messages(pb.BuildUnfinishedTurnMessagesRequest(turn=turn)))
    assert [m.tool_call_id for m in unfinished.messages] == ["cb"]


def test_a_rejected_handoff_changes_no_agent_and_a_raising_tool_fails_its_step() -> None:
    model = Scripted()
    r = runner(model)

    policies = pb.PolicySet(
        default_effect="unclassified",
        policies={"transfer_to_refunds": pb.ToolPolicy(effect="read", requires_approval=True)},
    )

    async def run() -> None:
        async with RunnerSession(r, agent="orders", policies=policies) as s:
            s.approve = lambda call: (not call.tool_name.startswith("transfer_to_"), "Not now.")
            turn = await s.send("transfer me")
            assert turn.text() == "[triage desk] Not now."
            turn = await s.send("hello")
            assert turn.text() == "[triage desk] you said hello"

    asyncio.run(run())

    @function_tool
    def broken(order_id: str) -> str:
        """Always fails."""
        raise RuntimeError("the payments API is down")

    r2 = OpenAIAgentsRunner(lambda n, c: Agent(name="a", model=model, tools=[broken]))
    asyncio.run(r2.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    call = pb.ToolCall(tool_call_id="c1", tool_name="broken", arguments='{"order_id": "1"}')
    try:
        asyncio.run(r2.execute_deferred_tool_call(pb.ExecuteToolRequest(agent="orders", tool_call=call), live()))
    except RuntimeError as err:
        assert "the payments API is down" in str(err)
    else:
        raise AssertionError("a tool that raises was recorded as a result")


def test_a_needs_approval_function_is_decided_per_call() -> None:
    model = Scripted()

    async def over_100(ctx: Any, args: dict[str, Any], call_id: str) -> bool:
        return int(args.get("amount", 0)) > 100

    @function_tool(needs_approval=over_100)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    r = OpenAIAgentsRunner(
        lambda n, c: Agent(name="a", model=model, tools=[pay]), tool_effects={"pay": "idempotent_write"}
    )
    resp = asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    assert resp.tool_policies["pay"].requires_approval  # the strict answer, before any call
    turn = pb.TurnContext(agent="orders")
    for amount, want in ((50, False), (500, True)):
        p = asyncio.run(r._claim(turn, r._root("orders"), "pay", json.dumps({"amount": amount}), "c1"))
        assert (p.effect, p.requires_approval) == ("idempotent_write", want), amount


def test_a_message_stored_without_an_item_reaches_the_model_as_text() -> None:
    """The session stores a user message as text when BuildUserMessage
    failed, and turn-failure notes the same way: the model still sees them."""
    model = Scripted()
    r = runner(model)
    asyncio.run(r.configure(pb.ConfigureRequest(agent="orders", runner_config="{}")))
    msgs = [
        pb.Message(sequence=1, role="user", text="hello there", turn_id="turn-1"),
        pb.Message(sequence=2, role="assistant", text="[Dex] The turn failed.", turn_id="turn-1"),
        *stored("turn-2", {"role": "user", "content": "lookup 7"}, first=3),
    ]
    turn = pb.TurnContext(agent="orders", turn_id="turn-2", messages=msgs)
    asyncio.run(r.run_model_step(pb.RunModelStepRequest(turn=turn), live()))
    assert model.inputs[-1][:2] == [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "[Dex] The turn failed."},
    ]


def test_a_handoff_object_is_followed() -> None:
    """handoff(agent, tool_name_override=...) is followed as the agent
    itself is: the transfer is a deferred call, and the next model call
    runs for the agent it names."""
    model = Scripted()

    def build(name: str, cfg: dict[str, Any]) -> Agent[Any]:
        refunds_agent: Agent[Any] = Agent(name="refunds", instructions="refunds desk", model=model, tools=[])
        return Agent(
            name="triage", instructions="triage desk", model=model, tools=[lookup_order],
            handoffs=[handoff(refunds_agent, tool_name_override="to_refunds_desk")],
        )  # fmt: skip

    async def run() -> None:
        async with RunnerSession(OpenAIAgentsRunner(build), agent="orders") as s:
            turn = await s.send("transfer me")
            rec = turn.call("to_refunds_desk")
            assert rec is not None and rec.status == "succeeded"
            assert turn.text().startswith("[refunds desk] ")
            turn = await s.send("hello")
            assert turn.text() == "[refunds desk] you said hello"
        assert [c[0] for c in model.calls] == ["triage desk", "refunds desk", "refunds desk"]
        assert "to_refunds_desk" in model.calls[0][1]

    asyncio.run(run())
