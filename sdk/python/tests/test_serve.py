"""The go-plugin handshake end to end: the echo runner started as the host
starts a plugin (the magic cookie, the protocol versions, a port range and
the host's client certificate), its one stdout line, mutual TLS that
refuses a client without the host's certificate, the health service, a
streaming call, and go-plugin's Shutdown."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from grpc_health.v1 import health_pb2, health_pb2_grpc

from dex_runner import MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, pb
from dex_runner.tls import PluginCert, make_cert

ECHO = Path(__file__).with_name("echo_runner.py")


def plugin_env(client: PluginCert) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "SYSTEMROOT")}
    env.update(
        {
            MAGIC_COOKIE_KEY: MAGIC_COOKIE_VALUE,
            "PLUGIN_PROTOCOL_VERSIONS": "1",
            "PLUGIN_MIN_PORT": "41000",
            "PLUGIN_MAX_PORT": "41999",
            "PLUGIN_CLIENT_CERT": client.cert_pem.decode(),
        }
    )
    return env


@pytest.fixture
def plugin() -> Iterator[tuple[subprocess.Popen[str], str, bytes, PluginCert]]:
    client = make_cert()
    proc = subprocess.Popen(
        [sys.executable, str(ECHO)], env=plugin_env(client), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().rstrip("\n")
        yield proc, line, _server_pem(line), client
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _server_pem(line: str) -> bytes:
    der_b64 = line.split("|")[-1]
    der = base64.b64decode(der_b64 + "=" * (-len(der_b64) % 4))
    return x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)


def test_handshake_line(plugin: tuple[subprocess.Popen[str], str, bytes, PluginCert]) -> None:
    _, line, _, _ = plugin
    parts = line.split("|")
    assert parts[:3] == ["1", "1", "tcp"], line
    host, port = parts[3].rsplit(":", 1)
    assert host == "127.0.0.1" and 41000 <= int(port) <= 41999
    assert parts[4] == "grpc"
    assert "=" not in parts[5]


def test_serves_over_mutual_tls(plugin: tuple[subprocess.Popen[str], str, bytes, PluginCert]) -> None:
    proc, line, server_pem, client = plugin
    address = line.split("|")[3]

    async def run() -> None:
        creds = grpc.ssl_channel_credentials(
            root_certificates=server_pem, private_key=client.key_pem, certificate_chain=client.cert_pem
        )
        opts = [("grpc.ssl_target_name_override", "localhost")]
        async with grpc.aio.secure_channel(address, creds, options=opts) as ch:
            health = health_pb2_grpc.HealthStub(ch)
            resp = await health.Check(health_pb2.HealthCheckRequest(service="plugin"))
            assert resp.status == health_pb2.HealthCheckResponse.SERVING
            info = await ch.unary_unary(
                "/dex.runner.v1.Runner/Info",
                request_serializer=pb.InfoRequest.SerializeToString,
                response_deserializer=pb.InfoResponse.FromString,
            )(pb.InfoRequest())
            assert (info.name, info.version, list(info.protocol_versions)) == ("echo", "1.0.0", [1])
            assert not info.capabilities.tool_task_polling
            configure = ch.unary_unary(
                "/dex.runner.v1.Runner/Configure",
                request_serializer=pb.ConfigureRequest.SerializeToString,
                response_deserializer=pb.ConfigureResponse.FromString,
            )
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await configure(pb.ConfigureRequest(agent="a", runner_config='{"colour": 1}'))
            assert bad.value.code() == grpc.StatusCode.UNKNOWN
            assert "unknown keys ['colour']" in (bad.value.details() or "")
            await configure(pb.ConfigureRequest(agent="a", runner_config="{}"))
            step = ch.unary_stream(
                "/dex.runner.v1.Runner/RunModelStep",
                request_serializer=pb.RunModelStepRequest.SerializeToString,
                response_deserializer=pb.RunModelStepFrame.FromString,
            )
            turn = pb.TurnContext(
                agent="a",
                session_id="s",
                turn_id="turn-1",
                messages=[pb.Message(sequence=1, role="user", text="héllo")],
            )
            frames = [f async for f in step(pb.RunModelStepRequest(turn=turn))]
            assert [f.WhichOneof("frame") for f in frames] == ["text_delta", "outcome"]
            assert frames[0].text_delta.text == "héllo"
            assert frames[1].outcome.turn_completed.new_messages[0].text == "héllo"
            await ch.unary_unary(
                "/plugin.GRPCController/Shutdown", request_serializer=lambda b: b, response_deserializer=lambda b: b
            )(b"")

        # A client without the host's certificate is refused.
        other = make_cert()
        creds = grpc.ssl_channel_credentials(
            root_certificates=server_pem, private_key=other.key_pem, certificate_chain=other.cert_pem
        )
        async with grpc.aio.secure_channel(address, creds, options=opts) as ch:
            with pytest.raises(grpc.aio.AioRpcError):
                await ch.unary_unary(
                    "/dex.runner.v1.Runner/Info",
                    request_serializer=pb.InfoRequest.SerializeToString,
                    response_deserializer=pb.InfoResponse.FromString,
                )(pb.InfoRequest(), timeout=5)

    try:
        asyncio.run(run())
    except grpc.aio.AioRpcError as err:  # the refused client may also see the stop
        assert err.code() in (grpc.StatusCode.UNAVAILABLE,)
    assert proc.wait(timeout=10) == 0, "Shutdown did not stop the plugin"
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read() == "", "something besides the handshake line reached stdout"
    lines = [json.loads(x) for x in proc.stderr.read().splitlines() if x.startswith("{")]
    assert any(x["@message"] == "serving" and x["@level"] == "info" for x in lines)
    assert any(x["@message"] in ("before serve", "info called") for x in lines), "print did not become a log line"


def test_run_by_hand_says_what_it_is() -> None:
    env = {k: v for k, v in os.environ.items() if k != MAGIC_COOKIE_KEY}
    out = subprocess.run([sys.executable, str(ECHO)], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "This program is a runner plugin of dex-agent-worker" in out.stderr
    assert out.stdout == "before serve\n"  # the module's own print, before serve runs


def test_refuses_another_contract_version() -> None:
    client = make_cert()
    env = plugin_env(client) | {"PLUGIN_PROTOCOL_VERSIONS": "2"}
    out = subprocess.run([sys.executable, str(ECHO)], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "runner contract version 1; the host offers '2'" in out.stderr


def test_sigterm_drains_a_running_call(plugin: tuple[subprocess.Popen[str], str, bytes, PluginCert]) -> None:
    """A SIGTERM lets a call in flight finish (within the grace period) with
    its outcome, then the plugin exits 0."""
    proc, line, server_pem, client = plugin
    address = line.split("|")[3]

    async def run() -> list[str]:
        creds = grpc.ssl_channel_credentials(
            root_certificates=server_pem, private_key=client.key_pem, certificate_chain=client.cert_pem
        )
        async with grpc.aio.secure_channel(
            address, creds, options=[("grpc.ssl_target_name_override", "localhost")]
        ) as ch:
            step = ch.unary_stream(
                "/dex.runner.v1.Runner/RunModelStep",
                request_serializer=pb.RunModelStepRequest.SerializeToString,
                response_deserializer=pb.RunModelStepFrame.FromString,
            )
            turn = pb.TurnContext(agent="a", messages=[pb.Message(sequence=1, role="user", text="slow:0.8")])
            kinds: list[str] = []
            async for f in step(pb.RunModelStepRequest(turn=turn)):
                kinds.append(f.WhichOneof("frame") or "")
                if len(kinds) == 1:
                    proc.send_signal(signal.SIGTERM)  # the call is running
            return kinds

    assert asyncio.run(run()) == ["text_delta", "outcome"]
    assert proc.wait(timeout=10) == 0


def test_two_plugins_never_share_a_port() -> None:
    """Without SO_REUSEPORT a port one plugin serves on is refused to the
    next: the host always reaches the plugin whose certificate it holds."""
    import asyncio

    import grpc

    from dex_runner.serve import SERVER_OPTIONS

    async def run() -> None:
        first = grpc.aio.server(options=SERVER_OPTIONS)
        port = first.add_insecure_port("127.0.0.1:0")
        await first.start()
        second = grpc.aio.server(options=SERVER_OPTIONS)
        try:
            try:
                bound = second.add_insecure_port(f"127.0.0.1:{port}")
            except RuntimeError:
                bound = 0
            assert bound == 0, "a second server bound the port the first serves on"
        finally:
            await first.stop(None)

    asyncio.run(run())
