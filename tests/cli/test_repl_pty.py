"""The real REPL in a pseudo-terminal: markdown rendering, typing mid-turn, tool order.

The markdown test runs a colour terminal (TERM=xterm-256color) smaller than
the answer and replays everything the program wrote through a terminal
emulator (pyte) with scrollback: what is left on screen and in the history
is what a person would see and scroll back to.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections import Counter
from pathlib import Path

import pexpect
import pytest

from navagent.core.messages import ToolResultMessage, UserMessage
from navagent.core.sessions import SessionStore
from tests.cli.harness import NAV, scrollback

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

TIMEOUT = 30
SETTLE_S = 0.3
ROOT = Path(__file__).resolve().parents[2]

ANSWER = """## Sandboxes

You have **three** sandboxes; `gpu-trainer` is failing:

| name | phase | age |
|---|---|---|
| dev-box | Ready | 3d |
| gpu-trainer | Error | 1d |
| py-worker | Provisioning | 5m |

To see why, run:

```bash
nav sandbox logs gpu-trainer -n 20
```

1. Check the image name.
2. Check the **GPU** quota.

That is all for now.
"""


def wait_for_prompt(child: pexpect.spawn) -> None:
    child.expect_exact("nav> ")
    time.sleep(SETTLE_S)


def test_streamed_markdown_renders_once_with_no_raw_syntax_left(tmp_path: Path) -> None:
    answer = tmp_path / "answer.md"
    answer.write_text(ANSWER, encoding="utf-8")
    columns, rows = 80, 12  # shorter than the answer: it must scroll cleanly
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tests.cli.scripted_repl", str(answer)],
        env=env,
        cwd=ROOT,
        timeout=TIMEOUT,
        dimensions=(rows, columns),
    )
    captured = io.BytesIO()
    child.logfile_read = captured
    try:
        child.expect_exact(b"nav>")  # a colour prompt moves the cursor instead of a space
        time.sleep(SETTLE_S)
        child.sendline("how are my sandboxes?")
        child.expect_exact(b"tokens in")
        child.expect_exact(b"nav>")
        time.sleep(SETTLE_S)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    lines = scrollback(captured.getvalue(), columns, rows)
    text = "\n".join(lines)

    assert "|---|" not in text and "```" not in text and "**" not in text and "## " not in text
    assert any("gpu-trainer" in line and "Error" in line and "|" not in line for line in lines)
    assert any("nav sandbox logs gpu-trainer -n 20" in line for line in lines)
    assert any(line.strip().startswith("1 Check the image name.") for line in lines)
    # Nothing drawn twice: every non-blank line of the answer is there exactly once.
    counts = Counter(line for line in lines if line.strip())
    repeated = {line: n for line, n in counts.items() if n > 1}
    assert not repeated, repeated


@pytest.fixture
def demo_env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "TERM": "dumb",
        "NO_COLOR": "1",
        "NAV_AGENT_STATE_DIR": str(tmp_path / "state"),
    }
    env.pop("NAV_SIM_FAULT", None)
    return env


def spawn_demo(env: dict[str, str], *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        NAV,
        ["agent", "--demo", *args],
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 160),
    )


def test_a_line_typed_mid_turn_reaches_the_model_in_the_same_turn(
    demo_env: dict[str, str], tmp_path: Path
) -> None:
    demo_env["NAV_SIM_FAULT"] = "sandbox list=slow:1.5"
    child = spawn_demo(demo_env, "--session", "steer")
    try:
        wait_for_prompt(child)
        child.sendline("list my sandboxes")
        child.expect_exact("→ sandbox_list")
        time.sleep(SETTLE_S)
        child.send("show the logs of dev-box\r")  # typed while the tool runs
        child.expect_exact("queued for the model: show the logs of dev-box")
        # Same turn: the model read the line and called the tool it asks for.
        child.expect_exact("→ sandbox_logs name=dev-box")
        child.expect_exact("3 model calls")
        turn = child.before
        wait_for_prompt(child)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    answer_lines = [line for line in turn.splitlines() if line.startswith("Sandbox dev-box")]
    assert answer_lines and not any("show the logs" in line for line in answer_lines)

    with SessionStore(Path(demo_env["NAV_AGENT_STATE_DIR"]) / "sessions.db") as store:
        history = store.load_history(store.open("steer").id)
    typed = UserMessage(content="show the logs of dev-box")
    at = history.index(typed)
    assert isinstance(history[at - 1], ToolResultMessage), "delivered after the tool round"
    assert [m for m in history if isinstance(m, UserMessage)] == [
        UserMessage(content="list my sandboxes"),
        typed,
    ]


def test_create_and_logs_in_one_response_run_in_order(demo_env: dict[str, str]) -> None:
    child = spawn_demo(demo_env, "--yes")
    try:
        wait_for_prompt(child)
        child.sendline("create a sandbox named web-2 running echo hi and show its logs")
        child.expect_exact("→ sandbox_create")
        child.expect_exact("✓ sandbox_create")
        between = child.before
        child.expect_exact("→ sandbox_logs name=web-2")
        child.expect_exact("✓ sandbox_logs")
        wait_for_prompt(child)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert "sandbox_logs" not in between, "the logs call started before the create ended"
