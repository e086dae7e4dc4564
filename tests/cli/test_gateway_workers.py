"""`nav gateway serve --workers N`: processes sharing one port, supervised."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from tests.gateway.fault_upstream import BEHAVIOURS, SECRET, Connection, FaultUpstream

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

NAV = str(Path(sys.executable).with_name("nav"))
REQUEST = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hi")])


async def _slow_ok(conn: Connection) -> None:
    """A complete answer spread over about 1.5 s."""
    await conn.head()
    for piece in conn.text("one ", "two ", "three ", "four ", "five").events:
        await conn.chunk(piece)
        await asyncio.sleep(0.1)
    await conn.end()


BEHAVIOURS.setdefault("slow_ok", _slow_ok)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    """The fault provider, served from a thread of its own."""
    server = FaultUpstream()
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    yield server
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


class Served:
    """A running `nav gateway serve` and the lines it has logged."""

    def __init__(self, process: subprocess.Popen[str], port: int, lines: list[str]) -> None:
        self.process = process
        self.port = port
        self.lines = lines

    def workers(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids = [int(pid) for pid in children.read_text(encoding="ascii").split()]
        return [pid for pid in pids if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]

    def listeners(self) -> set[int]:
        """Pids with a socket listening on the gateway's port."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):  # gRPC listens on v4-mapped v6
            for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == self.port:
                    inodes.add(fields[9])
        found = set()
        for pid in self.workers():
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    found.add(pid)
        return found

    def call(self, hint: str = "agent") -> str:
        """One call on a fresh connection; the kind of its last event."""
        request = pb.ChatStreamRequest()
        request.CopyFrom(REQUEST)
        request.routing_hint = hint
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            events = list(chat_pb2_grpc.ChatStub(channel).ChatStream(request, timeout=20))
        return events[-1].WhichOneof("event") or ""

    def wait_for_line(self, phrase: str, timeout_s: float = 20) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in self.lines:
                if phrase in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no log line with {phrase!r} in:\n" + "".join(self.lines))


@pytest.fixture
def serve(upstream: FaultUpstream, tmp_path: Path) -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> Served:
        routes = tmp_path / "routes.yaml"
        routes.write_text(
            "routes:\n"
            + "".join(
                f"  - routing_hint: {hint}\n    endpoint: {upstream.endpoint(fault)}\n"
                "    model: m\n    protocols: [openai_chat_completions]\n"
                "    api_key_env: WORKERS_TEST_KEY\n"
                for hint, fault in (("agent", "ok"), ("slow", "slow_ok"))
            ),
            encoding="utf-8",
        )
        process = subprocess.Popen(
            [NAV, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes), *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "WORKERS_TEST_KEY": SECRET},
        )
        started.append(process)
        lines: list[str] = []
        assert process.stderr is not None
        stderr = process.stderr
        reader = threading.Thread(target=lambda: lines.extend(iter(stderr.readline, "")))
        reader.daemon = True
        reader.start()
        served = Served(process, 0, lines)
        ready = served.wait_for_line("gateway ready on ")
        served.port = int(ready.split("127.0.0.1:")[1].split(":")[0])
        return served

    yield start
    for process in started:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        pids = children.read_text(encoding="ascii").split() if children.exists() else []
        process.kill()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        process.wait(10)
        time.sleep(0.1)  # the reader thread sees the end of stderr
        if process.stderr is not None:
            process.stderr.close()


def test_workers_share_the_port_and_survive_one_being_killed(serve) -> None:
    served: Served = serve("--workers", "2")
    ready = served.wait_for_line("gateway ready on ")
    assert "2 workers" in ready and f"; nav-agent {version('nav-agent')}" in ready
    first = served.workers()
    assert len(first) == 2 and served.listeners() == set(first)
    assert [served.call() for _ in range(6)] == ["message"] * 6

    os.kill(first[0], signal.SIGKILL)
    restart = served.wait_for_line("killed by SIGKILL")
    assert f"(pid {first[0]})" in restart and "restarting it" in restart
    # Once the dead worker's socket is gone, new calls reach the survivor (connections
    # already queued on a killed worker's socket are reset: the kernel's doing).
    assert [served.call() for _ in range(6)] == ["message"] * 6
    deadline = time.monotonic() + 20
    while len(served.listeners()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    now = served.workers()
    assert first[0] not in now and first[1] in now and served.listeners() == set(now)
    assert [served.call() for _ in range(6)] == ["message"] * 6
    assert SECRET not in "".join(served.lines)


def test_sigterm_drains_every_worker(serve) -> None:
    served: Served = serve("--workers", "2", "--grace-period", "8")
    workers = served.workers()
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        request = pb.ChatStreamRequest(messages=REQUEST.messages, routing_hint="slow")
        calls = [stub.ChatStream(request, timeout=20) for _ in range(4)]
        firsts = [next(call) for call in calls]  # every stream is under way
        assert all(event.WhichOneof("event") for event in firsts)
        started = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        endings = [[e.WhichOneof("event") for e in call][-1] for call in calls]
    assert endings == ["message"] * 4  # in-flight streams finished, none was cut
    assert served.process.wait(20) == 0 and time.monotonic() - started < 8
    served.wait_for_line("SIGTERM: draining the workers")
    for pid in workers:  # the supervisor waited for each worker
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert any("gateway stopped" in line for line in served.lines)


def test_one_worker_runs_without_a_supervisor(serve) -> None:
    served: Served = serve("--workers", "1")
    assert served.workers() == [] and "workers" not in served.wait_for_line("gateway ready on ")
    assert served.call() == "message"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample on the metrics page, by name and labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
        text = page.read().decode("utf-8")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.parametrize("workers", ["2", "1"])
def test_metrics_count_what_the_client_did_summed_over_workers(serve, workers: str) -> None:
    metrics_port = free_port()
    served: Served = serve("--workers", workers, "--metrics-listen", f"127.0.0.1:{metrics_port}")
    oks, unknown = 10, 3
    assert [served.call() for _ in range(oks)] == ["message"] * oks
    for _ in range(unknown):
        with pytest.raises(grpc.RpcError) as refused:
            served.call("no-such-hint")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    samples = scrape(metrics_port)

    def value(name: str, **labels: str) -> float:
        return samples.get(("nav_gateway_" + name, frozenset(labels.items())), 0.0)

    route = {"route": "agent#1"}
    assert value("streams_started_total", hint="agent") == oks
    assert value("streams_rejected_total", reason="no_route") == unknown
    finished = dict(hint="agent", protocol="openai_chat_completions", outcome="ok", **route)
    assert value("streams_finished_total", **finished) == oks
    assert value("active_streams") == 0
    assert value("tokens_total", kind="input", **route) == 11 * oks
    assert value("tokens_total", kind="output", **route) == 2 * oks
    assert value("upstream_attempts_total", status="200", **route) == oks
    assert value("time_to_first_delta_seconds_count", **route) == oks
    assert value("stream_duration_seconds_count", **route) == oks
    # "no-such-hint" is no route's hint: it never becomes a label value.
    assert not any("no-such-hint" in str(labels) for _name, labels in samples)
