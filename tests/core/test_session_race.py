"""`--session NAME` is find-or-create in one step: agents racing on a new name join one session.

The race is between reading "no session has this name" and creating it; the
loser used to hit the unique index and report the name as taken. These tests
lose that race on purpose: deterministically with two stores, and for real
with many processes released at once by a barrier.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
from pathlib import Path

import pytest

from navagent.core.history import validate_history
from navagent.core.messages import UserMessage
from navagent.core.sessions import InvalidSessionNameError, SessionNotFoundError, SessionStore


def test_the_store_that_lost_the_race_joins_the_winners_session(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SessionStore(db) as late, SessionStore(db) as early:
        with pytest.raises(SessionNotFoundError):
            late.open("racy")  # both looked before either created
        won = early.open_or_create("racy", cluster="dev")
        early.recorder(won.id).record_message(UserMessage(content="first"))
        joined = late.open_or_create("racy", cluster="other")
        assert joined.id == won.id
        assert joined.cluster == "dev", "the winner's row is read, not overwritten"
        assert late.load_history(joined.id) == (UserMessage(content="first"),)
        assert [s.name for s in late.list_sessions()] == ["racy"]


def test_open_or_create_still_checks_the_name_and_create_still_refuses_a_taken_one(
    tmp_path: Path,
) -> None:
    with SessionStore(tmp_path / "sessions.db") as store:
        with pytest.raises(InvalidSessionNameError, match="invalid session name"):
            store.open_or_create("two words")
        store.open_or_create("taken")
        with pytest.raises(InvalidSessionNameError, match="a session named 'taken' already exists"):
            store.create(name="taken")
        store.create(name="other")
        with pytest.raises(InvalidSessionNameError, match="already exists"):
            store.rename("other", "taken")


def _open_and_write(
    db: str, name: str, index: int, barrier: multiprocessing.synchronize.Barrier
) -> str:
    with SessionStore(db) as store:
        barrier.wait(timeout=60)
        session = store.open_or_create(name, cluster="dev")
        store.recorder(session.id).record_message(UserMessage(content=f"from {index}"))
        return session.id


def _worker(db: str, names: list[str], index: int, barrier, results) -> None:
    """Race once per name: every round, all workers are released by the barrier together."""
    for name in names:
        try:
            results.put((name, index, _open_and_write(db, name, index, barrier)))
        except Exception as exc:  # reported to the parent, which fails the test with it
            results.put((name, index, f"error: {type(exc).__name__}: {exc}"))
            barrier.abort()  # the others stop waiting for this one


@pytest.mark.slow
def test_many_processes_released_at_once_all_land_in_one_session(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    db = str(tmp_path / "sessions.db")
    SessionStore(db).close()  # migrated once, so the race is on the name alone
    processes = 6
    names = [f"racy-{round_}" for round_ in range(3)]
    # One set of processes races three times (a spawned interpreter costs ~1 s
    # of CPU): the barrier releases all six at once on each new name.
    barrier = context.Barrier(processes)
    results = context.Queue()
    workers = [
        context.Process(target=_worker, args=(db, names, index, barrier, results))
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    outcomes: dict[str, dict[int, str]] = {name: {} for name in names}
    for _ in range(processes * len(names)):
        name, index, outcome = results.get(timeout=120)
        outcomes[name][index] = outcome
    for worker in workers:
        worker.join(timeout=60)
    for name in names:
        assert len(outcomes[name]) == processes, outcomes
        assert len(set(outcomes[name].values())) == 1, outcomes
        with SessionStore(db) as store:
            session = store.open(name)
            history = store.load_history(session.id)
            assert sorted(m.content for m in history) == sorted(
                f"from {index}" for index in range(processes)
            )
            validate_history(history)
