"""function_tool's schemas and ToolSet's outcomes."""

from __future__ import annotations

import asyncio
import enum
import json
import threading
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

import pytest

from dex_runner import (
    ToolContext,
    ToolDefinitionError,
    ToolExecutionError,
    ToolInputRequested,
    ToolSet,
    ToolTaskStarted,
    function_tool,
    pb,
)
from dex_runner.service import LiveContext


class Speed(enum.Enum):
    SLOW = "slow"
    FAST = "fast"


@dataclass
class Address:
    street: str
    zip: str = ""


class Item(TypedDict):
    sku: str
    count: int


@function_tool(effect="read")
async def lookup_order(order_id: Annotated[str, "The order's ID"]) -> str:
    """Look up an order by its ID."""
    return f"order {order_id}: a chair"


@function_tool(effect="non_idempotent_write", requires_approval=True)
async def refund_order(ctx: ToolContext, order_id: str, amount_cents: int | None = None) -> dict[str, Any]:
    """Refund an order."""
    if order_id == "0":
        raise ToolExecutionError("order 0 does not exist")
    return {"refunded": order_id, "amount_cents": amount_cents, "key": ctx.idempotency_key, "attempt": ctx.attempt}


@function_tool(effect="idempotent_write", name="ship")
def ship_sync(
    ctx: ToolContext, to: Address, speed: Speed, items: list[Item], mode: Literal["air", "sea"] = "air"
) -> str:
    # A sync tool runs in a worker thread, not on the event loop.
    assert threading.current_thread() is not threading.main_thread()
    if not ctx.input_answers:
        raise ToolInputRequested("Gift wrap?", choices=["yes", "no"], continuation="k1")
    return f"{to.street} {speed.name} {items[0]['sku']}x{items[0]['count']} {mode} wrap={ctx.input_answers[0]}"


@function_tool(effect="unclassified")
async def start_report(ctx: ToolContext) -> str:
    raise ToolTaskStarted("job-1", poll_interval_seconds=5)


def test_schemas() -> None:
    assert lookup_order.description == "Look up an order by its ID."
    assert lookup_order.parameters == {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order's ID"}},
        "required": ["order_id"],
        "additionalProperties": False,
    }
    assert refund_order.parameters["properties"]["amount_cents"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert refund_order.parameters["required"] == ["order_id"]
    assert "ctx" not in refund_order.parameters["properties"]
    ship = ship_sync.parameters["properties"]
    assert ship["to"] == {
        "type": "object",
        "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
        "required": ["street"],
        "additionalProperties": False,
    }
    assert ship["speed"] == {"enum": ["slow", "fast"]}
    assert ship["items"]["items"]["required"] == ["sku", "count"]
    assert ship["mode"] == {"enum": ["air", "sea"]}
    d = ship_sync.definition()
    assert (d.name, d.effect) == ("ship", "idempotent_write")
    assert json.loads(d.input_schema) == ship_sync.parameters


def test_definition_errors() -> None:
    with pytest.raises(ToolDefinitionError, match="effect 'reads' is not one of"):
        function_tool(effect="reads")
    with pytest.raises(ToolDefinitionError, match="parameter x has no type hint"):

        @function_tool()
        def untyped(x) -> str:  # type: ignore[no-untyped-def]
            return ""

    with pytest.raises(ToolDefinitionError, match="has no JSON Schema"):

        @function_tool()
        def odd(x: complex) -> str:
            return ""

    with pytest.raises(ToolDefinitionError, match="two tools are named 'lookup_order'"):
        ToolSet([lookup_order, lookup_order])


def call(name: str, args: str, answers: tuple[str, ...] = (), tasks: bool = False) -> pb.ExecuteToolRequest:
    return pb.ExecuteToolRequest(
        agent="a",
        session_id="s",
        turn_id="turn-1",
        idempotency_key="s/turn-1/c1",
        attempt=2,
        input_answers=list(answers),
        supports_tool_tasks=tasks,
        tool_call=pb.ToolCall(tool_call_id="c1", tool_name=name, arguments=args),
    )


def run(req: pb.ExecuteToolRequest) -> pb.ExecuteToolResponse:
    tools = ToolSet([lookup_order, refund_order, ship_sync, start_report])
    return asyncio.run(tools.execute(req, LiveContext(pb.ToolCallFrame, True)))


def test_outcomes() -> None:
    assert run(call("lookup_order", '{"order_id":"7"}')).result.output == "order 7: a chair"
    out = json.loads(run(call("refund_order", '{"order_id":"7","amount_cents":500}')).result.output)
    assert out == {"refunded": "7", "amount_cents": 500, "key": "s/turn-1/c1", "attempt": 2}
    assert run(call("refund_order", '{"order_id":"0"}')).error.message == "order 0 does not exist"
    args = '{"to":{"street":"Main St"},"speed":"fast","items":[{"sku":"A1","count":2}]}'
    asked = run(call("ship", args)).input_requested
    assert (asked.question, list(asked.choices), asked.continuation) == ("Gift wrap?", ["yes", "no"], "k1")
    assert run(call("ship", args, answers=("yes",))).result.output == "Main St FAST A1x2 air wrap=yes"
    started = run(call("start_report", "{}", tasks=True)).task_started
    assert (started.task_id, started.poll_interval_seconds) == ("job-1", 5)


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        ("nope", "{}", "unknown tool nope"),
        ("lookup_order", "{", "invalid arguments for lookup_order: arguments are not valid JSON"),
        ("lookup_order", "[1]", "invalid arguments for lookup_order: arguments are not a JSON object"),
        ("lookup_order", "{}", "invalid arguments for lookup_order: missing order_id"),
        ("lookup_order", '{"order_id":"7","x":1}', "invalid arguments for lookup_order: unknown x"),
    ],
)
def test_bad_calls_are_errors_the_model_sees(name: str, args: str, error: str) -> None:
    assert run(call(name, args)).error.message == error


def test_policies_and_claims() -> None:
    tools = ToolSet([lookup_order, refund_order])
    assert {n: (p.effect, p.HasField("requires_approval")) for n, p in tools.policies().items()} == {
        "lookup_order": ("read", False),
        "refund_order": ("non_idempotent_write", True),
    }
    turn = pb.TurnContext(
        policies=pb.PolicySet(
            default_effect="unclassified", policies={"lookup_order": pb.ToolPolicy(effect="idempotent_write")}
        )
    )
    assert tools.claim(turn, "lookup_order").effect == "idempotent_write"  # the config first
    assert tools.claim(turn, "refund_order").requires_approval
    assert tools.claim(turn, "ghost").effect == "unclassified"
