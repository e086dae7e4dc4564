"""The REPL against the real demo stack in-process: provider -> gateway -> agent -> nav-sim.

Integration is the point here: the same keys a user types, the real gRPC
client, the real tool runner and confirmation, the simulated model deciding.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input

from navagent.cli.demo import DEMO_CLUSTER, DemoStack, find_nav_sim
from navagent.cli.render import INTERRUPTED_NOTE
from navagent.core.chat_client import GrpcChatClient
from navagent.core.nav_cli import NavToolRunner
from tests.cli.harness import CTRL_D, ENTER, ReplDriver


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


@pytest.fixture
async def demo() -> AsyncIterator[DemoStack]:
    async with DemoStack(pacing_ms=0) as stack:
        yield stack


async def test_demo_repl_lists_confirms_a_delete_and_sees_it(pipe, demo) -> None:
    async with GrpcChatClient(demo.address) as client:
        await client.wait_ready(5)
        repl = ReplDriver(
            pipe,
            client=client,
            runner_factory=lambda confirm: NavToolRunner(
                demo.nav_sim, cluster=DEMO_CLUSTER, confirm=confirm, env=demo.tool_env
            ),
        )
        repl.start()
        repl.type("list my sandboxes" + ENTER)
        end = await repl.wait_for("py-worker (Provisioning)")
        assert "→ sandbox_list" in repl.text and "✓ sandbox_list" in repl.text
        assert "dev-box (Ready)" in repl.text and "gpu-trainer (Error)" in repl.text
        repl.type("delete py-worker" + ENTER)
        end = await repl.wait_for("sandbox delete py-worker", after=end)
        repl.type("y" + ENTER)
        end = await repl.wait_for("✓ sandbox_delete", after=end)
        repl.type("list my sandboxes" + ENTER)
        await repl.wait_for("py-worker (Deleting)", after=end)
        repl.type(CTRL_D)
        assert await repl.exit_code() == 0


async def test_demo_stack_stops_cleanly_and_removes_its_files() -> None:
    stack = DemoStack(pacing_ms=0)
    async with stack:
        state = stack.tool_env["NAV_SIM_STATE"]
        assert stack.address.startswith("unix:")  # a private socket, not a loopback port
        socket = Path(stack.address.removeprefix("unix:"))
        assert socket.is_socket()
        scratch = stack.sessions_db.parent
        assert scratch.is_dir() and state.startswith(str(scratch))
    assert not scratch.exists() and not socket.parent.exists()
    await stack.aclose()  # idempotent


def test_find_nav_sim_falls_back_to_a_wrapper_that_runs(tmp_path, monkeypatch) -> None:
    # An interpreter with no nav-sim beside it and none on PATH (a stand-in
    # script that runs the real one, so the wrapper can be executed).
    lonely = tmp_path / "bin" / "python"
    lonely.parent.mkdir()
    lonely.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    lonely.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(lonely))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    wrapper = find_nav_sim(tmp_path)
    assert wrapper == tmp_path / "nav-sim"
    result = subprocess.run(
        [str(wrapper), "--cluster", "demo", "sandbox", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "NAV_SIM_STATE": str(tmp_path / "state.json")},
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "py-worker" in result.stdout


async def test_demo_repl_ctrl_c_reaches_the_provider(pipe, demo) -> None:
    async with GrpcChatClient(demo.address) as client:
        await client.wait_ready(5)
        repl = ReplDriver(
            pipe,
            client=client,
            runner_factory=lambda confirm: NavToolRunner(
                demo.nav_sim, cluster=DEMO_CLUSTER, confirm=confirm, env=demo.tool_env
            ),
        )
        repl.start()
        repl.type("hello [sim-fault: stall after=4]" + ENTER)
        await repl.wait_for("Hello!")
        os.kill(os.getpid(), signal.SIGINT)
        await repl.wait_for(INTERRUPTED_NOTE)
        # Cancelling the turn cancelled the gRPC call, and the gateway dropped
        # the upstream request: the provider saw its client go away.
        async with asyncio.timeout(5):
            while not demo.provider.requests[-1].closed_by_client:
                await asyncio.sleep(0.02)
        repl.type(CTRL_D)
        assert await repl.exit_code() == 0


async def test_demo_repl_answer_n_is_summarised_as_declined(pipe, demo) -> None:
    async with GrpcChatClient(demo.address) as client:
        await client.wait_ready(5)
        repl = ReplDriver(
            pipe,
            client=client,
            runner_factory=lambda confirm: NavToolRunner(
                demo.nav_sim, cluster=DEMO_CLUSTER, confirm=confirm, env=demo.tool_env
            ),
        )
        repl.start()
        repl.type("create a sandbox named web-2 running echo hi and show its logs" + ENTER)
        end = await repl.wait_for("sandbox create --name web-2")
        repl.type("n" + ENTER)
        await repl.wait_for("so I did not run it.", after=end)
        assert "You declined creating sandbox web-2, so I did not run it." in repl.text
        assert "was declined, I did not read its logs" in repl.text
        assert "→ sandbox_logs" not in repl.text and "Created sandbox" not in repl.text
        repl.type(CTRL_D)
        assert await repl.exit_code() == 0
