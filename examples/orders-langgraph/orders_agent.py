"""The orders agent, written the way LangChain's and LangGraph's
documentation writes agents: tools with the @tool decorator that read the
run's context through ToolRuntime, and create_agent with a system prompt
and a context schema. Nothing here knows about dex-agent-worker except the
DexToolContext the refund reads its idempotency key from, and the
session's tools (ask_user, write_todos) it offers the model."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from dex_runner.langgraph import DexToolContext, session_tools
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models import BaseChatModel

ORDERS = {
    "3": ("monitor arm", "customer-3", 4900),
    "7": ("office chair", "customer-7", 6250),
}


class Ledger:
    """The orders' refunds in a JSON file, keyed by idempotency key, so a
    refund repeated with the same key applies once. A lock file keeps
    concurrent writers apart."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        data: dict[str, dict[str, Any]] = json.loads(self.path.read_text() or "{}")
        return data

    def refunded_cents(self, order_id: str) -> int:
        return sum(int(r["amount_cents"]) for r in self._load().values() if r["order_id"] == order_id)

    def add(self, key: str, order_id: str, amount_cents: int) -> None:
        with open(str(self.path) + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            refunds = self._load()
            refunds.setdefault(key, {"order_id": order_id, "amount_cents": amount_cents})
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(refunds, indent=1))
            os.replace(tmp, self.path)


def build_agent(model: BaseChatModel, ledger: Ledger) -> Any:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by its ID: the item, customer, total and what was refunded."""
        if order_id not in ORDERS:
            return f"There is no order {order_id}."
        item, customer, total = ORDERS[order_id]
        refunded = ledger.refunded_cents(order_id)
        return f"Order {order_id}: {item} for {customer}, ${total / 100:.2f}, ${refunded / 100:.2f} refunded."

    @tool
    def refund_order(order_id: str, amount_cents: int, runtime: ToolRuntime[DexToolContext]) -> str:
        """Refund part or all of an order, in cents."""
        if order_id not in ORDERS:
            return f"There is no order {order_id}."
        ledger.add(runtime.context.idempotency_key, order_id, amount_cents)
        return f"Refunded ${amount_cents / 100:.2f} for order {order_id}."

    return create_agent(
        model,
        tools=[lookup_order, refund_order, *session_tools("ask_user", "write_todos")],
        system_prompt="You help customers with their orders. Look an order up before you refund it.",
        context_schema=DexToolContext,
    )
