"""The Claude Agent SDK adapter: the orders example's tools and options,
driven through whole turns by RunnerSession, with the real Claude Code
harness that the SDK bundles talking to the example's scripted Anthropic
server. Reads run inside the harness; a write is deferred through the
PreToolUse hook, runs in ExecuteDeferredToolCall with the idempotency key,
and the harness resumes from the stored transcript with the recorded
result; stored messages are the harness's own transcript entries."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dex_runner import pb
from dex_runner.claude_agent_sdk import ClaudeAgentSDKRunner
from dex_runner.testing import RunnerSession

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "orders-claude-agent-sdk"
sys.path.insert(0, str(EXAMPLE))

import orders_agent  # type: ignore[import-not-found]  # noqa: E402
import scripted  # type: ignore[import-not-found]  # noqa: E402


def runner(tmp: Path) -> tuple[ClaudeAgentSDKRunner, orders_agent.Ledger]:
    ledger = orders_agent.Ledger(str(tmp / "refunds.json"))
    tools = orders_agent.build_tools(ledger)
    model = scripted.ScriptedAnthropic()

    def build(name: str, cfg: dict[str, Any]) -> Any:
        return orders_agent.build_options(tools, "claude-sonnet-4-5",
                                          {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "-"})  # fmt: skip

    r = ClaudeAgentSDKRunner(
        build, servers={"orders": tools}, tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"}
    )
    return r, ledger


def test_reads_run_in_the_harness_and_a_write_is_deferred_once(tmp_path: Path) -> None:
    r, ledger = runner(tmp_path)

    async def run() -> None:
        async with RunnerSession(r, agent="orders") as s:
            turn = await s.send("where is order 7?")
            assert turn.text() == "Order 7: office chair for customer-7, $62.50, $0.00 refunded."
            # The read ran inside the harness: a tool message, no record.
            assert turn.call("lookup_order") is None
            tools = [m for m in s.messages if m.role == "tool"]
            assert [(m.tool_name, m.tool_status) for m in tools] == [("lookup_order", "succeeded")]
            assert turn.usage.model_calls == 2  # one Step, two model calls
            assert "office chair" in s.text()  # streamed live

            asked: list[str] = []

            def approve(call: pb.DeferredToolCall) -> tuple[bool, str]:
                asked.append(f"{call.tool_name} {call.policy.effect} {call.arguments}")
                return True, ""

            s.approve = approve
            turn = await s.send("refund order 7")
            assert asked == ['refund_order non_idempotent_write {"order_id": "7", "amount_cents": 6250}']
            assert turn.text() == "Refunded $62.50 for order 7."
            rec = turn.call("refund_order")
            assert rec is not None and rec.status == "succeeded"
            refunds = json.loads(Path(ledger.path).read_text())
            assert list(refunds) == [f"runnertest/{turn.id}/{rec.tool_call_id}"]
            # Every stored message is the harness's own transcript entries.
            for m in s.messages:
                assert all(e["type"] in ("user", "assistant", "attachment") for e in json.loads(m.framework_item))

            # A rejection reaches the model as the call's result; nothing runs.
            s.approve = lambda call: (False, "Refunds need a manager.")
            turn = await s.send("refund order 3")
            assert turn.text() == "Refunds need a manager."
            assert len(json.loads(Path(ledger.path).read_text())) == 1

    asyncio.run(run())


def test_configure_refuses_what_does_not_map(tmp_path: Path) -> None:
    from claude_agent_sdk import ClaudeAgentOptions

    async def configure(options: ClaudeAgentOptions) -> str:
        r = ClaudeAgentSDKRunner(lambda n, c: options, servers={})
        try:
            await r.configure(pb.ConfigureRequest(agent="a", runner_config="{}"))
        except ValueError as e:
            return str(e)
        return ""

    assert "built-in tools" in asyncio.run(configure(ClaudeAgentOptions(tools=["Bash"])))
    assert "worker config's mcp_servers" in asyncio.run(
        configure(ClaudeAgentOptions(mcp_servers={"x": {"type": "stdio", "command": "x"}}))
    )
    assert "options.resume" in asyncio.run(configure(ClaudeAgentOptions(resume="abc")))
    with pytest.raises(ValueError, match="max_model_calls"):
        ClaudeAgentSDKRunner(lambda n, c: ClaudeAgentOptions(), servers={}, max_model_calls=0)
