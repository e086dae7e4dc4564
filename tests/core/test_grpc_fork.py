"""A child forked while gRPC is busy runs its program (grpc/grpc#43055).

grpcio >= 1.81, with its fork handlers on, restarts its poller in a forked
child; a child that closes its descriptors before `exec` (pexpect, `pty.fork`)
then dies of SIGSEGV about one time in six. Importing any `navagent` package
turns the handlers off before grpc loads. These run in a fresh interpreter:
grpc reads the setting once, at import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

FORKS = 120

BUSY_GRPC_THEN_FORK = textwrap.dedent(
    """
    import asyncio, json, os, pty, sys

    import navagent.fixtures.harness.pytest_plugin  # what pytest loads first

    import grpc

    def fork_and_run():
        # What pexpect does: fork on a pty, close descriptors above 2, exec.
        pid, master = pty.fork()
        if pid == 0:
            os.closerange(3, 65536)
            os.execv("/bin/echo", ["echo", "ran"])
        output = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child's side of the pty is closed
                break
            if not chunk:
                break
            output += chunk
        os.close(master)
        _, status = os.waitpid(pid, 0)
        return [output.decode(errors="replace").strip(), os.waitstatus_to_exitcode(status)]

    async def main():
        server = grpc.aio.server()
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        call = channel.unary_unary("/nowhere/Busy")
        busy = True

        async def keep_busy():
            while busy:
                try:
                    await call(b"")
                except grpc.RpcError:
                    pass

        worker = asyncio.create_task(keep_busy())
        await asyncio.sleep(0.05)
        outcomes = []
        for _ in range(int(sys.argv[1])):
            outcomes.append(await asyncio.to_thread(fork_and_run))
        busy = False
        await worker
        await channel.close()
        await server.stop(None)
        print(json.dumps(outcomes))

    asyncio.run(main())
    """
)


def fresh_python(code: str, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_children_forked_while_grpc_is_busy_all_run_their_program() -> None:
    env = {key: value for key, value in os.environ.items() if key != "GRPC_ENABLE_FORK_SUPPORT"}
    outcomes = json.loads(fresh_python(BUSY_GRPC_THEN_FORK, str(FORKS), env=env))
    failed = [outcome for outcome in outcomes if outcome != ["ran", 0]]
    assert len(outcomes) == FORKS
    assert not failed, f"{len(failed)} of {FORKS} children died before exec: {failed[:3]}"


GRPC_IMPORT_WATCH = textwrap.dedent(
    """
    import importlib, os, sys

    seen = []

    class Watch:
        def find_spec(self, name, path=None, target=None):
            if name == "grpc":
                seen.append(os.environ.get("GRPC_ENABLE_FORK_SUPPORT"))

    sys.meta_path.insert(0, Watch())
    importlib.import_module(sys.argv[1])
    import grpc  # where the entry loads grpc later, lazily
    print(seen)
    """
)


@pytest.mark.parametrize(
    "entry",
    [
        "navagent.cli.app",  # `nav`
        "navagent.fixtures.harness.pytest_plugin",  # the pytest plugin
        "navagent.gateway.server",
        "navagent.core.chat_client",
    ],
)
def test_fork_handlers_are_off_when_grpc_loads_from_every_entry(entry: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "GRPC_ENABLE_FORK_SUPPORT"}
    assert fresh_python(GRPC_IMPORT_WATCH, entry, env=env).strip() == "['false']"


def test_a_fork_setting_the_user_chose_is_kept() -> None:
    code = "import os, navagent.cli; print(os.environ['GRPC_ENABLE_FORK_SUPPORT'])"
    assert fresh_python(code, env={**os.environ, "GRPC_ENABLE_FORK_SUPPORT": "1"}).strip() == "1"
