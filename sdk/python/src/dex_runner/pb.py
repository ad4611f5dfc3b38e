"""The runner contract's messages (dex.runner.v1), generated from
proto/dex/runner/v1/runner.proto when the SDK is installed. Runners build
and read these messages: ``pb.TurnCompleted(new_messages=[...])``."""

from dex_runner._gen.dex.runner.v1.runner_pb2 import *  # noqa: F403
from dex_runner._gen.dex.runner.v1.runner_pb2_grpc import RunnerServicer as RunnerServicer
from dex_runner._gen.dex.runner.v1.runner_pb2_grpc import (
    add_RunnerServicer_to_server as add_RunnerServicer_to_server,
)
