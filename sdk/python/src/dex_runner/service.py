"""The dex.runner.v1.Runner gRPC service over a Runner: requests in, the
runner's answers checked against the contract, live frames and one outcome
out, errors as the statuses the host reads."""

from __future__ import annotations

import asyncio
import json
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from dex_runner import log, pb
from dex_runner.check import (
    check_build_user_message_response,
    check_compaction_cutoff_response,
    check_configure_response,
    check_execute_tool_response,
    check_run_model_step_response,
)
from dex_runner.events import check_event
from dex_runner.runner import PROTOCOL_VERSION, RunnerError, capabilities_of


class ServiceState:
    """Shared by the service and serve(): once stopping, the failures of calls
    still running are UNAVAILABLE (the host retries them)."""

    def __init__(self) -> None:
        self.stopping = False


class Malformed(Exception):
    """An answer that breaks the contract: INVALID_ARGUMENT."""


_T = TypeVar("_T")
Ctx = grpc.aio.ServicerContext[Any, Any]
_Frame = Any  # one of the *Frame messages


def _status(err: BaseException, method: str, state: ServiceState) -> tuple[grpc.StatusCode, str]:
    code, message = grpc.StatusCode.UNKNOWN, f"{method}: {err}"
    if isinstance(err, RunnerError):
        code, message = err.code, err.message
    elif isinstance(err, Malformed):
        code, message = grpc.StatusCode.INVALID_ARGUMENT, str(err)
    if state.stopping and code not in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
        code, message = grpc.StatusCode.UNAVAILABLE, f"{message} (the plugin is shutting down)"
    return code, message


def _trace(err: BaseException) -> str | None:
    """The traceback of an unexpected error, for the log (a RunnerError or a
    contract refusal says all in its message)."""
    if isinstance(err, (RunnerError, Malformed)):
        return None
    return "".join(traceback.format_exception(err)).strip()


def _refuse(reason: str) -> None:
    if reason:
        raise Malformed(reason)


def _well_formed(text: str) -> str:
    # Lone surrogates cannot travel as UTF-8: replace them, as Go's and
    # JavaScript's SDKs do.
    return text.encode("utf-8", "replace").decode("utf-8")


class LiveContext:
    """The CallContext (and ToolCallContext) of one streaming call: each
    write is one frame, in order, until the call returns."""

    def __init__(self, frame_type: Callable[..., _Frame], checkpoints: bool) -> None:
        self._frame = frame_type
        self._checkpoints = checkpoints
        self._open = True
        self.queue: asyncio.Queue[_Frame] = asyncio.Queue()

    def _write(self, frame: _Frame) -> None:
        if self._open:
            self.queue.put_nowait(frame)

    def write_text_delta(self, text: str) -> None:
        self._write(self._frame(text_delta=pb.TextDelta(text=_well_formed(text))))

    def write_reasoning_delta(self, text: str) -> None:
        self._write(self._frame(reasoning_delta=pb.ReasoningDelta(text=_well_formed(text))))

    def write_event(self, event_type: str, payload: dict[str, Any]) -> None:
        reason = check_event(event_type, payload)
        if reason:
            raise ValueError("write_event: " + reason)
        self._write(self._frame(event=pb.Event(type=event_type, payload_json=json.dumps(payload, ensure_ascii=False))))

    def heartbeat(self) -> None:
        self._write(self._frame(heartbeat=pb.Heartbeat()))

    def save_heartbeat_checkpoint(self, text: str) -> None:
        if not self._checkpoints:
            raise ValueError("save_heartbeat_checkpoint: only tool calls keep checkpoints")
        self._write(self._frame(heartbeat_checkpoint=pb.HeartbeatCheckpoint(text=text)))

    def close(self) -> None:
        self._open = False


