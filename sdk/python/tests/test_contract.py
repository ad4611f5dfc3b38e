"""The contract's words are the same in every SDK: the texts the model sees
and the event types are read from the Go SDK's source and compared."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dex_runner import (
    DEFAULT_REJECTION_TOOL_RESULT,
    MODEL_CALL_LIMIT_TOOL_RESULT_FORMAT,
    OUTCOME_UNKNOWN_TOOL_RESULT,
    RUNNER_EVENT_TYPES,
    check_event,
    describe_tool_call_outcome,
    pb,
    resolve_policy,
)

CONTRACT = Path(__file__).resolve().parents[3] / "pluginapi" / "contract"


def go_string(src: str, name: str) -> str:
    m = re.search(name + r'\s*=\s*("(?:[^"\\]|\\.)*")', src)
    assert m, f"{name} is not in the Go SDK"
    value: str = json.loads(m.group(1))
    return value


def test_the_texts_the_model_sees_are_the_go_sdks() -> None:
    src = (CONTRACT / "outcome.go").read_text()
    assert go_string(src, "DefaultRejectionToolResult") == DEFAULT_REJECTION_TOOL_RESULT
    assert go_string(src, "OutcomeUnknownToolResult") == OUTCOME_UNKNOWN_TOOL_RESULT
    assert go_string(src, "ModelCallLimitToolResultFormat") == MODEL_CALL_LIMIT_TOOL_RESULT_FORMAT
    d = describe_tool_call_outcome
    assert d(pb.ToolCall(status="succeeded", output="ok")) == "ok"
    assert d(pb.ToolCall(status="failed", error="boom")) == "The tool call failed: boom"
    assert d(pb.ToolCall(status="failed")) == "The tool call failed."
    assert d(pb.ToolCall(status="rejected")) == DEFAULT_REJECTION_TOOL_RESULT
    assert d(pb.ToolCall(status="rejected", rejection_message="no")) == "no"
    assert d(pb.ToolCall(status="outcome_unknown")) == OUTCOME_UNKNOWN_TOOL_RESULT


def test_the_event_types_are_the_go_sdks() -> None:
    src = (CONTRACT / "events.go").read_text()
    block = re.search(r"var sessionEventTypes = \[\]string\{([^}]*)\}", src)
    assert block, "sessionEventTypes is not in the Go SDK"
    for t in (json.loads(q) for q in re.findall(r'"[^"]+"', block.group(1))):
        assert "written by the session" in check_event(t, {}), t
    for t in RUNNER_EVENT_TYPES:
        assert f'"{t}"' in src, f"{t} is not a Go runner event type"
    assert (
        check_event("handoff", {})
        == 'custom event type "handoff" needs an adapter prefix, such as "myframework.handoff"'
    )
    assert check_event("myframework.handoff", {"a": 1}) == ""
    assert "final status" in check_event(
        "tool_call_finished", {"tool_call_id": "c", "tool_name": "t", "status": "approved"}
    )
    assert check_event("tool_call_finished", {"tool_call_id": "c", "tool_name": "t", "status": "succeeded"}) == ""
    assert 'needs {"text": string}' in check_event("text_delta", {"text": 1})


def test_policies_resolve_in_the_go_sdks_order() -> None:
    turn = pb.TurnContext(
        policies=pb.PolicySet(
            default_effect="unclassified",
            policies={"refund": pb.ToolPolicy(effect="non_idempotent_write", requires_approval=True)},
        )
    )
    assert resolve_policy(turn, "refund", "read").effect == "non_idempotent_write"
    assert resolve_policy(turn, "refund").requires_approval
    assert resolve_policy(turn, "lookup", "read").effect == "read"
    assert resolve_policy(turn, "lookup").effect == "unclassified"
    assert resolve_policy(pb.TurnContext(), "x").effect == "unclassified"


def test_a_runners_own_policy_comes_after_the_config() -> None:
    turn = pb.TurnContext(
        policies=pb.PolicySet(
            default_effect="unclassified", policies={"refund": pb.ToolPolicy(effect="idempotent_write")}
        )
    )
    loud = pb.ToolPolicy(effect="read", requires_approval=True)
    assert resolve_policy(turn, "refund", own=loud).effect == "idempotent_write"  # the config's entry
    assert resolve_policy(turn, "lookup", own=loud) == loud
    quiet = resolve_policy(turn, "x", own=pb.ToolPolicy(requires_approval=False))
    assert (quiet.effect, quiet.HasField("requires_approval"), quiet.requires_approval) == ("unclassified", True, False)
    assert resolve_policy(turn, "x", "read", own=pb.ToolPolicy()).effect == "read"  # an empty own policy says nothing


def test_the_plan_and_summary_texts_are_stepwises() -> None:
    from dex_runner import context

    stepwise = CONTRACT.parents[1] / "plugins" / "stepwise"
    plan = (stepwise / "plan.go").read_text()
    compact = (stepwise / "compact.go").read_text()
    assert go_string(plan, "PlanNoteHeader") == context.PLAN_NOTE_HEADER
    assert go_string(plan, "PlanNoteFooter") == context.PLAN_NOTE_FOOTER
    planning = re.search(r'PlanningNote = ("[^"]*") \+\s*("[^"]*")', plan)
    assert planning, "PlanningNote is not in stepwise"
    assert json.loads(planning.group(1)) + json.loads(planning.group(2)) == context.PLANNING_NOTE
    assert go_string(compact, "ContextSummaryNoteHeader") == context.SUMMARY_NOTE_HEADER
    assert go_string(compact, "ContextSummaryOmissionFormat") == context.SUMMARY_OMISSION_FORMAT
    instructions = re.search(r"ContextSummaryInstructions = ((?:\"[^\"]*\"(?: \+\s*)?)+)", compact)
    assert instructions, "ContextSummaryInstructions is not in stepwise"
    parts = re.findall(r'"(?:[^"\\]|\\.)*"', instructions.group(1))
    assert "".join(json.loads(p) for p in parts) == context.SUMMARY_INSTRUCTIONS
