"""`nav gateway serve` as users run it: a real process, real signals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

NAV = str(Path(sys.executable).with_name("nav"))
SECRET = "sk-test-cli-0123456789abcdefghij"


def routes_file(tmp_path: Path, body: str | None = None) -> Path:
    path = tmp_path / "routes.yaml"
    path.write_text(
        body
        or "routes:\n  - routing_hint: agent\n    endpoint: http://127.0.0.1:9\n"
        "    model: m\n    protocols: [openai_chat_completions]\n    api_key_env: CLI_TEST_KEY\n",
        encoding="utf-8",
    )
    return path


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NAV, "gateway", "serve", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **(env or {})},
    )


def test_serve_without_routes_says_how_to_give_them(monkeypatch) -> None:
    monkeypatch.delenv("NAV_GATEWAY_ROUTES", raising=False)
    result = run("--listen", "127.0.0.1:0")
    assert result.returncode == 2
    assert "pass --routes FILE or set NAV_GATEWAY_ROUTES" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_routes_file_names_the_variable(tmp_path: Path) -> None:
    result = run(
        "--listen", "127.0.0.1:0", "--routes", str(routes_file(tmp_path)), env={"CLI_TEST_KEY": ""}
    )
    assert result.returncode == 2
    assert "environment variable CLI_TEST_KEY is not set" in result.stderr
    assert str(tmp_path / "routes.yaml") in result.stderr


def test_missing_auth_token_variable_is_reported(tmp_path: Path) -> None:
    result = run(
        "--routes",
        str(routes_file(tmp_path)),
        "--auth-token-env",
        "NO_SUCH_TOKEN_VAR",
        env={"CLI_TEST_KEY": SECRET},
    )
    assert result.returncode == 2
    assert "NO_SUCH_TOKEN_VAR" in result.stderr


def test_serve_logs_ready_answers_health_and_stops_on_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "CLI_TEST_KEY": SECRET, "NAV_GATEWAY_ROUTES": str(routes_file(tmp_path))}
    process = subprocess.Popen(
        [NAV, "gateway", "serve", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        ready = process.stderr.readline()
        assert "gateway ready on 127.0.0.1:" in ready and "1 route(s)" in ready
        assert ready.rstrip().endswith(f"; nav-agent {version('nav-agent')}")
        port = int(ready.split("127.0.0.1:")[1].split(":")[0])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=15)[1]
        assert process.returncode == 0
        assert time.monotonic() - started < 10
        assert "gateway stopped" in rest
        assert SECRET not in ready + rest
    finally:
        process.kill()


def test_invalid_timeout_option_is_one_line(tmp_path: Path) -> None:
    result = run(
        "--routes", str(routes_file(tmp_path)), "--idle-timeout", "0", env={"CLI_TEST_KEY": SECRET}
    )
    assert result.returncode == 2
    assert "invalid setting idle_timeout_s" in result.stderr and "Traceback" not in result.stderr


# --- issue 9: start-up and configuration errors, one sentence each -----------


def fails_with(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert result.returncode == 2, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and " E0000" not in result.stderr
    assert "Failed to bind" not in result.stderr and SECRET not in result.stderr


def test_unknown_log_level_is_refused_in_one_line(tmp_path: Path) -> None:
    result = run("--routes", str(routes_file(tmp_path)), "--log-level", "verbose")
    assert result.returncode == 2 and "verbose" in result.stderr
    assert "Traceback" not in result.stderr


def test_out_of_range_port_is_refused(tmp_path: Path) -> None:
    fails_with(
        run("--routes", str(routes_file(tmp_path)), "--listen", "127.0.0.1:99999"),
        "port from 0 to 65535",
    )


def test_port_in_use_says_address_already_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(
            "--routes",
            str(routes_file(tmp_path)),
            "--listen",
            f"127.0.0.1:{port}",
            env={"CLI_TEST_KEY": SECRET},
        )
    fails_with(result, f"address already in use: 127.0.0.1:{port}")


def test_blank_auth_token_is_refused_at_start(tmp_path: Path) -> None:
    result = run(
        "--routes",
        str(routes_file(tmp_path)),
        "--auth-token-env",
        "BLANK_TOKEN",
        env={"CLI_TEST_KEY": SECRET, "BLANK_TOKEN": " \n"},
    )
    fails_with(result, "BLANK_TOKEN", "unset or blank")


def test_key_with_a_control_character_names_the_route_not_the_key(tmp_path: Path) -> None:
    result = run(
        "--routes", str(routes_file(tmp_path)), env={"CLI_TEST_KEY": SECRET[:10] + "\x07" + "rest"}
    )
    fails_with(result, "route 1 ('agent')", "api_key_env CLI_TEST_KEY", "U+0007")
    assert SECRET[:10] not in result.stderr


def test_token_and_key_with_trailing_newlines_serve_and_unknown_keys_warn(
    tmp_path: Path,
) -> None:
    body = (
        "routes:\n  - routing_hint: agent\n    endpoint: http://127.0.0.1:9\n"
        "    model: m\n    protocols: [openai_chat_completions]\n    api_key_env: CLI_TEST_KEY\n"
        "    enabeld: false\n"
    )
    env = {
        **os.environ,
        "CLI_TEST_KEY": SECRET + "\n",
        "GATEWAY_TOKEN": "token-from-a-file-0123\n",
    }
    process = subprocess.Popen(
        [
            NAV,
            "gateway",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--routes",
            str(routes_file(tmp_path, body)),
        ]
        + ["--auth-token-env", "GATEWAY_TOKEN"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        warning = process.stderr.readline()
        assert "unknown key 'enabeld' is ignored (did you mean 'enabled'?)" in warning
        ready = process.stderr.readline()
        port = int(ready.split("127.0.0.1:")[1].split(":")[0])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = chat_pb2_grpc.ChatStub(channel)
            request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="x")])
            # The stripped token is accepted: the call gets past auth to the (dead) provider.
            metadata = (("authorization", "Bearer token-from-a-file-0123"),)
            events = list(stub.ChatStream(request, metadata=metadata, timeout=30))
        assert events[-1].error.code == pb.ERROR_CODE_UPSTREAM_UNAVAILABLE
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=15)[1]
        assert SECRET not in warning + ready + rest and "token-from-a-file" not in rest
        assert "outcome=error:upstream_unavailable" in rest and "HTTP Request" not in rest
    finally:
        process.kill()


def test_an_address_not_on_this_host_is_named(tmp_path: Path) -> None:
    result = run(
        "--routes",
        str(routes_file(tmp_path)),
        "--listen",
        "192.0.2.1:50051",  # TEST-NET-1: never assigned to this host
        env={"CLI_TEST_KEY": SECRET},
    )
    fails_with(result, "cannot listen on 192.0.2.1:50051: Cannot assign requested address")
