"""The go-plugin side of a runner plugin, as runner.proto's header describes
it for plugins written without go-plugin: the magic cookie and the protocol
version, AutoMTLS with a fresh certificate trusting only the host's, a port
in the allowed range, the one handshake line on stdout, the gRPC health
service, go-plugin's controller (Shutdown) and stdio services, logs as
go-hclog JSON on stderr, and a graceful stop."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import platform
import random
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from dex_runner import log, pb
from dex_runner.runner import PROTOCOL_VERSION
from dex_runner.service import RunnerService, ServiceState
from dex_runner.tls import handshake_cert, make_cert

#: The magic cookie of the runner plugins' go-plugin handshake.
MAGIC_COOKIE_KEY = "DEX_RUNNER_PLUGIN"
MAGIC_COOKIE_VALUE = "9f1c7e2a-dex-runner-plugin"

# A request carries the whole transcript: accept what the Go host sends.
# No SO_REUSEPORT (gRPC Python's default): with it, two plugins that pick
# the same port both bind it, and the kernel hands the host's connection to
# either one, whose certificate the host then refuses.
SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.so_reuseport", 0),
]


class _LogStream(io.TextIOBase):
    """stdout for everything but the handshake line: each line written
    (print) becomes an info log line on stderr."""

    def __init__(self) -> None:
        self._buf = ""

    def write(self, s: str) -> int:
        self._buf += s
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            log.info(line, stream="stdout")
        return len(s)

    def flush(self) -> None:
        if self._buf:
            line, self._buf = self._buf, ""
            log.info(line, stream="stdout")


# stdout carries the handshake line and nothing else. In a process the host
# started, everything else written to stdout (print) becomes log lines on
# stderr from the moment the SDK is imported; the handshake line goes to
# the real stdout.
_handshake_out = sys.stdout
if os.environ.get(MAGIC_COOKIE_KEY) == MAGIC_COOKIE_VALUE:
    sys.stdout = _LogStream()


class HandshakeError(Exception):
    """The process was not started by the host as a plugin."""


def check_handshake_env(env: Mapping[str, str]) -> None:
    """Raises HandshakeError, with what to do, when env is not a host's."""
    if env.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        raise HandshakeError(
            "This program is a runner plugin of dex-agent-worker. It is not meant to be run directly:\n"
            "list it under plugins in the worker's config (command: python, args: [-m, your_runner])."
        )
    versions = [v.strip() for v in env.get("PLUGIN_PROTOCOL_VERSIONS", "").split(",")]
    if str(PROTOCOL_VERSION) not in versions:
        raise HandshakeError(
            f"this runner speaks runner contract version {PROTOCOL_VERSION}; "
            f"the host offers {env.get('PLUGIN_PROTOCOL_VERSIONS', '')!r}"
        )
    if not env.get("PLUGIN_CLIENT_CERT"):
        raise HandshakeError("PLUGIN_CLIENT_CERT is not set: the host must use go-plugin's AutoMTLS")


def _bind(server: grpc.aio.Server, creds: grpc.ServerCredentials, env: Mapping[str, str]) -> int:
    """Binds a port between PLUGIN_MIN_PORT and PLUGIN_MAX_PORT when they are
    set (from a random start, as go-plugin does), else any port."""
    try:
        lo, hi = int(env.get("PLUGIN_MIN_PORT") or 0), int(env.get("PLUGIN_MAX_PORT") or 0)
    except ValueError:
        lo = hi = 0
    if not (lo > 0 and hi >= lo):
        return server.add_secure_port("127.0.0.1:0", creds)
    span = hi - lo + 1
    start = random.randrange(span)
    for i in range(span):
        port = lo + (start + i) % span
        try:
            if server.add_secure_port(f"127.0.0.1:{port}", creds):
                return port
        except RuntimeError:
            continue
    raise RuntimeError(f"no free port between {lo} and {hi}")


