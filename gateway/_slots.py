"""Stream slots counted across the gateway's worker processes.

`--max-concurrent-streams` means the whole gateway, however many workers
serve it, so the count lives in memory every worker shares: one cell per
(counter, worker), each written only under an exclusive `flock` on a small
lock file. A worker killed with `kill -9` cannot leave that lock held (the
kernel releases it with the process), and the supervisor clears the dead
worker's cells (`Slots.reset_worker`) before starting its replacement, so its
streams' slots are not lost either.

Counter 0 is the gateway's own limit; further counters are free for other
limits that must hold across workers (a caller's own concurrent streams).
A single-process gateway uses `Slots.local()`: the same interface over plain
memory, no lock file.
"""

from __future__ import annotations

import ctypes
import fcntl
import multiprocessing
import os
import tempfile
from collections.abc import MutableSequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, cast

__all__ = ["GATEWAY", "Slots", "WorkerSlots"]

GATEWAY = 0
"""The counter of the gateway-wide `--max-concurrent-streams` limit."""


class Slots:
    """A table of counters, one cell per (counter, worker); create before the workers start."""

    def __init__(
        self, cells: MutableSequence[int], *, workers: int, counters: int, lock_path: Path | None
    ) -> None:
        self._cells = cells
        self.workers = workers
        self.counters = counters
        self._lock_path = lock_path
        self._lock_fd: int | None = None

    @classmethod
    def shared(cls, *, workers: int, counters: int = 1, directory: Path | None = None) -> Slots:
        """Counters in shared memory, for worker processes (passed to them as an argument).

        The lock file goes in `directory` (the gateway's state folder, which a
        later gateway removes if this one dies without doing so).
        """
        _check_shape(workers, counters)
        array = multiprocessing.get_context("spawn").RawArray(ctypes.c_int64, workers * counters)
        cells = cast("MutableSequence[int]", array)  # a ctypes array indexes as ints
        fd, name = tempfile.mkstemp(prefix="nav-gateway-slots-", suffix=".lock", dir=directory)
        os.close(fd)
        return cls(cells, workers=workers, counters=counters, lock_path=Path(name))

    @classmethod
    def local(cls, *, counters: int = 1) -> Slots:
        """Counters for one process: no shared memory, no lock."""
        _check_shape(1, counters)
        return cls([0] * counters, workers=1, counters=counters, lock_path=None)

    def worker(self, index: int) -> WorkerSlots:
        """The view worker `index` (0-based) acquires and releases through."""
        if not 0 <= index < self.workers:
            raise ValueError(f"worker index {index} outside 0..{self.workers - 1}")
        return WorkerSlots(self, index)

    def in_use(self, counter: int = GATEWAY) -> int:
        """Slots of `counter` held now, summed over every worker."""
        base = counter * self.workers
        with self._locked():
            return sum(self._cells[base : base + self.workers])

    def reset_worker(self, index: int) -> None:
        """Release everything a dead worker held (the supervisor calls this)."""
        with self._locked():
            for counter in range(self.counters):
                self._cells[counter * self.workers + index] = 0

    def close(self) -> None:
        """Remove the lock file (the creator calls this once every worker is gone)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._lock_path is not None:
            self._lock_path.unlink(missing_ok=True)

    def _locked(self) -> AbstractContextManager[object]:
        if self._lock_path is None:
            return nullcontext()
        if self._lock_fd is None:
            self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        return _Flock(self._lock_fd)

    def _try_acquire(self, index: int, counter: int, limit: int) -> bool:
        base = counter * self.workers
        with self._locked():
            if sum(self._cells[base : base + self.workers]) >= limit:
                return False
            self._cells[base + index] += 1
            return True

    def _release(self, index: int, counter: int) -> None:
        cell = counter * self.workers + index
        with self._locked():
            if self._cells[cell] > 0:
                self._cells[cell] -= 1

    def __getstate__(self) -> dict[str, Any]:
        # Each process opens the lock file itself: flock excludes per open file.
        return {**self.__dict__, "_lock_fd": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class WorkerSlots:
    """One worker's side of `Slots`: acquire and release on its own cells."""

    __slots__ = ("_index", "_slots")

    def __init__(self, slots: Slots, index: int) -> None:
        self._slots = slots
        self._index = index

    def try_acquire(self, limit: int, counter: int = GATEWAY) -> bool:
        """Take one slot of `counter` if fewer than `limit` are held gateway-wide."""
        return self._slots._try_acquire(self._index, counter, limit)

    def release(self, counter: int = GATEWAY) -> None:
        """Give back one slot of `counter` taken by this worker."""
        self._slots._release(self._index, counter)

    def in_use(self, counter: int = GATEWAY) -> int:
        """Slots of `counter` held gateway-wide."""
        return self._slots.in_use(counter)


class _Flock:
    """An exclusive `flock` held for a few list operations."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)


def _check_shape(workers: int, counters: int) -> None:
    if workers < 1 or counters < 1:
        raise ValueError(f"slots need a worker and a counter, got {workers} and {counters}")
