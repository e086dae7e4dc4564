"""`nav agent --demo` end to end in a pseudo-terminal, the way a person uses it.

TERM=dumb makes prompt_toolkit print plain text (no cursor movement) and rich
drop colours and the spinner, so the expectations match words, not escape
codes. Keys are sent only after the prompt is up and has had a moment to put
the terminal in raw mode: a Ctrl-D typed while the terminal is still cooked
is swallowed by the line discipline.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pexpect
import pytest

from tests.cli.harness import NAV

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

TIMEOUT = 30
SETTLE_S = 0.3


def wait_for_prompt(child: pexpect.spawn) -> None:
    child.expect_exact("nav> ")
    time.sleep(SETTLE_S)


@pytest.fixture
def child(tmp_path: Path):
    env = {
        **os.environ,
        "TERM": "dumb",
        "NO_COLOR": "1",
        "NAV_AGENT_STATE_DIR": str(tmp_path / "state"),
        "COLUMNS": "160",
    }
    env.pop("NAV_SIM_FAULT", None)
    process = pexpect.spawn(
        NAV,
        ["agent", "--demo"],
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 160),
    )
    yield process
    if process.isalive():
        process.terminate(force=True)


def test_demo_in_a_terminal_lists_cancels_and_exits_0(child) -> None:
    child.expect_exact("a simulation")
    wait_for_prompt(child)

    child.sendline("list my sandboxes")
    child.expect_exact("→ sandbox_list")
    child.expect(r"dev-box \(Ready\), gpu-trainer \(Error\), py-worker \(Provisioning\)")
    wait_for_prompt(child)

    # A turn that streams a little and then stalls until cancelled.
    child.sendline("hello [sim-fault: stall after=6]")
    child.expect_exact("Hello!")
    time.sleep(SETTLE_S)
    child.sendintr()
    child.expect_exact("[interrupted")
    wait_for_prompt(child)

    # The conversation goes on, with the interrupted answer marked in the history.
    child.sendline("/history")
    child.expect_exact("[interrupted by the user]")
    wait_for_prompt(child)

    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