def _go_plugin_handlers(
    state: ServiceState, stopped: asyncio.Event, stop: Any
) -> list[grpc.GenericRpcHandler[Any, Any]]:
    """go-plugin's GRPCController.Shutdown, which the host calls to stop the
    process, and GRPCStdio.StreamStdio, which the host opens to copy the
    plugin's output (this plugin writes to stderr directly, so the stream
    stays empty until the plugin stops). Their messages are empty or never
    sent, so no generated code is needed."""

    async def shutdown(_: bytes, __: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        asyncio.get_running_loop().call_soon(stop, "the host called GRPCController.Shutdown")
        return b""

    async def stream_stdio(_: bytes, __: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[bytes]:
        await stopped.wait()
        return
        yield b""  # an async generator that sends nothing

    identity = lambda b: b  # noqa: E731
    return [
        grpc.method_handlers_generic_handler(
            "plugin.GRPCController",
            {"Shutdown": grpc.unary_unary_rpc_method_handler(shutdown, identity, identity)},
        ),
        grpc.method_handlers_generic_handler(
            "plugin.GRPCStdio",
            {"StreamStdio": grpc.unary_stream_rpc_method_handler(stream_stdio, identity, identity)},
        ),
    ]


class _StderrLogging(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        level = {"WARNING": "warn", "CRITICAL": "error"}.get(record.levelname, record.levelname.lower())
        log.log(level, record.getMessage(), logger=record.name)


async def serve_async(runner: Any, env: Mapping[str, str] | None = None, shutdown_grace: float = 1.5) -> None:
    """Serves runner until the host stops it. See :func:`serve`."""
    env = os.environ if env is None else env
    check_handshake_env(env)
    cert = make_cert()
    creds = grpc.ssl_server_credentials(
        [(cert.key_pem, cert.cert_pem)],
        root_certificates=env["PLUGIN_CLIENT_CERT"].encode(),
        require_client_auth=True,
    )
    state = ServiceState()
    stopped = asyncio.Event()
    server = grpc.aio.server(options=SERVER_OPTIONS)
    pb.add_RunnerServicer_to_server(RunnerService(runner, state), server)
    health_servicer = health_aio.HealthServicer()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    await health_servicer.set("plugin", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    def stop(why: str) -> None:
        if state.stopping:
            return
        log.info("stopping", reason=why)
        state.stopping = True
        stopped.set()

    server.add_generic_rpc_handlers(_go_plugin_handlers(state, stopped, stop))
    loop = asyncio.get_running_loop()
    for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
        loop.add_signal_handler(sig, stop, name)
    port = _bind(server, creds, env)
    await server.start()
    log.info("serving", port=port, pid=os.getpid(), python=platform.python_version())
    out = _handshake_out
    out.write(f"1|{PROTOCOL_VERSION}|tcp|127.0.0.1:{port}|grpc|{handshake_cert(cert.der)}\n")
    out.flush()
    await stopped.wait()
    await health_servicer.enter_graceful_shutdown()
    # Calls in flight may finish within the grace period; then they are cut.
    await server.stop(shutdown_grace)


def serve(runner: Any, env: Mapping[str, str] | None = None, shutdown_grace: float = 1.5) -> None:
    """Runs runner as a plugin of dex-agent-worker until the host stops it.
    Call it from the plugin's main module::

        if __name__ == "__main__":
            serve(MyRunner())

    Nothing but the handshake line may reach stdout: serve sends ``print``
    and the ``logging`` module to stderr, as go-hclog JSON lines. Run by
    hand (without the host's environment) it says so on stderr and exits
    with status 1.
    """
    try:
        check_handshake_env(os.environ if env is None else env)
    except HandshakeError as err:
        sys.stderr.write(f"{err}\n")
        raise SystemExit(1) from None
    if sys.stdout is _handshake_out:
        sys.stdout = _LogStream()
    root = logging.getLogger()
    root.handlers[:] = [_StderrLogging()]
    root.setLevel(logging.INFO)
    asyncio.run(serve_async(runner, env, shutdown_grace))
