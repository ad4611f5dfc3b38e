"""The orders agent, written the way the Claude Agent SDK's documentation
writes agents: tools made with the @tool decorator, served in process by
create_sdk_mcp_server, and ClaudeAgentOptions with a system prompt, the
MCP server and the tools Claude may call without asking. Nothing here
knows about dex-agent-worker except current_deferred_tool_execution(), the
call the refund reads its idempotency key from."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, SdkMcpTool, create_sdk_mcp_server, tool
from dex_runner.claude_agent_sdk import current_deferred_tool_execution

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


def _text(text: str, is_error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        out["is_error"] = True
    return out


def build_tools(ledger: Ledger) -> list[SdkMcpTool[Any]]:
    @tool("lookup_order", "Look up an order by its ID: the item, customer, total and what was refunded.",
          {"order_id": str})  # fmt: skip
    async def lookup_order(args: dict[str, Any]) -> dict[str, Any]:
        order_id = str(args["order_id"])
        if order_id not in ORDERS:
            return _text(f"There is no order {order_id}.", is_error=True)
        item, customer, total = ORDERS[order_id]
        refunded = ledger.refunded_cents(order_id)
        return _text(f"Order {order_id}: {item} for {customer}, ${total / 100:.2f}, ${refunded / 100:.2f} refunded.")

    @tool("refund_order", "Refund part or all of an order, in cents.", {"order_id": str, "amount_cents": int})
    async def refund_order(args: dict[str, Any]) -> dict[str, Any]:
        order_id, amount = str(args["order_id"]), int(args["amount_cents"])
        if order_id not in ORDERS:
            return _text(f"There is no order {order_id}.", is_error=True)
        call = current_deferred_tool_execution()
        if call is None:
            return _text("refund_order runs only as the session's approved call.", is_error=True)
        ledger.add(call.idempotency_key, order_id, amount)
        return _text(f"Refunded ${amount / 100:.2f} for order {order_id}.")

    return [lookup_order, refund_order]


def build_options(tools: list[SdkMcpTool[Any]], model: str, env: dict[str, str]) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        system_prompt="You help customers with their orders. Look an order up before you refund it.",
        model=model,
        mcp_servers={"orders": create_sdk_mcp_server("orders", version="1.0.0", tools=tools)},
        allowed_tools=["mcp__orders__lookup_order"],
        env=env,
    )
