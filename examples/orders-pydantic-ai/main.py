"""The runner plugin of the orders agent on Pydantic AI.

runner_config:

    db_path: orders.db             # the orders database (SQLite)
    model: {name: gpt-5-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}
    # or model: {provider: scripted}: the demo's scripted model, no key

List the key's variable in plugins.<name>.env; the plugin sees nothing else.
"""

from __future__ import annotations

import os
from typing import Any

from dex_runner import serve
from dex_runner.pydantic_ai import DexToolContext, PydanticAIRunner
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from orders_agent import Deps, Orders, build_agent
from scripted import scripted_model

orders: dict[str, Orders] = {}


def build(agent_name: str, cfg: dict[str, Any]) -> Agent[Deps, str]:
    unknown = set(cfg) - {"db_path", "model"}
    if unknown:
        raise ValueError(f"runner_config: unknown keys {sorted(unknown)}")
    orders[agent_name] = Orders(cfg.get("db_path", "orders.db"))
    model_cfg = cfg.get("model") or {}
    if model_cfg.get("provider") == "scripted":
        return build_agent(scripted_model())
    key_env = model_cfg.get("api_key_env", "OPENAI_API_KEY")
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(
            f"runner_config.model.api_key_env names {key_env}, which is not set (list it in plugins.<name>.env)"
        )
    # No retries of the client's own: the worker retries the Step.
    client = AsyncOpenAI(api_key=key, base_url=model_cfg.get("base_url") or None, max_retries=0)
    provider = OpenAIProvider(openai_client=client)
    return build_agent(OpenAIChatModel(model_cfg.get("name", "gpt-5-mini"), provider=provider))


def deps(dex: DexToolContext) -> Deps:
    return Deps(orders=orders[dex.agent], dex=dex)


if __name__ == "__main__":
    serve(
        PydanticAIRunner(
            build,
            deps=deps,
            tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
            name="orders-pydantic-ai",
        )
    )
