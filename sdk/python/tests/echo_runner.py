"""A minimal runner for the SDK's own tests: it answers each turn with the
user's last message. It prints to stdout before and after serve starts,
which serve must keep off stdout."""

from __future__ import annotations

import asyncio
import json
import os

from dex_runner import InfoResult, pb, serve
from dex_runner.runner import CallContext, ToolCallContext


class Echo:
    async def info(self, req: pb.InfoRequest) -> InfoResult:
        print("info called")  # must not reach stdout
        return InfoResult("echo", "1.0.0")

    def __init__(self) -> None:
        self.pid_file = ""

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        cfg = json.loads(req.runner_config or "{}")
        known = {"greeting", "pid_file"}
        if not isinstance(cfg, dict) or set(cfg) - known:
            raise ValueError(f"runner_config: unknown keys {sorted(set(cfg) - known)}")
        self.pid_file = cfg.get("pid_file", "")
        return pb.ConfigureResponse()

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        item = json.dumps({"role": "user", "content": req.text})
        return pb.BuildUserMessageResponse(message=pb.FrameworkMessage(role="user", text=req.text, framework_item=item))

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        text = next((m.text for m in reversed(req.turn.messages) if m.role == "user"), "")
        ctx.write_text_delta(text)
        if text.startswith("slow:"):
            # A model call still running when the plugin is told to stop.
            await asyncio.sleep(float(text.removeprefix("slow:")))
        if text.startswith("hang-once") and self.pid_file and not os.path.exists(self.pid_file):
            # The first attempt writes this process's ID and hangs, so a
            # test can SIGKILL the runner mid model call; the retry, in the
            # new process, answers.
            with open(self.pid_file, "w") as f:
                f.write(str(os.getpid()))
            await asyncio.sleep(3600)
        item = json.dumps({"role": "assistant", "content": text})
        done = pb.TurnCompleted(new_messages=[pb.FrameworkMessage(role="assistant", text=text, framework_item=item)])
        return pb.RunModelStepResponse(turn_completed=done)

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message="unknown tool " + req.tool_call.tool_name))


if __name__ == "__main__":
    print("before serve")  # the host would read this as a broken handshake
    serve(Echo())
