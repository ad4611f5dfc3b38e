"""Replays the runner contract's shared test vectors (proto/testdata/vectors,
see its README) through the SDK's gRPC service, as the Go and TypeScript
SDKs do: a vector runner plays each call's runner side, a raw gRPC client in
the host's place checks the request the runner got, the frames on the wire
and the status."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from dex_runner import InfoResult, pb
from dex_runner.runner import CallContext, ToolCallContext
from dex_runner.serve import SERVER_OPTIONS
from dex_runner.service import RunnerService

VECTORS = Path(__file__).resolve().parents[3] / "proto" / "testdata" / "vectors"

# The message types of each method: request, response, stream frame.
METHODS: dict[str, tuple[type[Message], type[Message], type[Message] | None]] = {
    "BuildUserMessage": (pb.BuildUserMessageRequest, pb.BuildUserMessageResponse, None),
    "SelectCompactionCutoff": (pb.CompactionCutoffRequest, pb.CompactionCutoffResponse, None),
    "RunModelStep": (pb.RunModelStepRequest, pb.RunModelStepResponse, pb.RunModelStepFrame),
    "ExecuteDeferredToolCall": (pb.ExecuteToolRequest, pb.ExecuteToolResponse, pb.ToolCallFrame),
    "PollToolTask": (pb.PollToolTaskRequest, pb.ExecuteToolResponse, pb.ToolCallFrame),
    "SummarizeContext": (pb.SummarizeContextRequest, pb.SummarizeContextResponse, pb.SummarizeContextFrame),
}


def parse(cls: type[Message], obj: Any) -> Message:
    m = cls()
    json_format.ParseDict(obj, m)
    return m


def normal(msg: Message) -> Any:
    """The message as a dict without defaults, with each event payload read
    as JSON (SDKs may order its keys differently)."""

    def walk(v: Any, key: str = "") -> Any:
        if key == "payload_json" and isinstance(v, str):
            return json.loads(v or "{}")
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(json_format.MessageToDict(msg, preserving_proto_field_name=True))


class VectorRunner:
    """Plays the runner side of the current call."""

    def __init__(self) -> None:
        self.call: dict[str, Any] = {}
        self.cancelled = asyncio.Event()

    def want(self, req: Message) -> None:
        expected = parse(type(req), self.call["request"])
        assert normal(req) == normal(expected), "the runner got another request than the vector's"

    def answer(self, cls: type[Message]) -> Any:
        return parse(cls, self.call["runner"].get("response", {}))

    async def play(self, ctx: CallContext) -> None:
        for f in self.call["runner"].get("frames", []):
            ((kind, body),) = f.items()
            if kind == "text_delta":
                ctx.write_text_delta(body["text"])
            elif kind == "reasoning_delta":
                ctx.write_reasoning_delta(body["text"])
            elif kind == "event":
                ctx.write_event(body["type"], json.loads(body["payload_json"]))
            elif kind == "heartbeat_checkpoint":
                tool_ctx: ToolCallContext = ctx  # type: ignore[assignment]
                tool_ctx.save_heartbeat_checkpoint(body["text"])
            else:
                raise AssertionError(f"a runner does not write {kind} frames")
        if self.call["runner"].get("wait_for_cancel"):
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            raise AssertionError("the call was never cancelled")

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult("vectors", "1")

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        return pb.ConfigureResponse()

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> Any:
        self.want(req)
        return self.answer(pb.BuildUserMessageResponse)

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> Any:
        self.want(req)
        await self.play(ctx)
        return self.answer(pb.RunModelStepResponse)

    async def execute_deferred_tool_call(self, req: pb.ExecuteToolRequest, ctx: ToolCallContext) -> Any:
        self.want(req)
        await self.play(ctx)
        return self.answer(pb.ExecuteToolResponse)

    async def poll_tool_task(self, req: pb.PollToolTaskRequest, ctx: ToolCallContext) -> Any:
        self.want(req)
        await self.play(ctx)
        return self.answer(pb.ExecuteToolResponse)

    async def select_compaction_cutoff(self, req: pb.CompactionCutoffRequest) -> Any:
        self.want(req)
        return self.answer(pb.CompactionCutoffResponse)

    async def summarize_context(self, req: pb.SummarizeContextRequest, ctx: CallContext) -> Any:
        self.want(req)
        await self.play(ctx)
        return self.answer(pb.SummarizeContextResponse)


def vector_files() -> list[Path]:
    files = sorted(VECTORS.glob("*.json"))
    assert files, f"no vectors in {VECTORS}"
    return files


async def replay(channel: grpc.aio.Channel, runner: VectorRunner, call: dict[str, Any]) -> None:
    req_cls, resp_cls, frame_cls = METHODS[call["method"]]
    runner.call, runner.cancelled = call, asyncio.Event()
    wire = call.get("wire", {})
    want_status = wire.get("status", "OK")
    want_text = wire.get("message_contains", "")
    path = "/dex.runner.v1.Runner/" + call["method"]
    request = parse(req_cls, call["request"])
    if frame_cls is None:
        unary = channel.unary_unary(
            path, request_serializer=req_cls.SerializeToString, response_deserializer=resp_cls.FromString
        )
        try:
            res = await unary(request)
            status, details = "OK", ""
        except grpc.aio.AioRpcError as err:
            status, details = err.code().name, err.details() or ""
        assert status == want_status, f"{call['method']}: {details}"
        assert want_text in details
        if status == "OK":
            assert normal(res) == normal(parse(resp_cls, call["runner"]["response"]))
        return
    expected = [normal(parse(frame_cls, f)) for f in wire.get("frames", call["runner"].get("frames", []))]
    if "frames" not in wire and "response" in call["runner"]:
        expected.append(normal(parse(frame_cls, {"outcome": call["runner"]["response"]})))
    stream = channel.unary_stream(
        path, request_serializer=req_cls.SerializeToString, response_deserializer=frame_cls.FromString
    )
    rpc = stream(request)
    got: list[Any] = []
    status, details = "OK", ""
    try:
        async for frame in _frames(rpc):
            if frame.WhichOneof("frame") == "heartbeat":
                continue  # never compared
            got.append(normal(frame))
            if call.get("cancel_after_frames") and len(got) == call["cancel_after_frames"]:
                rpc.cancel()
                break
    except grpc.aio.AioRpcError as err:
        status, details = err.code().name, err.details() or ""
    if call.get("cancel_after_frames"):
        status = "CANCELLED"
        await asyncio.wait_for(runner.cancelled.wait(), 10)
    assert status == want_status, f"{call['method']}: {details}"
    assert want_text in details, details
    assert got == expected


async def _frames(rpc: Any) -> AsyncIterator[Any]:
    async for f in rpc:
        yield f


@pytest.mark.parametrize("path", vector_files(), ids=lambda p: p.stem)
def test_vector(path: Path) -> None:
    vector = json.loads(path.read_text())
    assert vector["contract_version"] == 1
    assert vector["case"] == path.stem

    async def run() -> None:
        runner = VectorRunner()
        server = grpc.aio.server(options=SERVER_OPTIONS)
        pb.add_RunnerServicer_to_server(RunnerService(runner), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                for call in vector["calls"]:
                    await replay(channel, runner, call)
        finally:
            await server.stop(0)

    asyncio.run(run())
