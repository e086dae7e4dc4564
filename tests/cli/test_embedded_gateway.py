"""The gateway `nav agent --routes` and `--demo` run in process: reachable by this user only.

It listens on a Unix socket in a 0700 gateway state folder, not on a
loopback port that every local process could use to stream with the user's
route key. Another user's process cannot connect (shown as root, by a child
running as `nobody`, with a control run proving that child could connect
were the folders open); a refused state root stops `nav agent` with one
sentence.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from navagent.cli.embedded import EmbeddedGateway, EmbeddedGatewayError
from navagent.core.chat_client import GrpcChatClient
from navagent.core.messages import ChatRequest, UserMessage
from navagent.gateway.routes import RouteTable, parse_routes
from tests.cli.harness import run_nav

NOBODY = 65534
CONNECT = "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])"


@pytest.fixture
def shared_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A `$TMPDIR` other users can pass through, as `/tmp` is (pytest's own folders are 0700)."""
    base = Path(tempfile.mkdtemp(prefix="nav-embedded-"))
    os.chmod(base, 0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def routes_to_nowhere() -> RouteTable:
    return parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "agent",
                    "endpoint": "http://127.0.0.1:9",
                    "model": "m",
                    "protocols": ["openai_chat_completions"],
                    "api_key": "sk-test-embedded-key",
                }
            ]
        },
        source="test",
        environ={},
    )


@pytest.fixture
async def gateway(shared_tmp: Path) -> AsyncIterator[EmbeddedGateway]:
    async with EmbeddedGateway(routes_to_nowhere()) as running:
        yield running


async def test_it_listens_on_a_socket_in_a_private_folder_not_on_a_port(
    gateway: EmbeddedGateway, shared_tmp: Path
) -> None:
    assert gateway.address.startswith("unix:")
    socket_path = Path(gateway.address.removeprefix("unix:"))
    root = shared_tmp / f"nav-gateway-{os.getuid()}"
    assert socket_path.parent.parent == root
    for folder in (root, socket_path.parent):
        info = folder.lstat()
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
        assert info.st_uid == os.geteuid()
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    async with GrpcChatClient(gateway.address) as client:  # how `nav agent` talks to it
        request = ChatRequest(messages=(UserMessage(content="hi"),))
        events = [event async for event in client.stream(request)]
    assert events, "the agent's client reached the gateway"
    folder = socket_path.parent
    await gateway.aclose()
    assert not folder.exists(), "the folder (and the socket) go with the gateway"


def _connect_as_nobody(socket_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/usr/bin/python3", "-c", CONNECT, str(socket_path)],
        user=NOBODY,
        group=NOBODY,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another user")
@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="needs /usr/bin/python3")
async def test_another_users_process_cannot_connect(
    gateway: EmbeddedGateway, shared_tmp: Path
) -> None:
    socket_path = Path(gateway.address.removeprefix("unix:"))
    refused = _connect_as_nobody(socket_path)
    assert refused.returncode != 0 and "PermissionError" in refused.stderr
    # Control: the same child connects once the folders are opened up, so
    # the refusal above is the folders' doing, not the child's.
    for path, mode in ((socket_path.parent.parent, 0o711), (socket_path.parent, 0o711)):
        os.chmod(path, mode)
    os.chmod(socket_path, 0o777)
    try:
        assert _connect_as_nobody(socket_path).returncode == 0
    finally:
        os.chmod(socket_path.parent, 0o700)
        os.chmod(socket_path.parent.parent, 0o700)


async def test_a_refused_state_root_is_one_clear_error(shared_tmp: Path) -> None:
    elsewhere = shared_tmp / "elsewhere"
    elsewhere.mkdir()
    (shared_tmp / f"nav-gateway-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(EmbeddedGatewayError, match="is a symbolic link") as refused:
        async with EmbeddedGateway(routes_to_nowhere()):
            pass
    assert str(refused.value).startswith("cannot start the in-process gateway: refusing")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow
def test_nav_agent_demo_stops_with_one_sentence_on_a_planted_root(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "123-abc").mkdir(parents=True)
    (shared / f"nav-gateway-{os.getuid()}").symlink_to(elsewhere)
    env = {
        **os.environ,
        "TMPDIR": str(shared),
        "NAV_AGENT_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    result = run_nav("agent", "--demo", "-p", "list my sandboxes", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("nav agent: cannot start the in-process gateway")
    assert "is a symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert (elsewhere / "123-abc").is_dir(), "the sweep never follows the link"
