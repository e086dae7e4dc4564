"""Everything `nav agent` keeps in its state folder is private under the common umask 022.

A captured demo conversation (as `nav agent --demo` wires it: session
database, capture of the provider, the tools and the turns) and the REPL's
line history are written, then every folder under the state folder must be
0700 and every file 0600: the files hold tool output and whatever a provider
echoed. State an older version left open to others is tightened on open.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from navagent.cli.demo import DemoStack
from navagent.cli.launch import PROMPT_HISTORY_FILE, _prompt_history
from navagent.core.sessions import STATE_DIR_ENV, SessionStore
from navagent.fixtures.harness import CassetteTransport
from navagent.gateway._network import upstream_transport
from tests.scenarios.test_capture import Session


def modes(root: Path) -> dict[str, int]:
    """Every path under `root` (itself included) and its permission bits."""
    found = {".": stat.S_IMODE(root.lstat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def loose(root: Path) -> dict[str, str]:
    """The paths under `root` that others could read or that are not 0700/0600."""
    wrong = {}
    for name, mode in modes(root).items():
        path = root / name
        want = 0o700 if path.is_dir() and not path.is_symlink() else 0o600
        if mode != want:
            wrong[name] = f"{mode:04o}"
    return wrong


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
async def session(tmp_path: Path, umask_022: None) -> AsyncIterator[Session]:
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    state = tmp_path / "state"
    async with DemoStack(pacing_ms=0, transport=transport) as demo:
        made = Session(state, demo, transport)
        await made.conversation.start()
        yield made
        await made.capture.aclose()
        await made.client.aclose()


async def test_a_captured_conversation_leaves_only_private_files(
    session: Session, tmp_path: Path
) -> None:
    session.answers[:] = [True]
    await session.conversation.send("create a sandbox named scratch running echo hi")
    await session.conversation.send("list my sandboxes")
    state = tmp_path / "state"
    kinds = {path.name for path in state.rglob("*")}
    # The test means something only if every kind of file was written.
    assert {"sessions.db", "sessions.db-wal", "recordings"} <= kinds
    assert {"meta.json", "provider.yaml", "tools.jsonl", "turns.jsonl"} <= kinds
    assert loose(state) == {}
    await session.conversation.close()
    assert loose(state) == {}


def test_state_an_older_version_left_open_is_tightened(tmp_path: Path, umask_022: None) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)
    database = state / "sessions.db"
    old = sqlite3.connect(database)
    old.execute("PRAGMA journal_mode = WAL")
    old.execute("CREATE TABLE t (x)")  # leaves a -wal and a -shm while open
    for suffix in ("", "-wal", "-shm"):
        os.chmod(f"{database}{suffix}", 0o644)
    SessionStore(database).close()
    old.close()
    assert loose(state) == {}


def test_the_line_history_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    history = _prompt_history()
    history.store_string("kubectl get secret prod-db -o yaml")
    path = tmp_path / "state" / PROMPT_HISTORY_FILE
    assert "prod-db" in path.read_text()
    assert loose(tmp_path / "state") == {}
