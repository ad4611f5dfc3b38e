"""The runner plugin of the orders agent on Google ADK.

runner_config:

    refunds_path: refunds.jsonl    # the refund log
    model: {name: gemini-2.5-flash, base_url: https://generativelanguage.googleapis.com, api_key_env: GOOGLE_API_KEY}
    # or model: {provider: scripted}: the demo's scripted model, no key

List the key's variable in plugins.<name>.env; the plugin sees nothing else.
"""

from __future__ import annotations

import os
from typing import Any

from dex_runner import serve
from dex_runner.google_adk import GoogleADKRunner
from google.adk.agents import LlmAgent
from google.adk.models.google_llm import Gemini
from google.genai import types

from orders_agent import RefundLog, build_agent
from scripted import ScriptedModel


def build(agent_name: str, cfg: dict[str, Any]) -> LlmAgent:
    unknown = set(cfg) - {"refunds_path", "model"}
    if unknown:
        raise ValueError(f"runner_config: unknown keys {sorted(unknown)}")
    log = RefundLog(cfg.get("refunds_path", "refunds.jsonl"))
    model_cfg = cfg.get("model") or {}
    if model_cfg.get("provider") == "scripted":
        return build_agent(ScriptedModel(), log)
    key_env = model_cfg.get("api_key_env", "GOOGLE_API_KEY")
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(
            f"runner_config.model.api_key_env names {key_env}, which is not set (list it in plugins.<name>.env)"
        )
    # The Gemini API; one attempt per call: the worker retries the Step.
    model = Gemini(
        model=model_cfg.get("name", "gemini-2.5-flash"), base_url=model_cfg.get("base_url") or None,
        client_kwargs={"api_key": key}, retry_options=types.HttpRetryOptions(attempts=1),
    )  # fmt: skip
    return build_agent(model, log)


if __name__ == "__main__":
    serve(
        GoogleADKRunner(
            build,
            tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
            name="orders-google-adk",
        )
    )
