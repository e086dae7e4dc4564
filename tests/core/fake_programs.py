"""Tiny fake executables for subprocess mechanics tests (timeouts, caps, signals).

A fake is a Python script whose shebang is this interpreter, so it starts
like any binary would, through exec, with no shell in between.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path


def write_program(directory: Path, body: str, *, name: str = "nav", mode: int = 0o755) -> Path:
    """Write an executable Python script running `body` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    source = f"#!{sys.executable}\n{textwrap.dedent(body).lstrip()}"
    path.write_text(source, encoding="utf-8")
    path.chmod(mode)
    return path


def pid_gone(pid: int) -> bool:
    """True when `pid` no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Poll `condition` until it holds or `timeout_s` passes; return its last value."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


SPAWN_GRANDCHILD = """
    import os, pathlib, signal, subprocess, sys, time
    # The grandchild ignores SIGTERM, so only the SIGKILL to the group ends it.
    grandchild = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(30)"])
    if os.environ.get("IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("working", flush=True)
    pidfile = pathlib.Path(os.environ["PIDFILE"])
    pidfile.with_suffix(".tmp").write_text(f"{os.getpid()} {grandchild.pid}")
    pidfile.with_suffix(".tmp").replace(pidfile)
    time.sleep(30)
"""
"""A `nav` that starts a grandchild, reports both pids in $PIDFILE, and hangs."""
