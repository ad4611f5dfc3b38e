"""The orders agent, written the way Google ADK's documentation writes
agents: plain functions with docstrings as tools, a refund that asks for
confirmation (FunctionTool(require_confirmation=True)), and an LlmAgent
with an instruction. Nothing here knows about dex-agent-worker except the
state key the refund reads its idempotency key from."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from dex_runner.google_adk import IDEMPOTENCY_KEY
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

CATALOG = {"3": ("monitor arm", 4900), "7": ("office chair", 6250)}


class RefundLog:
    """Refunds as JSON lines, one per idempotency key: a refund written
    again with the same key is not written twice."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def entries(self) -> list[dict[str, object]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def write(self, key: str, order_id: str, amount_cents: int) -> None:
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            if any(json.loads(line).get("idempotency_key") == key for line in f.read().splitlines() if line):
                return
            f.write(json.dumps({"idempotency_key": key, "order_id": order_id, "amount_cents": amount_cents}) + "\n")


def build_agent(model: str | BaseLlm, log: RefundLog) -> LlmAgent:
    def lookup_order(order_id: str) -> dict[str, object]:
        """Looks up an order by its ID.

        Args:
            order_id: The order's ID, such as "7".

        Returns:
            The item, its total in cents and what was refunded, or an error.
        """
        if order_id not in CATALOG:
            return {"status": "error", "error_message": f"There is no order {order_id}."}
        item, total = CATALOG[order_id]
        refunded = sum(int(str(e["amount_cents"])) for e in log.entries() if e["order_id"] == order_id)
        return {
            "status": "success",
            "order_id": order_id,
            "item": item,
            "total_cents": total,
            "refunded_cents": refunded,
        }

    def refund_order(order_id: str, amount_cents: int, tool_context: ToolContext) -> dict[str, object]:
        """Refunds part or all of an order.

        Args:
            order_id: The order's ID.
            amount_cents: How much to refund, in cents.
        """
        if order_id not in CATALOG:
            return {"status": "error", "error_message": f"There is no order {order_id}."}
        log.write(str(tool_context.state[IDEMPOTENCY_KEY]), order_id, amount_cents)
        return {"status": "success", "report": f"Refunded ${amount_cents / 100:.2f} for order {order_id}."}

    return LlmAgent(
        name="orders",
        model=model,
        description="Looks orders up and refunds them.",
        instruction="You help customers with their orders. Look an order up before you refund it.",
        tools=[lookup_order, FunctionTool(refund_order, require_confirmation=True)],
    )