class RunnerService(pb.RunnerServicer):
    """The gRPC servicer of a runner."""

    def __init__(self, runner: Any, state: ServiceState | None = None) -> None:
        self._runner = runner
        self._state = state or ServiceState()

    async def _unary(self, method: str, context: Ctx, call: Awaitable[_T]) -> _T:
        try:
            return await call
        except asyncio.CancelledError:
            raise
        except Exception as err:
            code, message = _status(err, method, self._state)
            log.warn(method + " failed", error=message, code=code.name, traceback=_trace(err))
            await context.abort(code, message)
            raise AssertionError("unreachable") from err

    async def _streaming(
        self,
        method: str,
        context: Ctx,
        frame_type: Callable[..., _Frame],
        checkpoints: bool,
        run: Callable[[LiveContext], Awaitable[Any]],
        check: Callable[[Any], str],
    ) -> AsyncIterator[_Frame]:
        live = LiveContext(frame_type, checkpoints)
        task: asyncio.Task[Any] = asyncio.ensure_future(run(live))
        try:
            while True:
                getter = asyncio.ensure_future(live.queue.get())
                done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                    continue
                getter.cancel()
                break
            live.close()
            while not live.queue.empty():
                yield live.queue.get_nowait()
            try:
                resp = task.result()
                _refuse(check(resp))
            except asyncio.CancelledError:
                raise
            except Exception as err:
                code, message = _status(err, method, self._state)
                log.warn(method + " failed", error=message, code=code.name, traceback=_trace(err))
                await context.abort(code, message)
                return
            yield frame_type(outcome=resp)
        finally:
            live.close()
            if not task.done():
                # The host cancelled the call: the runner's coroutine ends.
                task.cancel()

    async def Info(self, request: pb.InfoRequest, context: Ctx) -> pb.InfoResponse:
        info = await self._unary("Info", context, self._runner.info(request))
        return pb.InfoResponse(
            name=info.name,
            version=info.version,
            protocol_versions=[PROTOCOL_VERSION],
            capabilities=capabilities_of(self._runner),
        )

    async def Configure(self, request: pb.ConfigureRequest, context: Ctx) -> pb.ConfigureResponse:
        async def call() -> pb.ConfigureResponse:
            resp: pb.ConfigureResponse = await self._runner.configure(request)
            _refuse(check_configure_response(resp))
            return resp

        return await self._unary("Configure", context, call())

    async def BuildUserMessage(self, request: pb.BuildUserMessageRequest, context: Ctx) -> pb.BuildUserMessageResponse:
        async def call() -> pb.BuildUserMessageResponse:
            resp: pb.BuildUserMessageResponse = await self._runner.build_user_message(request)
            _refuse(check_build_user_message_response(resp))
            return resp

        return await self._unary("BuildUserMessage", context, call())

    async def RunModelStep(self, request: pb.RunModelStepRequest, context: Ctx) -> AsyncIterator[Any]:
        async for frame in self._streaming(
            "RunModelStep",
            context,
            pb.RunModelStepFrame,
            False,
            lambda live: self._runner.run_model_step(request, live),
            lambda resp: check_run_model_step_response(resp, request.turn),
        ):
            yield frame

    async def ExecuteDeferredToolCall(self, request: pb.ExecuteToolRequest, context: Ctx) -> AsyncIterator[Any]:
        async for frame in self._streaming(
            "ExecuteDeferredToolCall",
            context,
            pb.ToolCallFrame,
            True,
            lambda live: self._runner.execute_deferred_tool_call(request, live),
            lambda resp: check_execute_tool_response(
                "ExecuteDeferredToolCall", resp, False, request.supports_tool_tasks
            ),
        ):
            yield frame

    async def PollToolTask(self, request: pb.PollToolTaskRequest, context: Ctx) -> AsyncIterator[Any]:
        async for frame in self._streaming(
            "PollToolTask",
            context,
            pb.ToolCallFrame,
            True,
            lambda live: self._optional("poll_tool_task", "tool_task_polling")(request, live),
            lambda resp: check_execute_tool_response("PollToolTask", resp, True, True),
        ):
            yield frame

    async def SummarizeContext(self, request: pb.SummarizeContextRequest, context: Ctx) -> AsyncIterator[Any]:
        async for frame in self._streaming(
            "SummarizeContext",
            context,
            pb.SummarizeContextFrame,
            False,
            lambda live: self._optional("summarize_context", "compaction")(request, live),
            lambda resp: "" if resp is not None else "SummarizeContext returned no response",
        ):
            yield frame

    async def BuildUnfinishedTurnMessages(
        self, request: pb.BuildUnfinishedTurnMessagesRequest, context: Ctx
    ) -> pb.BuildUnfinishedTurnMessagesResponse:
        f = self._optional("build_unfinished_turn_messages", "unfinished_turn_messages")
        resp: pb.BuildUnfinishedTurnMessagesResponse = await self._unary(
            "BuildUnfinishedTurnMessages", context, f(request)
        )
        return resp

    async def CancelToolTask(self, request: pb.CancelToolTaskRequest, context: Ctx) -> pb.CancelToolTaskResponse:
        f = self._optional("cancel_tool_task", "tool_task_cancelling")
        resp = await self._unary("CancelToolTask", context, f(request))
        return resp if resp is not None else pb.CancelToolTaskResponse()

    async def EstimateInputTokens(
        self, request: pb.EstimateInputTokensRequest, context: Ctx
    ) -> pb.EstimateInputTokensResponse:
        f = self._optional("estimate_input_tokens", "input_token_estimation")
        resp: pb.EstimateInputTokensResponse = await self._unary("EstimateInputTokens", context, f(request))
        return resp

    async def SelectCompactionCutoff(
        self, request: pb.CompactionCutoffRequest, context: Ctx
    ) -> pb.CompactionCutoffResponse:
        f = self._optional("select_compaction_cutoff", "compaction")

        async def call() -> pb.CompactionCutoffResponse:
            resp: pb.CompactionCutoffResponse = await f(request)
            _refuse(check_compaction_cutoff_response(resp, request))
            return resp

        return await self._unary("SelectCompactionCutoff", context, call())

    def _optional(self, name: str, capability: str) -> Callable[..., Awaitable[Any]]:
        f = getattr(self._runner, name, None)
        if not callable(f):

            async def unimplemented(*_: Any) -> Any:
                raise RunnerError(
                    grpc.StatusCode.UNIMPLEMENTED, f"this runner does not implement {name} (capability {capability})"
                )

            return unimplemented
        return f  # type: ignore[no-any-return]
