"""The runner plugin of the orders agent on LangGraph (LangChain's
create_agent).

runner_config:

    ledger_path: refunds.json      # the refunds ledger
    model: {name: gpt-5-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}
    # or model: {provider: scripted}: the demo's scripted model, no key

List the key's variable in plugins.<name>.env; the plugin sees nothing else.
"""

from __future__ import annotations

import os
from typing import Any

from dex_runner import serve
from dex_runner.langgraph import LangGraphRunner
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from orders_agent import Ledger, build_agent
from scripted import ScriptedChatModel


def chat_model(cfg: dict[str, Any]) -> BaseChatModel:
    model_cfg = cfg.get("model") or {}
    if model_cfg.get("provider") == "scripted":
        return ScriptedChatModel()
    key_env = model_cfg.get("api_key_env", "OPENAI_API_KEY")
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(
            f"runner_config.model.api_key_env names {key_env}, which is not set (list it in plugins.<name>.env)"
        )
    # The Chat Completions API, streamed with usage; no retries of the
    # client's own: the worker retries the Step.
    return ChatOpenAI(
        model=model_cfg.get("name", "gpt-5-mini"), base_url=model_cfg.get("base_url") or None, api_key=SecretStr(key),
        max_retries=0, use_responses_api=False, streaming=True, stream_usage=True,
    )  # fmt: skip


models: dict[str, BaseChatModel] = {}


def build(agent_name: str, cfg: dict[str, Any]) -> Any:
    unknown = set(cfg) - {"ledger_path", "model"}
    if unknown:
        raise ValueError(f"runner_config: unknown keys {sorted(unknown)}")
    models[agent_name] = chat_model(cfg)
    return build_agent(models[agent_name], Ledger(cfg.get("ledger_path", "refunds.json")))


if __name__ == "__main__":
    serve(
        LangGraphRunner(
            build,
            tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
            # Compaction summaries come from the agent's own model.
            summary_model=lambda agent: models[agent],
            name="orders-langgraph",
        )
    )
