"""What every adapter adds to a model's input, and compaction helpers.

The session hands a runner its plan and, once the session compacts, a
summary that replaces the oldest messages (``TurnContext.plan``,
``TurnContext.context_summary``). A runner shows both to the model with the
same words the Go Stepwise runner uses, so a session reads the same whatever
the runner's language:

- :func:`summary_note` goes first in the model's input;
- :func:`plan_note` goes just before the turn's user message.

For compaction, :func:`select_cutoff` picks the newest stored message a
summary may replace (never splitting a tool call from its result), and
:func:`fit_summary_input` leaves the oldest messages out of a summary call
that would not fit its input budget. Sizes are the contract's estimate:
three UTF-8 bytes per token, which errs high.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from dex_runner import pb

SUMMARY_NOTE_HEADER = "[Dex] Summary of the earlier conversation:"
SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation so far so that it can go on from your summary alone. "
    "Keep what the user wants and decided, the facts, names, numbers and identifiers that came up, "
    "what each tool call did and returned, and what is still open. "
    "If the conversation starts with an earlier summary, fold it in. "
    "Write plain text in the conversation's language, with no preamble."
)
SUMMARY_OMISSION_FORMAT = "[Dex] %d earlier messages did not fit in this request and are left out."
PLAN_NOTE_HEADER = "[Dex] The current plan (revision %d, %s):"
PLAN_NOTE_FOOTER = "Keep the task statuses current with write_todos."
PLANNING_NOTE = (
    "[Dex] Plan mode: do not act yet. Write the plan with write_todos (the only tool you have now); "
    "the user reviews it and runs it. Ask in text if you need to know more first."
)

T = TypeVar("T")


def summary_note(text: str) -> str:
    """The user-role text that carries a context summary in a model's input."""
    return SUMMARY_NOTE_HEADER + "\n" + text


def turn_summary_note(turn: pb.TurnContext) -> str:
    """The turn's summary note, or "" when the session has no summary."""
    if not turn.HasField("context_summary"):
        return ""
    return summary_note(turn.context_summary.text)


def plan_note(turn: pb.TurnContext) -> str:
    """The note that shows the model the session's plan: a planning turn
    gets the planning note (with the draft, if any); a cleared or empty plan
    has none ("")."""
    plan = turn.plan if turn.HasField("plan") else None
    if turn.interaction_mode == "planning":
        n = _plan_lines(plan)
        return PLANNING_NOTE + "\n" + n if n else PLANNING_NOTE
    return _plan_lines(plan)


def _plan_lines(p: pb.Plan | None) -> str:
    if p is None or p.status == "cleared" or not p.tasks:
        return ""
    lines = [PLAN_NOTE_HEADER % (p.revision, p.status)]
    lines += [f"{i}. [{t.status}] {t.content}" for i, t in enumerate(p.tasks, 1)]
    if p.status != "completed":
        lines.append(PLAN_NOTE_FOOTER)
    return "\n".join(lines)


def unanswered_calls(
    turn: pb.TurnContext, opens: Callable[[pb.Message], Iterable[str]], final_only: bool = False
) -> list[pb.ToolCall]:
    """This turn's call records whose result no stored message holds yet,
    among the calls the stored messages still hold: a compaction in the
    middle of a turn may have summarized a call and its result away, and
    a result without its call is an error at every provider. final_only
    keeps only records with a final status (for BuildUnfinishedTurnMessages)."""
    answered = {m.tool_call_id for m in turn.messages if m.turn_id == turn.turn_id and m.role == "tool"}
    visible = {i for m in turn.messages for i in opens(m)}
    final = ("rejected", "succeeded", "failed", "outcome_unknown")
    return [
        c
        for c in turn.tool_calls
        if c.tool_call_id not in answered and c.tool_call_id in visible and (not final_only or c.status in final)
    ]


def estimate_tokens(text: str) -> int:
    """The contract's estimate: three UTF-8 bytes per token, rounded up."""
    return (len(text.encode()) + 2) // 3


def message_tokens(m: pb.Message) -> int:
    """A stored message's estimated tokens: its framework item, else its text."""
    return estimate_tokens(m.framework_item or m.text)


def closes_by_tool_message(m: pb.Message) -> list[str]:
    """The call a stored tool message answers: the closes of select_cutoff
    for runners that store one tool message per result."""
    return [m.tool_call_id] if m.role == "tool" else []


def cut_points(
    items: Sequence[T], opens: Callable[[T], Iterable[str]], closes: Callable[[T], Iterable[str]]
) -> list[bool]:
    """For each item, whether a summary may end after it: only where every
    tool call so far (``opens``) has its result (``closes``)."""
    ok: list[bool] = []
    open_calls: set[str] = set()
    for it in items:
        open_calls.update(opens(it))
        open_calls.difference_update(closes(it))
        ok.append(not open_calls)
    return ok


def select_cutoff(
    messages: Sequence[pb.Message],
    retained_token_budget: int,
    opens: Callable[[pb.Message], Iterable[str]],
    closes: Callable[[pb.Message], Iterable[str]],
    tokens: Callable[[pb.Message], int] = message_tokens,
) -> int:
    """The ``through_sequence`` of a CompactionCutoffResponse: the oldest cut
    that leaves the newest messages within the retained budget, at a point
    where every tool call has its result; never the last message, which
    the next model call answers. 0 when there is no such point."""
    if len(messages) < 2:
        return 0
    ok = cut_points(messages, opens, closes)
    kept = [0] * len(messages)
    for i in range(len(messages) - 2, -1, -1):
        kept[i] = kept[i + 1] + tokens(messages[i + 1])
    cut = -1
    for i in range(len(messages) - 1):
        if not ok[i]:
            continue
        cut = i
        if kept[i] <= retained_token_budget:
            break
    return messages[cut].sequence if cut >= 0 else 0


def fit_summary_input(
    items: Sequence[T],
    budget: int,
    size: Callable[[Sequence[T], int], int],
    opens: Callable[[T], Iterable[str]],
    closes: Callable[[T], Iterable[str]],
) -> tuple[int, Sequence[T]]:
    """Leaves the oldest items out of a summary call until ``size(rest,
    omitted)`` (the request's estimated input tokens, with the omission
    note when omitted > 0) fits ``budget``, cutting only where calls keep
    their results. Returns how many items were left out and the rest.
    A budget of 0 means no bound. Raises ValueError when even the newest
    item does not fit."""
    if budget <= 0 or size(items, 0) <= budget:
        return 0, items
    ok = cut_points(items, opens, closes)
    i = 0
    while True:
        while i < len(items) - 1 and not ok[i]:
            i += 1
        if i >= len(items) - 1:
            raise ValueError("summarize_context: even the newest message does not fit the summary call's input budget")
        rest = items[i + 1 :]
        if size(rest, i + 1) <= budget:
            return i + 1, rest
        i += 1
