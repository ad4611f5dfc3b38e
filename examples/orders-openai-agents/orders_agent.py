"""The orders agent, written the way the OpenAI Agents SDK's documentation
writes agents: an Agent with instructions, a model and function tools.
Nothing here knows about dex-agent-worker except the context type the
refund reads its idempotency key from."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, Model, RunContextWrapper, function_tool
from dex_runner.openai_agents import DexToolContext

SEED = {
    "3": {"item": "monitor arm", "customer": "customer-3", "status": "delivered", "total_cents": 4900},
    "7": {"item": "office chair", "customer": "customer-7", "status": "delivered", "total_cents": 6250},
}


class Store:
    """Orders in a JSON file: every write replaces the file at once, and a
    refund is applied once per idempotency key."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        if not self.path.exists():
            self._write({k: {**v, "refunds": []} for k, v in SEED.items()})

    def _read(self) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = json.loads(self.path.read_text())
        return data

    def _write(self, data: dict[str, dict[str, Any]]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".orders-")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, self.path)

    def lookup(self, order_id: str) -> str:
        o = self._read().get(order_id)
        if o is None:
            return f"There is no order {order_id}."
        refunded = sum(int(r["amount_cents"]) for r in o["refunds"])
        total = int(o["total_cents"]) / 100
        return (
            f"Order {order_id}: {o['item']} for {o['customer']}, {o['status']}, "
            f"${total:.2f}, ${refunded / 100:.2f} refunded."
        )

    def refund(self, order_id: str, amount_cents: int, key: str) -> str:
        data = self._read()
        o = data.get(order_id)
        if o is None:
            return f"There is no order {order_id}."
        refunds: list[dict[str, Any]] = o["refunds"]
        if not any(r["idempotency_key"] == key for r in refunds):
            refunds.append({"idempotency_key": key, "amount_cents": amount_cents})
            self._write(data)
        return f"Refunded ${amount_cents / 100:.2f} for order {order_id}."


def build_agent(model: Model, store: Store) -> Agent[DexToolContext]:
    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by its ID: the item, customer, status, total and what was refunded."""
        return store.lookup(order_id)

    @function_tool(needs_approval=True)
    def refund_order(ctx: RunContextWrapper[DexToolContext], order_id: str, amount_cents: int) -> str:
        """Refund part or all of an order, in cents."""
        return store.refund(order_id, amount_cents, ctx.context.idempotency_key)

    return Agent(
        name="orders",
        instructions="You help customers with their orders. Look an order up before you refund it.",
        model=model,
        tools=[lookup_order, refund_order],
    )
