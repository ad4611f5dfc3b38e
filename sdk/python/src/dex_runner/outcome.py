"""The texts the model sees for tool calls that produced no output. They are
part of the contract and the same in every SDK (a test compares them with
the Go SDK's): runners render a final record's outcome with
:func:`describe_tool_call_outcome`."""

from __future__ import annotations

from dex_runner import pb

#: The result of a call rejected without a message.
DEFAULT_REJECTION_TOOL_RESULT = "The user rejected this tool call."
#: The result of a call that may or may not have taken effect.
OUTCOME_UNKNOWN_TOOL_RESULT = (
    "The outcome of this tool call is unknown: it may or may not have taken effect. "
    "Check its effect before you call it again."
)
#: The result of a call made after the turn reached its model call limit;
#: %d is the limit.
MODEL_CALL_LIMIT_TOOL_RESULT_FORMAT = "The tool call was not run: this turn reached its limit of %d model calls."

#: The final statuses of a tool call record.
FINAL_STATUSES = ("rejected", "succeeded", "failed", "outcome_unknown")


def is_final(status: str) -> bool:
    """Whether a record's status is final."""
    return status in FINAL_STATUSES


def describe_tool_call_outcome(c: pb.ToolCall) -> str:
    """The model-visible text of a final record."""
    if c.status == "succeeded":
        return c.output
    if c.status == "failed":
        return "The tool call failed: " + c.error if c.error else "The tool call failed."
    if c.status == "rejected":
        return c.rejection_message or DEFAULT_REJECTION_TOOL_RESULT
    return OUTCOME_UNKNOWN_TOOL_RESULT
