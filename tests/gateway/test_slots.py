"""Stream slots shared by worker processes: the gateway-wide limit holds across them."""

from __future__ import annotations

import multiprocessing
import os
import signal
from multiprocessing.connection import Connection

import pytest

from navagent.gateway._slots import Slots

SPAWN = multiprocessing.get_context("spawn")


def test_local_slots_refuse_past_the_limit_and_free_on_release() -> None:
    slots = Slots.local()
    worker = slots.worker(0)
    assert [worker.try_acquire(2) for _ in range(3)] == [True, True, False]
    worker.release()
    assert worker.in_use() == 1
    assert worker.try_acquire(2)


def test_counters_are_independent() -> None:
    slots = Slots.local(counters=2)
    worker = slots.worker(0)
    assert worker.try_acquire(1, counter=1)
    assert not worker.try_acquire(1, counter=1)
    assert worker.try_acquire(1)
    assert (slots.in_use(0), slots.in_use(1)) == (1, 1)


def _grab(slots: Slots, index: int, limit: int, tries: int, reply: Connection) -> None:
    worker = slots.worker(index)
    reply.send(sum(worker.try_acquire(limit) for _ in range(tries)))
    reply.recv()  # hold the slots until told to go


def test_two_processes_never_exceed_the_shared_limit() -> None:
    slots = Slots.shared(workers=2)
    try:
        pipes = [SPAWN.Pipe() for _ in range(2)]
        workers = [
            SPAWN.Process(target=_grab, args=(slots, i, 5, 200, pipes[i][1])) for i in range(2)
        ]
        for process in workers:
            process.start()
        taken = [pipes[i][0].recv() for i in range(2)]
        assert sum(taken) == 5 and slots.in_use() == 5
        os.kill(workers[0].pid or 0, signal.SIGKILL)  # dies holding its slots
        workers[0].join(10)
        slots.reset_worker(0)
        assert slots.in_use() == taken[1]
        assert slots.worker(0).try_acquire(5) == (taken[1] < 5)  # the lock is not stuck
        pipes[1][0].send("go")
        workers[1].join(10)
    finally:
        slots.close()


def test_worker_index_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="worker index 2"):
        Slots.local().worker(2)
