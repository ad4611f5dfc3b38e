"""The Runner protocol: what a runner implements, in Python terms.

It mirrors the Go SDK (pluginapi.Runner and its optional interfaces): five
required methods, and optional ones whose presence the SDK announces in
Info as capabilities. Methods are coroutines; requests and answers are the
contract's messages (:mod:`dex_runner.pb`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import grpc

from dex_runner import pb

#: The runner contract version this SDK speaks (dex.runner.v1).
PROTOCOL_VERSION = 1


class CallContext(Protocol):
    """What a streaming call gives the runner: its live writer.

    Live frames are best effort: the host may drop them and a retry repeats
    them, so never put a result only in a live frame. Writes after the call
    returned are dropped. When the host cancels the call (the user stopped
    the turn, the Step timed out), the runner's coroutine is cancelled.
    """

    def write_text_delta(self, text: str) -> None:
        """Writes one chunk of visible model text: one frame."""

    def write_reasoning_delta(self, text: str) -> None:
        """Writes one chunk of a provider's reasoning summary."""

    def write_event(self, event_type: str, payload: dict[str, Any]) -> None:
        """Writes one event whose payload is a JSON object: a standard type a
        runner may write (text_delta, reasoning_delta, tool_call_started,
        tool_call_finished) or a custom type with an adapter prefix
        ("myframework.handoff"). Raises ValueError for a type the session
        writes itself, a custom type without a prefix, or a standard event
        without its fields."""

    def heartbeat(self) -> None:
        """Records liveness, for long loops that write nothing else."""


class ToolCallContext(CallContext, Protocol):
    """The CallContext of a tool call, with checkpoints."""

    def save_heartbeat_checkpoint(self, text: str) -> None:
        """Records text that a retried attempt reads as
        ExecuteToolRequest.heartbeat_checkpoint, to resume remote work."""


@dataclass(frozen=True)
class InfoResult:
    """Names the runner; the SDK adds the protocol versions and the
    capabilities."""

    name: str
    version: str


@runtime_checkable
class Runner(Protocol):
    """The contract every runner implements: the agent loop that turns a
    session's transcript into the next model call.

    The session calls it from durable Steps, so every method may run again
    after a crash or a retry: keep no state between calls that the request
    does not carry. One plugin process serves every agent that names it;
    each request names its agent. The optional methods are
    build_unfinished_turn_messages, poll_tool_task, cancel_tool_task,
    estimate_input_tokens, and select_compaction_cutoff with
    summarize_context: define them to announce the capability.
    """

    async def info(self, req: pb.InfoRequest) -> InfoResult: ...

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        """Receives one agent's runner_config (JSON bytes); raise an error
        that names the problem for bad config."""
        ...

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        """Turns user text into the framework's user item, role "user"."""
        ...

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        """Makes at most one model call and returns exactly one outcome:
        turn_completed or tool_calls_requested. It never runs a tool it can
        defer."""
        ...

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        """Runs one approved tool call once. A failure the model should see
        is the error outcome, not a raised error."""
        ...


_OPTIONAL = {
    "unfinished_turn_messages": ("build_unfinished_turn_messages",),
    "tool_task_polling": ("poll_tool_task",),
    "tool_task_cancelling": ("cancel_tool_task",),
    "input_token_estimation": ("estimate_input_tokens",),
    "compaction": ("select_compaction_cutoff", "summarize_context"),
}


def capabilities_of(runner: object) -> pb.Capabilities:
    """The optional methods runner implements, as Info's capabilities. The
    host sends the whole transcript with every call (no transcript cache)."""
    caps = pb.Capabilities()
    for field, methods in _OPTIONAL.items():
        setattr(caps, field, all(callable(getattr(runner, m, None)) for m in methods))
    return caps


@dataclass(frozen=True)
class DexToolContext:
    """What a framework adapter's tool knows about its call: the session's
    idempotency key (pass it to the system the write reaches, so a retried
    call applies once) and the call's place. Outside a tool call (a model
    call building its instructions) idempotency_key and tool_call_id are
    empty and attempt is 0."""

    idempotency_key: str
    attempt: int
    session_id: str
    turn_id: str
    tool_call_id: str
    # agent names the session's agent: one plugin serves every agent that
    # names it.
    agent: str = ""


class RunnerError(Exception):
    """Fails a call with a gRPC status code the host reads (see
    runner.proto's "Errors"). Any other raised error is UNKNOWN, which the
    host retries."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# The provider HTTP statuses a retry cannot fix: a model call that gets one
# fails its Step at once (see permanent).
PERMANENT_HTTP_STATUSES = frozenset({400, 401, 403, 404, 422})


def permanent(message: str) -> RunnerError:
    """An error that retrying cannot fix (a provider's 400, 401, 403, 404 or
    422): the host fails the Step at once."""
    return RunnerError(grpc.StatusCode.FAILED_PRECONDITION, message)


def resolve_policy(
    turn: pb.TurnContext, tool_name: str, framework_effect: str = "", own: pb.ToolPolicy | None = None
) -> pb.ToolPolicy:
    """The policy to claim for a call: the config's explicit policy for the
    tool; else the runner's own policy for it (own: an effect, an approval
    rule, or both) or its framework's effect (framework_effect, "" when
    there is none); else the config's default effect. The session decides
    in the same order (a plugin declared trusts_tool_policies: false has
    only the config count)."""
    effects = ("read", "idempotent_write", "non_idempotent_write", "unclassified")
    p = pb.ToolPolicy()
    if tool_name in turn.policies.policies:
        p.CopyFrom(turn.policies.policies[tool_name])
        return p
    if own is not None and (own.effect in effects or own.HasField("requires_approval")):
        p.CopyFrom(own)
    elif framework_effect in effects:
        p.effect = framework_effect
    if p.effect not in effects:
        p.effect = turn.policies.default_effect if turn.policies.default_effect in effects else "unclassified"
    return p
