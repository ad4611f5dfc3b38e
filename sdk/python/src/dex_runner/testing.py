"""Drive a runner through whole turns in a unit test, as the worker would,
with no engine (the Go SDK's runnertest).

It serves the runner over the SDK's real gRPC service in process, configures
it, builds each user message, makes the model calls, and handles the tool
calls the runner defers by their policies: it asks the test about each
approval and each question, runs the approved calls through the runner (or
the test's own host tools), and hands the final records back until the turn
completes::

    async with RunnerSession(MyRunner(), agent="orders", runner_config='{"model": "scripted"}') as s:
        s.approve = lambda call: (call.tool_name != "delete_everything", "")
        turn = await s.send("refund order 7")
        assert turn.text() == "Refunded $77.50."

What it does not do is what the session does around a runner: retries,
deadlines, the message store, durability. Test those against a real worker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import grpc
from google.protobuf.message import Message

from dex_runner import pb
from dex_runner.outcome import FINAL_STATUSES
from dex_runner.runner import PROTOCOL_VERSION
from dex_runner.serve import SERVER_OPTIONS
from dex_runner.service import RunnerService

_RUNNER = "/dex.runner.v1.Runner/"


class TurnError(Exception):
    """The runner failed a call, broke the contract, or never finished."""


@dataclass
class Turn:
    """What one user message led to."""

    id: str
    messages: list[pb.Message] = field(default_factory=list)
    tool_calls: list[pb.ToolCall] = field(default_factory=list)
    model_calls: int = 0
    usage: pb.Usage = field(default_factory=pb.Usage)

    def text(self) -> str:
        """The text of the turn's last assistant message."""
        return next((m.text for m in reversed(self.messages) if m.role == "assistant"), "")

    def call(self, tool: str) -> pb.ToolCall | None:
        """The record of the turn's first call of tool."""
        return next((c for c in self.tool_calls if c.tool_name == tool), None)


