"""The orders agent, written the way Pydantic AI's documentation writes
agents: an Agent with a deps type, instructions and tools that take a
RunContext. Nothing here knows about dex-agent-worker except the
DexToolContext in the deps, which carries the refund's idempotency key."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass

from dex_runner.pydantic_ai import DexToolContext
from pydantic_ai import Agent, RunContext
from pydantic_ai.models import Model

SEED = [
    ("3", "monitor arm", "customer-3", "delivered", 4900),
    ("7", "office chair", "customer-7", "delivered", 6250),
]


class Orders:
    """Orders in SQLite. A refund is one row whose primary key is the
    call's idempotency key, so a repeated refund applies once."""

    def __init__(self, path: str) -> None:
        self.path = path
        with closing(self._connect()) as db, db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, item TEXT, customer TEXT, "
                "status TEXT, total_cents INTEGER)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS refunds (idempotency_key TEXT PRIMARY KEY, order_id TEXT, "
                "amount_cents INTEGER)"
            )
            db.executemany("INSERT OR IGNORE INTO orders VALUES (?, ?, ?, ?, ?)", SEED)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def lookup(self, order_id: str) -> str:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT item, customer, status, total_cents FROM orders WHERE id = ?", (order_id,)
            ).fetchone()
            if row is None:
                return f"There is no order {order_id}."
            (refunded,) = db.execute(
                "SELECT COALESCE(SUM(amount_cents), 0) FROM refunds WHERE order_id = ?", (order_id,)
            ).fetchone()
        item, customer, status, total = row
        return f"Order {order_id}: {item} for {customer}, {status}, ${total / 100:.2f}, ${refunded / 100:.2f} refunded."

    def refund(self, order_id: str, amount_cents: int, key: str) -> str:
        with closing(self._connect()) as db, db:
            if db.execute("SELECT 1 FROM orders WHERE id = ?", (order_id,)).fetchone() is None:
                return f"There is no order {order_id}."
            db.execute("INSERT OR IGNORE INTO refunds VALUES (?, ?, ?)", (key, order_id, amount_cents))
        return f"Refunded ${amount_cents / 100:.2f} for order {order_id}."


@dataclass
class Deps:
    orders: Orders
    dex: DexToolContext


def build_agent(model: Model) -> Agent[Deps, str]:
    agent = Agent(
        model,
        deps_type=Deps,
        instructions="You help customers with their orders. Look an order up before you refund it.",
    )

    @agent.tool
    def lookup_order(ctx: RunContext[Deps], order_id: str) -> str:
        """Look up an order by its ID: the item, customer, status, total and what was refunded."""
        return ctx.deps.orders.lookup(order_id)

    @agent.tool(requires_approval=True)
    def refund_order(ctx: RunContext[Deps], order_id: str, amount_cents: int) -> str:
        """Refund part or all of an order, in cents."""
        return ctx.deps.orders.refund(order_id, amount_cents, ctx.deps.dex.idempotency_key)

    return agent
