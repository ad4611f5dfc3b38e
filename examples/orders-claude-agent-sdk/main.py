"""The runner plugin of the orders agent on the Claude Agent SDK.

runner_config:

    ledger_path: refunds.json     # the refunds ledger
    model: {name: claude-sonnet-4-5, base_url: https://api.anthropic.com, api_key_env: ANTHROPIC_API_KEY}
    # or model: {provider: scripted}: the demo's scripted model, no key

List the key's variable in plugins.<name>.env; the plugin sees nothing else.
"""

from __future__ import annotations

import os
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from dex_runner import serve
from dex_runner.claude_agent_sdk import ClaudeAgentSDKRunner

from orders_agent import Ledger, build_options, build_tools
from scripted import ScriptedAnthropic

ledger = Ledger("refunds.json")
tools = build_tools(ledger)
scripted: ScriptedAnthropic | None = None


def build(agent_name: str, cfg: dict[str, Any]) -> ClaudeAgentOptions:
    global scripted
    unknown = set(cfg) - {"ledger_path", "model"}
    if unknown:
        raise ValueError(f"runner_config: unknown keys {sorted(unknown)}")
    ledger.path = type(ledger.path)(cfg.get("ledger_path", "refunds.json"))
    model_cfg = cfg.get("model") or {}
    if model_cfg.get("provider") == "scripted":
        if scripted is None:
            scripted = ScriptedAnthropic()
        return build_options(tools, "claude-sonnet-4-5", {"ANTHROPIC_BASE_URL": scripted.url, "ANTHROPIC_API_KEY": "-"})
    key_env = model_cfg.get("api_key_env", "ANTHROPIC_API_KEY")
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(
            f"runner_config.model.api_key_env names {key_env}, which is not set (list it in plugins.<name>.env)"
        )
    env = {"ANTHROPIC_API_KEY": key}
    if model_cfg.get("base_url"):
        env["ANTHROPIC_BASE_URL"] = str(model_cfg["base_url"])
    return build_options(tools, str(model_cfg.get("name", "claude-sonnet-4-5")), env)


if __name__ == "__main__":
    serve(
        ClaudeAgentSDKRunner(
            build,
            servers={"orders": tools},
            tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
            name="orders-claude-agent-sdk",
        )
    )