class RunnerSession:
    """One session of one agent, driven turn by turn. Use it as an async
    context manager."""

    def __init__(
        self,
        runner: Any,
        agent: str = "agent",
        runner_config: str = "{}",
        policies: pb.PolicySet | None = None,
        host_tools: list[pb.ToolDefinition] | None = None,
        max_model_calls: int = 16,
        timeout: float = 60,
    ) -> None:
        self.runner, self.agent, self.runner_config = runner, agent, runner_config
        self.policies = policies or pb.PolicySet(default_effect="unclassified")
        self.host_tools = host_tools or []
        self.max_model_calls, self.timeout = max_model_calls, timeout
        #: Decides a call whose policy requires approval: (approved, the
        #: rejection message the model sees). None approves every call.
        self.approve: Callable[[pb.DeferredToolCall], tuple[bool, str]] | None = None
        #: Answers a question a tool asks; None (or a None answer) declines.
        self.answer: Callable[[pb.DeferredToolCall, pb.ToolInputRequested], str | None] | None = None
        #: Runs a call of a host tool: its output, or raises an error the
        #: model sees.
        self.host_tool: Callable[[pb.DeferredToolCall], str] | None = None
        self.messages: list[pb.Message] = []
        #: The live events the runner wrote: (type, payload).
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.session_id = "runnertest"
        self._turns = 0
        self._server: grpc.aio.Server | None = None
        self._channel: grpc.aio.Channel | None = None

    async def __aenter__(self) -> RunnerSession:
        self._server = grpc.aio.server(options=SERVER_OPTIONS)
        pb.add_RunnerServicer_to_server(RunnerService(self.runner), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        self._channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=SERVER_OPTIONS)
        req = pb.ConfigureRequest(agent=self.agent, runner_config=self.runner_config, protocol_version=PROTOCOL_VERSION)
        await self._unary("Configure", req, pb.ConfigureResponse)
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._channel is not None:
            await self._channel.close(None)
        if self._server is not None:
            await self._server.stop(0)

    async def _unary(self, method: str, req: Message, resp: type[Any]) -> Any:
        assert self._channel is not None, "use RunnerSession as an async context manager"
        call = self._channel.unary_unary(
            _RUNNER + method, request_serializer=type(req).SerializeToString, response_deserializer=resp.FromString
        )
        try:
            return await call(req, timeout=self.timeout)
        except grpc.aio.AioRpcError as err:
            raise TurnError(f"{method}: {err.code().name}: {err.details()}") from err

    async def _stream(self, method: str, req: Message, frame: type[Any]) -> Any:
        assert self._channel is not None, "use RunnerSession as an async context manager"
        call = self._channel.unary_stream(
            _RUNNER + method, request_serializer=type(req).SerializeToString, response_deserializer=frame.FromString
        )
        outcome = None
        try:
            async for f in call(req, timeout=self.timeout):
                kind = f.WhichOneof("frame")
                if kind == "outcome":
                    outcome = f.outcome
                elif kind in ("text_delta", "reasoning_delta"):
                    self.events.append((kind, {"text": getattr(f, kind).text}))
                elif kind == "event":
                    self.events.append((f.event.type, json.loads(f.event.payload_json or "{}")))
        except grpc.aio.AioRpcError as err:
            raise TurnError(f"{method}: {err.code().name}: {err.details()}") from err
        if outcome is None:
            raise TurnError(f"{method} ended without an outcome")
        return outcome

    def text(self) -> str:
        """Every text delta so far, joined."""
        return "".join(p["text"] for t, p in self.events if t == "text_delta")

    async def send(self, text: str) -> Turn:
        """Runs one turn from a user message to its end."""
        self._turns += 1
        turn = Turn(id=f"turn-{self._turns}")
        um = await self._unary(
            "BuildUserMessage", pb.BuildUserMessageRequest(agent=self.agent, text=text), pb.BuildUserMessageResponse
        )
        self._store(turn, um.message)
        run_state = ""
        while turn.model_calls < self.max_model_calls:
            turn.model_calls += 1
            ctx = pb.TurnContext(
                agent=self.agent,
                session_id=self.session_id,
                turn_id=turn.id,
                attempt=1,
                messages=self.messages,
                run_state=run_state,
                tool_calls=turn.tool_calls,
                policies=self.policies,
                host_tools=self.host_tools,
                interaction_mode="chat",
            )
            out = await self._stream("RunModelStep", pb.RunModelStepRequest(turn=ctx), pb.RunModelStepFrame)
            which = out.WhichOneof("outcome")
            if which == "turn_completed":
                _add_usage(turn.usage, out.turn_completed.usage)
                for m in out.turn_completed.new_messages:
                    self._store(turn, m)
                return turn
            req = out.tool_calls_requested
            _add_usage(turn.usage, req.usage)
            for m in req.new_messages:
                self._store(turn, m)
            run_state = req.run_state
            for call in req.tool_calls:
                turn.tool_calls.append(await self._settle(turn, call))
        raise TurnError(f"{turn.id} did not complete within {self.max_model_calls} model calls")

    def _store(self, turn: Turn, m: pb.FrameworkMessage) -> None:
        msg = pb.Message(
            sequence=len(self.messages) + 1,
            role=m.role,
            text=m.text,
            framework_item=m.framework_item,
            tool_call_id=m.tool_call_id,
            tool_name=m.tool_name,
            turn_id=turn.id,
            tool_status=m.tool_status,
        )
        self.messages.append(msg)
        turn.messages.append(msg)

    async def _settle(self, turn: Turn, call: pb.DeferredToolCall) -> pb.ToolCall:
        """Takes one deferred call to its final record: the operator's policy
        first (the worker's rule), then the approval, then the call with its
        questions and task."""
        policy = self.policies.policies[call.tool_name] if call.tool_name in self.policies.policies else call.policy
        needs = (
            policy.requires_approval
            if policy.HasField("requires_approval")
            else policy.effect in ("non_idempotent_write", "unclassified")
        )
        rec = pb.ToolCall(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            arguments=call.arguments,
            effect=policy.effect,
            requires_approval=needs,
            deferral_order=len(turn.tool_calls),
            tool_source_reference=call.tool_source_reference,
        )
        if needs and self.approve is not None:
            ok, msg = self.approve(call)
            if not ok:
                rec.status, rec.rejection_message = "rejected", msg
                return rec
        rec.status = "approved"
        if any(d.name == call.tool_name for d in self.host_tools):
            if self.host_tool is None:
                raise TurnError(f"the runner called host tool {call.tool_name}, and the session has no host_tool")
            try:
                rec.status, rec.output = "succeeded", self.host_tool(call)
            except Exception as err:
                rec.status, rec.error = "failed", str(err)
            return rec
        answers: list[str] = []
        for _ in range(9):
            req = pb.ExecuteToolRequest(
                agent=self.agent,
                session_id=self.session_id,
                turn_id=turn.id,
                tool_call=rec,
                idempotency_key=f"{self.session_id}/{turn.id}/{call.tool_call_id}",
                attempt=1,
                input_answers=answers,
                supports_tool_tasks=True,
            )
            out = await self._stream("ExecuteDeferredToolCall", req, pb.ToolCallFrame)
            which = out.WhichOneof("outcome")
            if which == "input_requested":
                a = self.answer(call, out.input_requested) if self.answer is not None else None
                if a is None:
                    rec.status, rec.rejection_message = "rejected", "The user declined to answer."
                    return rec
                answers.append(a)
                rec.input_continuation = out.input_requested.continuation
                continue
            if which == "task_started":
                return await self._poll(turn, rec, out.task_started)
            return _finish(rec, out)
        raise TurnError(f"tool call {call.tool_call_id} asked more than 8 questions")

    async def _poll(self, turn: Turn, rec: pb.ToolCall, task: pb.ToolTaskStarted) -> pb.ToolCall:
        rec.task_id, rec.task_poll_interval_seconds = task.task_id, task.poll_interval_seconds
        continuation = ""
        for _ in range(100):
            req = pb.PollToolTaskRequest(
                agent=self.agent,
                session_id=self.session_id,
                turn_id=turn.id,
                tool_call=rec,
                task_id=rec.task_id,
                continuation=continuation,
                attempt=1,
            )
            out = await self._stream("PollToolTask", req, pb.ToolCallFrame)
            if out.WhichOneof("outcome") == "task_pending":
                continuation = out.task_pending.continuation
                continue
            return _finish(rec, out)
        raise TurnError(f"task {rec.task_id} did not end within 100 polls")


def _finish(rec: pb.ToolCall, out: pb.ExecuteToolResponse) -> pb.ToolCall:
    which = out.WhichOneof("outcome")
    if which == "result":
        rec.status, rec.output = "succeeded", out.result.output
    elif which == "error":
        rec.status, rec.error = "failed", out.error.message
    else:
        raise TurnError(f"tool call {rec.tool_call_id} answered {which}")
    assert rec.status in FINAL_STATUSES
    return rec


def _add_usage(total: pb.Usage, u: pb.Usage) -> None:
    for f in (
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "reasoning_tokens",
        "total_tokens",
        "model_calls",
    ):
        setattr(total, f, getattr(total, f) + getattr(u, f))
