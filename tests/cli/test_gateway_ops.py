"""Operating `nav gateway serve` as an SRE would: restarts, signals, pid files, watchdog, limits.

Every test runs real gateway processes in a session of their own and kills
the whole session when done, so no worker outlives a test.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway.callers import hash_token
from tests.certs import make_pki
from tests.cli.test_gateway_workers import NAV, free_port, scrape, upstream
from tests.gateway.fault_upstream import SECRET, FaultUpstream
from tests.gateway.test_pid_file import start_fake_gateway

__all__ = ["upstream"]  # the module-scoped fault provider fixture, shared

KEY_ENV = "OPS_TEST_KEY"


class Gateway:
    """A `nav gateway serve` process, its log lines, and its port."""

    def __init__(self, process: subprocess.Popen[str], lines: list[str]) -> None:
        self.process = process
        self.lines = lines
        self.port = 0

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def wait_for(self, phrase: str, timeout_s: float = 30, after: int = 0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in self.lines[after:]:
                if phrase in line:
                    return line
            if self.process.poll() is not None and not any(phrase in x for x in self.lines):
                time.sleep(0.2)  # the reader's last lines
                if not any(phrase in x for x in self.lines[after:]):
                    break
            time.sleep(0.05)
        raise AssertionError(f"no log line with {phrase!r} in:\n{self.log}")

    def ready(self) -> Gateway:
        line = self.wait_for("gateway ready on ")
        self.port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))  # type: ignore[union-attr]
        return self

    def workers(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids = [int(pid) for pid in children.read_text(encoding="ascii").split()]
        return [p for p in pids if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]

    def call(self, hint: str = "agent", token: str | None = None) -> str:
        """One call on a fresh connection: its last event's kind, or its status code's name."""
        request = pb.ChatStreamRequest(
            messages=[pb.ChatMessage(role="user", content="hi")], routing_hint=hint
        )
        metadata = (("authorization", f"Bearer {token}"),) if token else None
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            try:
                stub = chat_pb2_grpc.ChatStub(channel)
                events = list(stub.ChatStream(request, timeout=15, metadata=metadata))
            except grpc.RpcError as exc:
                return str(exc.code().name)
        return events[-1].WhichOneof("event") or ""


def health_status(port: int, timeout: float = 1.0) -> str:
    """The health answer on a fresh connection, or the failure's code."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=timeout
            )
        except grpc.RpcError as exc:
            return str(exc.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def routes_text(upstream: FaultUpstream, *hints: str) -> str:
    return "routes:\n" + "".join(
        f"  - routing_hint: {hint}\n    endpoint: {upstream.endpoint('ok')}\n"
        f"    model: m\n    protocols: [openai_chat_completions]\n    api_key_env: {KEY_ENV}\n"
        for hint in hints
    )


@pytest.fixture
def start(tmp_path: Path) -> Iterator[object]:
    """Start gateways; every one (and its workers) is killed at the end."""
    started: list[subprocess.Popen[str]] = []

    def run(*args: str, env: dict[str, str] | None = None, wait: bool = True) -> Gateway:
        process = subprocess.Popen(
            [NAV, "gateway", "serve", *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, KEY_ENV: SECRET, "TMPDIR": str(tmp_path), **(env or {})},
            start_new_session=True,
        )
        started.append(process)
        lines: list[str] = []
        stderr = process.stderr
        assert stderr is not None
        threading.Thread(
            target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True
        ).start()
        gateway = Gateway(process, lines)
        return gateway.ready() if wait else gateway

    yield run
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def test_a_restarted_worker_serves_the_accepted_routes_not_the_edited_file(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    pid_file = tmp_path / "gw.pid"
    gateway: Gateway = start(
        "--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", "2",
        "--pid-file", str(pid_file),
    )  # fmt: skip
    # Edited without a reload: a broken file, then a different one.
    routes.write_text("routes: [ {broken\n", encoding="utf-8")
    for round_, edit in enumerate(("broken", routes_text(upstream, "other"))):
        if round_:
            routes.write_text(edit, encoding="utf-8")
        victim = gateway.workers()[0]
        mark = len(gateway.lines)
        os.kill(victim, signal.SIGKILL)
        gateway.wait_for("is serving", after=mark)
        assert victim not in gateway.workers() and len(gateway.workers()) == 2
        # Every connection, whichever worker it lands on, gets the routes the gateway accepted.
        assert {gateway.call("agent") for _ in range(10)} == {"message"}
        assert {gateway.call("other") for _ in range(4)} == {"FAILED_PRECONDITION"}
    # A reload is what takes the file, in every worker at once.
    mark = len(gateway.lines)
    subprocess.run([NAV, "gateway", "reload", "--pid-file", str(pid_file)], check=True, timeout=30)
    gateway.wait_for("routes reloaded from", after=mark)
    deadline = time.monotonic() + 10
    while gateway.call("other") != "message" and time.monotonic() < deadline:
        time.sleep(0.1)  # each worker takes it from its pipe within a moment
    assert {gateway.call("other") for _ in range(10)} == {"message"}
    assert {gateway.call("agent") for _ in range(4)} == {"FAILED_PRECONDITION"}
    assert "Traceback" not in gateway.log and SECRET not in gateway.log


def test_a_refused_reload_then_a_dead_worker_does_not_crash_loop(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    gateway: Gateway = start(
        "--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", "2",
    )  # fmt: skip
    routes.write_text("routes:\n  - routing_hint: agent\n", encoding="utf-8")
    os.kill(gateway.process.pid, signal.SIGHUP)
    gateway.wait_for("reload failed, keeping the current routes")
    mark = len(gateway.lines)
    os.kill(gateway.workers()[0], signal.SIGKILL)
    gateway.wait_for("is serving", after=mark)
    time.sleep(1.5)  # a crash loop would show within this
    assert sum("restarting it" in line for line in gateway.lines[mark:]) == 1
    assert health_status(gateway.port) == "SERVING"
    assert {gateway.call() for _ in range(8)} == {"message"}
    assert "Traceback" not in gateway.log and "BrokenPipeError" not in gateway.log


def test_sighup_as_soon_as_the_pid_file_appears_reloads_and_never_kills(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    for workers in ("2", "1"):
        pid_file = tmp_path / f"gw-{workers}.pid"
        gateway: Gateway = start(
            "--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", workers,
            "--pid-file", str(pid_file), wait=False,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not pid_file.exists():
            assert time.monotonic() < deadline and gateway.process.poll() is None, gateway.log
            time.sleep(0.005)
        os.kill(int(pid_file.read_text()), signal.SIGHUP)
        gateway.ready()
        gateway.wait_for("routes reloaded from")
        assert gateway.process.poll() is None
        if workers == "2":
            # A SIGHUP to the whole process group while a worker restarts kills nothing.
            mark = len(gateway.lines)
            os.kill(gateway.workers()[0], signal.SIGKILL)
            until = time.monotonic() + 3
            while time.monotonic() < until:
                os.killpg(gateway.process.pid, signal.SIGHUP)
                time.sleep(0.05)
            gateway.wait_for("is serving", after=mark)
            assert sum("restarting it" in line for line in gateway.lines[mark:]) == 1
            assert len(gateway.workers()) == 2
        assert gateway.call() == "message"


def test_a_second_gateway_on_the_port_or_pid_file_is_refused_and_leaves_the_first_alone(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    pid_file = tmp_path / "gw.pid"
    port = free_port()
    first: Gateway = start(
        "--listen", f"127.0.0.1:{port}", "--routes", str(routes), "--workers", "2",
        "--pid-file", str(pid_file),
    )  # fmt: skip
    for args in (
        ("--listen", f"127.0.0.1:{port}", "--pid-file", str(tmp_path / "other.pid")),
        ("--listen", f"127.0.0.1:{port}", "--pid-file", str(pid_file)),
        ("--listen", f"127.0.0.1:{free_port()}", "--pid-file", str(pid_file)),
    ):
        second = subprocess.run(
            [NAV, "gateway", "serve", "--routes", str(routes), "--workers", "2", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, KEY_ENV: SECRET, "TMPDIR": str(tmp_path)},
        )
        assert second.returncode == 2, second.stderr
        assert "address already in use" in second.stderr or "names gateway" in second.stderr
        assert "Traceback" not in second.stderr
        assert pid_file.read_text().strip() == str(first.process.pid)
    mark = len(first.lines)
    reloaded = subprocess.run(
        [NAV, "gateway", "reload", "--pid-file", str(pid_file)], capture_output=True, timeout=30
    )
    assert reloaded.returncode == 0
    first.wait_for("routes reloaded from", after=mark)
    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(30) == 0
    assert not pid_file.exists(), "the gateway removes the pid file it wrote"


def test_two_gateways_started_together_on_one_port_do_not_both_come_up(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    port = free_port()
    args = ("--listen", f"127.0.0.1:{port}", "--routes", str(routes), "--workers", "2")
    pair: list[Gateway] = [start(*args, wait=False), start(*args, wait=False)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [g for g in pair if "gateway ready on" in g.log or g.process.poll() is not None]
        if len(done) == 2:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    up = [g for g in pair if g.process.poll() is None]
    assert len(up) == 1, [g.log for g in pair]
    (down,) = [g for g in pair if g is not up[0]]
    assert down.process.returncode == 2 and "address already in use" in down.log


@pytest.mark.parametrize("held", [False, True], ids=["unlocked", "held-by-another"])
def test_reload_never_signals_a_decoy_whose_arguments_say_gateway_serve(
    tmp_path: Path, held: bool
) -> None:
    """Only the process holding the pid file's lock is signalled, whatever others' argv say."""
    decoy = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "gateway", "serve"]
    )
    holder: subprocess.Popen[str] | None = None
    try:
        pid_file = tmp_path / "gw.pid"
        if held:  # a real lock holder, but the file names the decoy
            holder = start_fake_gateway(pid_file)
            with open(pid_file, "r+", encoding="utf-8") as same_file:
                same_file.write(f"{decoy.pid}\n")
        else:
            pid_file.write_text(f"{decoy.pid}\n")
        result = subprocess.run(
            [NAV, "gateway", "reload", "--pid-file", str(pid_file)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 2, result.stdout
        assert f"process {decoy.pid}" in result.stderr
        assert "nothing was signalled" in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        time.sleep(0.2)
        assert decoy.poll() is None, "the decoy was signalled"
        assert holder is None or holder.poll() is None, "the lock holder was signalled"
    finally:
        for process in (decoy, holder):
            if process is not None:
                process.kill()
                process.wait(10)
                if process.stdout is not None:
                    process.stdout.close()


@pytest.mark.slow
def test_a_stopped_worker_is_replaced_and_health_says_not_serving_meanwhile(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    gateway: Gateway = start(
        "--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", "2",
        "--worker-timeout", "2",
    )  # fmt: skip
    victim = gateway.workers()[0]
    mark = len(gateway.lines)
    os.kill(victim, signal.SIGSTOP)
    seen: list[str] = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        seen.append(health_status(gateway.port, timeout=0.5))
        if any("is serving" in line for line in gateway.lines[mark:]):
            break
        time.sleep(0.05)
    killed = gateway.wait_for("sent no heartbeat", after=mark)
    assert f"(pid {victim})" in killed and "killing it" in killed
    assert "NOT_SERVING" in seen, seen
    assert victim not in gateway.workers() and len(gateway.workers()) == 2
    gateway.wait_for("health says SERVING", after=mark)
    assert [health_status(gateway.port, timeout=5) for _ in range(10)] == ["SERVING"] * 10
    assert {gateway.call() for _ in range(6)} == {"message"}


def test_absurd_worker_counts_are_refused_and_the_default_follows_the_usable_cpus(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    started = time.monotonic()
    refused = subprocess.run(
        [NAV, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes),
         "--workers", "1000"],
        capture_output=True, text=True, timeout=60, env={**os.environ, KEY_ENV: SECRET},
    )  # fmt: skip
    assert refused.returncode == 2 and "--workers 1000 is more than" in refused.stderr
    assert time.monotonic() - started < 30 and "Traceback" not in refused.stderr
    # Pinned to one CPU, the default is one worker: a single process, no supervisor.
    process = subprocess.Popen(
        ["taskset", "-c", "0", NAV, "gateway", "serve", "--listen", "127.0.0.1:0",
         "--routes", str(routes)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: SECRET},
        start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = ""
        while "gateway ready on" not in line:
            line = process.stderr.readline()
            assert line, "the gateway ended"
        assert "workers" not in line
        assert not Gateway(process, []).workers()
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        process.stderr.close()  # type: ignore[union-attr]


def test_every_refusal_is_counted_once_by_reason_and_never_as_started(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent", "fast"), encoding="utf-8")
    token = "ops-test-token-0123456789"
    callers = tmp_path / "callers.yaml"
    callers.write_text(
        "callers:\n  - name: ci\n"
        f"    token_hash: {hash_token(token)}\n    routing_hints: [agent, nowhere]\n",
        encoding="utf-8",
    )
    metrics_port = free_port()
    gateway: Gateway = start(
        "--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", "2",
        "--callers", str(callers), "--metrics-listen", f"127.0.0.1:{metrics_port}",
    )  # fmt: skip
    assert [gateway.call(token=token) for _ in range(3)] == ["message"] * 3
    assert [gateway.call(token="wrong-token-0123456789") for _ in range(4)] == [
        "UNAUTHENTICATED"
    ] * 4
    assert [gateway.call("fast", token=token) for _ in range(2)] == ["PERMISSION_DENIED"] * 2
    assert gateway.call("nowhere", token=token) == "FAILED_PRECONDITION"  # in scope, unserved
    # A call's metrics are recorded just after its client has the status: wait for all.
    deadline = time.monotonic() + 10
    while True:
        samples = scrape(metrics_port)
        rejected = sum(v for (name, _), v in samples.items() if "rejected_total" in name)
        if rejected >= 7 or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    def value(name: str, **labels: str) -> float:
        return samples.get(("nav_gateway_" + name, frozenset(labels.items())), 0.0)

    assert value("streams_rejected_total", reason="unauthenticated") == 4
    assert value("streams_rejected_total", reason="permission_denied") == 2
    assert value("streams_rejected_total", reason="no_route") == 1
    started = sum(v for (name, _), v in samples.items() if name.endswith("streams_started_total"))
    finished = sum(v for (name, _), v in samples.items() if name.endswith("streams_finished_total"))
    assert started == finished == 3


def test_environment_names_match_the_options_and_unknown_ones_are_warned_about(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    gateway: Gateway = start(
        "--routes", str(routes), "--workers", "1",
        env={
            "NAV_GATEWAY_LISTEN": "127.0.0.1:0",
            "NAV_GATEWAY_GRACE_PERIOD": "nonsense",
        },
        wait=False,
    )  # fmt: skip
    assert gateway.process.wait(30) == 2
    gateway.wait_for("invalid setting grace_period: Input should be a valid number")
    gateway = start(
        "--routes", str(routes), "--workers", "1",
        env={
            "NAV_GATEWAY_LISTEN": "127.0.0.1:0",
            "NAV_GATEWAY_IDLE_TIMEOUT_S": "5",
            "NAV_GATEWAY_GRACE_PERIODS": "1",
        },
    )  # fmt: skip
    assert "NAV_GATEWAY_GRACE_PERIODS is not a gateway setting" in gateway.log
    assert "did you mean NAV_GATEWAY_GRACE_PERIOD?" in gateway.log
    assert "NAV_GATEWAY_IDLE_TIMEOUT_S is deprecated; use NAV_GATEWAY_IDLE_TIMEOUT" in gateway.log


def test_a_dead_gateways_files_are_removed_by_the_next_one(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    args = ("--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", "2")
    metrics = ("--metrics-listen", f"127.0.0.1:{free_port()}")
    first: Gateway = start(*args, *metrics)
    root = tmp_path / f"nav-gateway-{os.getuid()}"  # one folder per user, kept
    left = set(root.rglob("*"))
    assert any("slots" in p.name for p in left) and any("metrics" in p.name for p in left)
    os.killpg(first.process.pid, signal.SIGKILL)  # no chance to clean up
    first.process.wait(10)
    time.sleep(0.5)
    assert all(p.exists() for p in left)
    second: Gateway = start(*args)
    assert not any(p.exists() for p in left), "the dead gateway's files are gone"
    second.process.send_signal(signal.SIGTERM)
    assert second.process.wait(30) == 0
    assert not [p for p in tmp_path.rglob("*") if "slots" in p.name or "metrics-" in p.name]


def test_health_checks_a_tls_gateway_directly_and_through_the_health_port(
    start, upstream: FaultUpstream, tmp_path: Path
) -> None:
    certs = make_pki(tmp_path)
    if certs is None:
        pytest.skip("neither cryptography nor openssl is available to make certificates")
    routes = tmp_path / "routes.yaml"
    routes.write_text(routes_text(upstream, "agent"), encoding="utf-8")
    health_port = free_port()
    gateway: Gateway = start(
        "--listen", "127.0.0.1:0", "--routes", str(routes), "--workers", "2",
        "--tls-cert", str(certs.server_cert), "--tls-key", str(certs.server_key),
        "--health-listen", f"127.0.0.1:{health_port}",
    )  # fmt: skip

    def health(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [NAV, "gateway", "health", "--timeout", "5", *args],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    tls = health("--address", f"127.0.0.1:{gateway.port}", "--tls-ca", str(certs.ca))  # fmt: skip
    assert tls.returncode == 0 and "SERVING" in tls.stdout, tls.stderr
    assert health("--address", f"127.0.0.1:{gateway.port}").returncode == 1
    plain = health("--address", f"127.0.0.1:{health_port}")
    assert plain.returncode == 0 and "SERVING" in plain.stdout, plain.stderr
    # The health port serves health only, never Chat.
    with socket.create_connection(("127.0.0.1", health_port), timeout=5):
        pass
    probe = Gateway(gateway.process, [])
    probe.port = health_port
    assert probe.call() == "UNIMPLEMENTED"
