"""The contract's rules on a runner's answers (the Go SDK's
contract_check.go). The SDK refuses an answer that breaks them with
INVALID_ARGUMENT before it reaches the host."""

from __future__ import annotations

import json

from dex_runner import pb

EFFECTS = ("read", "idempotent_write", "non_idempotent_write", "unclassified")
_ROLES = ("user", "assistant", "tool")


def _q(s: str) -> str:
    return json.dumps(s)


def _check_role(field: str, role: str, allowed: tuple[str, ...]) -> str:
    if role in allowed:
        return ""
    return f"{field} is {_q(role)}, want {' or '.join(_q(r) for r in allowed)}"


def _check_messages(field: str, messages: list[pb.FrameworkMessage]) -> str:
    for i, m in enumerate(messages):
        reason = _check_role(f"{field}[{i}].role", m.role, _ROLES)
        if reason:
            return reason
    return ""


def check_build_user_message_response(r: pb.BuildUserMessageResponse | None) -> str:
    if r is None:
        return "BuildUserMessage returned no response"
    return _check_role("BuildUserMessage: message.role", r.message.role, ("user",))


def check_configure_response(r: pb.ConfigureResponse | None) -> str:
    if r is None:
        return "Configure returned no response"
    seen: set[str] = set()
    for i, name in enumerate(r.tools):
        if not name:
            return f"Configure: tools[{i}] is empty"
        if name in seen:
            return f"Configure: tools[{i}] {_q(name)} is listed twice"
        seen.add(name)
    keys: set[str] = set()
    for i, c in enumerate(r.setting_choices):
        if not c.key:
            return f"Configure: setting_choices[{i}].key is empty"
        if c.key in keys:
            return f"Configure: setting_choices[{i}] {_q(c.key)} is listed twice"
        if not c.values:
            return f"Configure: setting_choices[{i}] {_q(c.key)} has no values"
        if "" in c.values:
            return f"Configure: setting_choices[{i}] {_q(c.key)} has an empty value"
        keys.add(c.key)
    for name, p in r.tool_policies.items():
        if p.effect and p.effect not in EFFECTS:
            return f"Configure: tool_policies[{_q(name)}].effect {_q(p.effect)} is not an effect class"
    if r.default_tool_effect and r.default_tool_effect not in EFFECTS:
        return f"Configure: default_tool_effect {_q(r.default_tool_effect)} is not an effect class"
    return ""


def check_run_model_step_response(r: pb.RunModelStepResponse | None, turn: pb.TurnContext) -> str:
    if r is None:
        return "RunModelStep returned no response"
    which = r.WhichOneof("outcome")
    if which is None:
        return "RunModelStep returned no outcome; set turn_completed or tool_calls_requested"
    if which == "turn_completed":
        reason = _check_messages("turn_completed.new_messages", list(r.turn_completed.new_messages))
        return "RunModelStep: " + reason if reason else ""
    req = r.tool_calls_requested
    if not req.run_state:
        return "RunModelStep: tool_calls_requested.run_state is empty; it must continue the turn after the tools"
    reason = _check_messages("tool_calls_requested.new_messages", list(req.new_messages))
    if reason:
        return "RunModelStep: " + reason
    seen = {c.tool_call_id for c in turn.tool_calls}
    for i, c in enumerate(req.tool_calls):
        field = f"RunModelStep: tool_calls_requested.tool_calls[{i}]"
        if not c.tool_call_id:
            return field + ".tool_call_id is empty"
        if "/" in c.tool_call_id:
            return f"{field}.tool_call_id {_q(c.tool_call_id)} contains '/'"
        if c.tool_call_id in seen:
            return f"{field}.tool_call_id {_q(c.tool_call_id)} is not unique within the turn"
        if not c.tool_name:
            return field + ".tool_name is empty"
        if c.policy.effect not in EFFECTS:
            return f"{field}.policy.effect {_q(c.policy.effect)} is not an effect class (use resolve_policy)"
        seen.add(c.tool_call_id)
    return ""


def check_execute_tool_response(method: str, r: pb.ExecuteToolResponse | None, poll: bool, supports_tasks: bool) -> str:
    if r is None:
        return method + " returned no response"
    which = r.WhichOneof("outcome")
    if which is None:
        allowed = "result, error, input_requested, task_started" + (", task_pending" if poll else "")
        return f"{method} returned no outcome; set one of {allowed}"
    if which == "task_pending" and not poll:
        return method + " returned task_pending, which only PollToolTask may return"
    if which == "task_started" and not poll and not supports_tasks:
        return method + " returned task_started, but the request's supports_tool_tasks is false"
    if which == "task_started" and not r.task_started.task_id:
        return method + ": task_started.task_id is empty"
    return ""


def check_compaction_cutoff_response(r: pb.CompactionCutoffResponse | None, req: pb.CompactionCutoffRequest) -> str:
    if r is None:
        return "SelectCompactionCutoff returned no response"
    msgs = req.turn.messages
    last = msgs[-1].sequence if msgs else 0
    last = max(last, req.turn.cached_through)
    floor = req.turn.context_summary.last_sequence
    through = r.through_sequence
    if through != 0 and (through <= floor or through > last):
        return (
            f"SelectCompactionCutoff: through_sequence {through} is not 0 or a stored sequence "
            f"after the current summary ({floor + 1} to {last})"
        )
    return ""


def check_tool_effects(effects: dict[str, str]) -> None:
    """Raises ValueError naming the first effect class that is not one of
    EFFECTS (an adapter's tool_effects)."""
    for tool, effect in effects.items():
        if effect not in EFFECTS:
            raise ValueError(f"tool_effects[{tool!r}]: {effect!r} is not one of {', '.join(EFFECTS)}")
