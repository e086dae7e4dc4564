"""`nav gateway reload` against a real `nav gateway serve` process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from tests.cli.test_gateway_cmd import NAV, SECRET

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

ROUTE = (
    "  - routing_hint: {hint}\n    endpoint: http://127.0.0.1:9\n    model: m\n"
    "    protocols: [openai_chat_completions]\n    api_key_env: CLI_TEST_KEY\n"
)


def chat(port: int, hint: str) -> grpc.RpcError | pb.ChatStreamEvent:
    """The call's last event, or the status it ended with."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        request = pb.ChatStreamRequest(
            messages=[pb.ChatMessage(role="user", content="hi")], routing_hint=hint
        )
        try:
            return list(chat_pb2_grpc.ChatStub(channel).ChatStream(request, timeout=20))[-1]
        except grpc.RpcError as exc:
            return exc


def reload(pid_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NAV, "gateway", "reload", "--pid-file", str(pid_file)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def health(port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NAV, "gateway", "health", "--address", f"127.0.0.1:{port}", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=30,
    )


def wait_for_line(stream: object, phrase: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()  # type: ignore[attr-defined]
        if phrase in line:
            return str(line)
    raise AssertionError(f"no log line with {phrase!r}")


def test_reload_swaps_routes_of_a_running_gateway_and_keeps_them_on_a_bad_file(
    tmp_path: Path,
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text("routes:\n" + ROUTE.format(hint="agent"), encoding="utf-8")
    pid_file = tmp_path / "gateway.pid"
    process = subprocess.Popen(
        [NAV, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CLI_TEST_KEY": SECRET, "NAV_GATEWAY_PID_FILE": str(pid_file)},
    )
    try:
        assert process.stderr is not None
        ready = wait_for_line(process.stderr, "gateway ready on")
        port = int(ready.split("127.0.0.1:")[1].split(":")[0])
        assert pid_file.read_text().strip() == str(process.pid)
        healthy = health(port)
        assert healthy.returncode == 0 and "SERVING" in healthy.stdout
        before = chat(port, "fast")
        assert isinstance(before, grpc.RpcError)
        assert before.code() == grpc.StatusCode.FAILED_PRECONDITION

        routes.write_text(
            "routes:\n" + ROUTE.format(hint="agent") + ROUTE.format(hint="fast"), encoding="utf-8"
        )
        result = reload(pid_file)
        assert result.returncode == 0 and f"gateway {process.pid}" in result.stdout
        assert "2 route(s)" in wait_for_line(process.stderr, "routes reloaded from")
        after = chat(port, "fast")  # routed now: the provider port refuses, an error event
        assert isinstance(after, pb.ChatStreamEvent) and after.WhichOneof("event") == "error"

        routes.write_text("routes: [", encoding="utf-8")
        assert reload(pid_file).returncode == 0
        failed = wait_for_line(process.stderr, "reload failed")
        assert "keeping the current routes" in failed and "not valid YAML" in failed
        still = chat(port, "fast")
        assert isinstance(still, pb.ChatStreamEvent) and still.WhichOneof("event") == "error"

        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=15)[1]
        assert process.returncode == 0 and SECRET not in ready + rest
        assert not pid_file.exists(), "the pid file goes when the gateway stops"
        gone = health(port)
        assert gone.returncode == 1 and f"127.0.0.1:{port}: UNAVAILABLE" in gone.stderr
    finally:
        process.kill()


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (None, "cannot read pid file"),
        ("abc", "does not hold a gateway's pid"),
        ("0", "does not hold a gateway's pid"),
        ("999999999", "the gateway is not running"),
    ],
)
def test_reload_with_a_bad_pid_file_says_why(
    tmp_path: Path, content: str | None, phrase: str
) -> None:
    pid_file = tmp_path / "gateway.pid"
    if content is not None:
        pid_file.write_text(content)
    result = reload(pid_file)
    assert result.returncode == 2 and phrase in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_with_an_unusable_callers_file_says_why(tmp_path: Path) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text("routes:\n" + ROUTE.format(hint="agent"), encoding="utf-8")
    callers = tmp_path / "callers.yaml"
    callers.write_text(
        f"callers:\n  - name: ci\n    token_hash: {SECRET}\n    routing_hints: [agent]\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [NAV, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes)]
        + ["--callers", str(callers), "--pid-file", str(tmp_path / "gateway.pid")],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "CLI_TEST_KEY": SECRET},
    )
    assert result.returncode == 2
    assert f"{callers}: caller 1 ('ci'): field 'token_hash': must be sha256:" in result.stderr
    assert SECRET not in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "gateway.pid").exists()
