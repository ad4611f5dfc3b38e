"""The rules on the live events a runner writes (the Go SDK's CheckEvent)."""

from __future__ import annotations

import json
from typing import Any

#: The standard event types a runner may write.
RUNNER_EVENT_TYPES = ("text_delta", "reasoning_delta", "tool_call_started", "tool_call_finished")

# The standard types only the worker writes.
_SESSION_EVENT_TYPES = frozenset(
    {
        "turn_started", "turn_completed", "turn_failed", "turn_steered", "turn_cancelled",
        "tool_call_deferred", "interrupt_raised", "interrupt_resolved", "interrupt_expiring",
        "interrupt_extended", "turn_recovering", "timer_started", "plan_updated",
        "plan_execution_started", "tool_task_started", "usage_recorded", "compaction_started",
        "compaction_finished", "spend_limit_reached", "mcp.tool_progress", "mcp.task_status",
        "sub_agent_started", "sub_agent_finished", "notification_failed",
    }
)  # fmt: skip

_FINAL_STATUSES = ("succeeded", "failed", "rejected", "outcome_unknown")


def check_event(event_type: str, payload: Any) -> str:
    """Returns why a runner may not write this event, or ""."""
    if event_type == "":
        return "the event type is empty"
    if event_type in _SESSION_EVENT_TYPES:
        return (
            f"event type {json.dumps(event_type)} is written by the session, not by runners "
            f"(runners write {', '.join(RUNNER_EVENT_TYPES)}, or custom types)"
        )
    if event_type not in RUNNER_EVENT_TYPES and "." not in event_type:
        return f'custom event type {json.dumps(event_type)} needs an adapter prefix, such as "myframework.{event_type}"'
    if not isinstance(payload, dict):
        return f"the payload of {event_type} must be a JSON object"
    if event_type in ("text_delta", "reasoning_delta"):
        if not isinstance(payload.get("text"), str):
            return f'{event_type} needs {{"text": string}}'
    elif event_type in ("tool_call_started", "tool_call_finished"):
        call_id, name = payload.get("tool_call_id"), payload.get("tool_name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            return f"{event_type} needs tool_call_id and tool_name"
        status = payload.get("status", "")
        if event_type == "tool_call_finished" and status not in _FINAL_STATUSES:
            return (
                "tool_call_finished needs a final status (succeeded, failed, rejected or outcome_unknown), "
                f"got {json.dumps(status)}"
            )
        if event_type == "tool_call_started" and status not in ("", None):
            return "tool_call_started has no status"
    return ""
