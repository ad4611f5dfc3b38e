"""The runner plugin of the orders agent on the OpenAI Agents SDK.

runner_config:

    store_path: orders.json        # the orders file (relative to the worker config's directory)
    model: {name: gpt-5-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}
    # or model: {provider: scripted}: the demo's scripted model, no key

List the key's variable in plugins.<name>.env; the plugin sees nothing else.
"""

from __future__ import annotations

import os
from typing import Any

from agents import Agent, OpenAIResponsesModel
from dex_runner import serve
from dex_runner.openai_agents import OpenAIAgentsRunner
from openai import AsyncOpenAI

from orders_agent import Store, build_agent
from scripted import ScriptedModel


def build(agent_name: str, cfg: dict[str, Any]) -> Agent[Any]:
    unknown = set(cfg) - {"store_path", "model"}
    if unknown:
        raise ValueError(f"runner_config: unknown keys {sorted(unknown)}")
    model_cfg = cfg.get("model") or {}
    store = Store(cfg.get("store_path", "orders.json"))
    if model_cfg.get("provider") == "scripted":
        return build_agent(ScriptedModel(), store)
    key_env = model_cfg.get("api_key_env", "OPENAI_API_KEY")
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(
            f"runner_config.model.api_key_env names {key_env}, which is not set (list it in plugins.<name>.env)"
        )
    # No retries of the client's own: the worker retries the Step.
    client = AsyncOpenAI(api_key=key, base_url=model_cfg.get("base_url") or None, max_retries=0)
    model = OpenAIResponsesModel(model=model_cfg.get("name", "gpt-5-mini"), openai_client=client)
    return build_agent(model, store)


if __name__ == "__main__":
    serve(
        OpenAIAgentsRunner(
            build,
            tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
            name="orders-openai-agents",
        )
    )
