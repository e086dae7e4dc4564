"""SIGTERM and SIGHUP during a hung tool: the tool's process group dies, the
session is saved with the cancelled call answered, and `nav agent` exits.

A real `nav agent --demo` in a pseudo-terminal; `NAV_SIM_FAULT` makes the
simulated `nav sandbox list` hang until killed. The tool runs in its own
session (so closing the terminal would not reach it): finding it again goes
through /proc, by the private state dir in its environment.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

from tests.cli.harness import NAV, run_nav

TIMEOUT = 30

pytestmark = [
    pytest.mark.slow,  # each test runs the agent in a terminal
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc"),
]


def processes_with(marker: str) -> list[int]:
    """Pids of our processes whose environment contains `marker`, the agent's own excluded."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ and b"nav-sim" in cmdline:
            found.append(int(entry.name))
    return found


def wait_until(predicate: Callable[[], object], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_ending_signal_during_a_hung_tool_leaves_no_process(tmp_path: Path, signum: int) -> None:
    state = str(tmp_path / "state")
    env = {
        **os.environ,
        "TERM": "dumb",
        "NO_COLOR": "1",
        "NAV_AGENT_STATE_DIR": state,
        "NAV_SIM_FAULT": "sandbox list=hang",
    }
    child = pexpect.spawn(
        NAV,
        ["agent", "--demo", "--session", "hung"],
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 160),
    )
    try:
        child.expect_exact("nav> ")
        time.sleep(0.3)
        child.sendline("list my sandboxes")
        child.expect_exact("→ sandbox_list")
        assert wait_until(lambda: processes_with(state)), "the hung tool never started"
        tools = processes_with(state)

        child.kill(signum)
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)

    assert child.exitstatus == 128 + signum, child.before
    assert wait_until(lambda: not processes_with(state), 5), f"orphans: {tools}"
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    # The user message, the call, and its "cancelled" result were saved.
    assert [(s["name"], s["message_count"]) for s in listed] == [("hung", 3)]
