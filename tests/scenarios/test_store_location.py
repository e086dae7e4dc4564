"""A replay finds its session store as `nav agent` does, and fails when that is elsewhere.

The harness once handed the store its path, so how `nav agent` finds its store
(`$NAV_AGENT_STATE_DIR`, then the platform's state folder) was never run: a store
that ignored the variable passed every replay while a user's sessions went to
another folder. Now each run resolves the store through `default_db_path` and
`SessionStore()` with an environment of its own, and the replay fails naming
both paths when the resolution leaves the run's state folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs
import pytest

from navagent.core import sessions
from navagent.core.sessions import STATE_DIR_ENV
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.replay._conversation import (
    MisplacedStoreError,
    open_session_store,
    session_database,
    state_environ,
)
from tests.scenarios.conftest import CopyCase


def test_the_store_lands_in_the_state_folder_the_environment_names_privately(
    tmp_path: Path,
) -> None:
    before = os.environ.get(STATE_DIR_ENV)
    store = open_session_store(tmp_path)
    try:
        store.create(name="here")
        assert store.path == tmp_path / "state" / "sessions.db" == session_database(tmp_path)
    finally:
        store.close()
    assert os.environ.get(STATE_DIR_ENV) == before, "the process environment is left alone"
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    with sessions.SessionStore(store.path) as reopened:
        assert reopened.open("here").name == "here"
    assert state_environ(tmp_path) == {STATE_DIR_ENV: str(tmp_path / "state")}


def ignores_the_environment(state_dir: Path | str | None = None, *, environ: object = None) -> Path:
    """A planted defect: `$NAV_AGENT_STATE_DIR` is never read (the mutant of issue 42
    made the `or` chain an `and` chain, which fails harder)."""
    del environ
    return Path(state_dir or platformdirs.user_state_dir("nav-agent")) / "sessions.db"


@pytest.mark.parametrize("where", ["resolution", "store"])
async def test_a_store_that_ignores_the_state_variable_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
    tmp_path: Path,
    where: str,
) -> None:
    folder = copy_case("providers", providers=("openai",))
    scenario = load_scenario(folder / "providers.yaml")
    assert (await replay_scenario(scenario, "openai", cluster=cluster)).passed

    elsewhere = tmp_path / "user-state"  # never the real user's folder
    monkeypatch.setattr(platformdirs, "user_state_dir", lambda *_args: str(elsewhere))
    if where == "resolution":  # what the harness and `SessionStore()` both ask
        monkeypatch.setattr(sessions, "default_db_path", ignores_the_environment)
        from navagent.fixtures.harness.replay import _conversation

        monkeypatch.setattr(_conversation, "default_db_path", ignores_the_environment)
    else:  # the store alone resolves its path wrong
        monkeypatch.setattr(sessions, "default_db_path", ignores_the_environment)

    result = await replay_scenario(scenario, "openai", cluster=cluster)
    assert not result.passed
    (problem,) = result.problems
    assert problem.startswith(f"the replay crashed: {MisplacedStoreError.__name__}: nav agent")
    assert f"{elsewhere / 'sessions.db'}, not in ${STATE_DIR_ENV}" in problem
    assert not (elsewhere / "sessions.db").exists() or where == "store"
