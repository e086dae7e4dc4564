"""Run one subprocess with a timeout, capped output and no orphans.

The subprocess tool has no anchor in the libraries we model ourselves on
(STYLE.md), so this is our own design, kept small: an argv list (never a
shell), stdin from /dev/null, stdout and stderr read separately and
incrementally into capped buffers, and the process in its own session so that
a timeout or a cancellation can kill everything it started, grandchildren
included.

`asyncio.subprocess.Process.communicate()` is not enough: it buffers all
output in memory, cannot cap it, and on timeout or cancellation leaves the
process (and its children) running.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["CappedBuffer", "CapturedOutput", "ProcessExecutor", "ProcessResult", "run_process"]

_READ_SIZE = 64 * 1024
_MAX_UTF8_CONTINUATION = 3
_ALIGN_WINDOW = 4
"""A cut moves to a line boundary when one lies within 1/4 of the kept part."""


@dataclass(frozen=True, slots=True)
class CapturedOutput:
    """What was kept of one output stream: its first and last bytes.

    Both ends carry meaning for `nav`: the head holds table headers and the
    first rows, the tail holds the latest log lines, the final phase of a
    create and the command's last words. The middle is what gets dropped.
    """

    head: bytes = b""
    tail: bytes = b""
    omitted: int = 0
    """Bytes dropped between `head` and `tail`."""

    @property
    def total(self) -> int:
        """How many bytes the stream produced."""
        return len(self.head) + len(self.tail) + self.omitted

    def text(self) -> str:
        """Decode as UTF-8 (bad bytes become U+FFFD), marking any cut.

        When bytes were dropped, the cut points move to line boundaries
        nearby (and never split a UTF-8 character); the marker counts every
        byte not shown, so the number is exact.
        """
        if not self.omitted:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        head, tail = _align_head(self.head), _align_tail(self.tail)
        omitted = self.total - len(head) - len(tail)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        head_text = decoder.decode(head)  # not final: a split character is held back
        omitted += len(decoder.getstate()[0])
        marker = f"[... {omitted:,} more bytes of output omitted ...]"
        head_text = head_text if not head_text or head_text.endswith("\n") else head_text + "\n"
        return f"{head_text}{marker}\n{tail.decode('utf-8', errors='replace')}"


def _align_head(head: bytes) -> bytes:
    cut = head.rfind(b"\n")
    return head[: cut + 1] if cut >= len(head) - len(head) // _ALIGN_WINDOW else head


def _align_tail(tail: bytes) -> bytes:
    cut = tail.find(b"\n")
    if 0 <= cut < len(tail) // _ALIGN_WINDOW:
        return tail[cut + 1 :]
    start = 0  # skip the continuation bytes of a character cut in half
    while start < min(len(tail), _MAX_UTF8_CONTINUATION) and 0x80 <= tail[start] < 0xC0:
        start += 1
    return tail[start:]


class CappedBuffer:
    """Keeps the first and last bytes of a stream, never more than `cap` in all.

    Half the cap goes to the head, half to the tail; everything between is
    only counted.
    """

    def __init__(self, cap: int) -> None:
        if cap < 0:
            raise ValueError(f"cap must be >= 0, got {cap}")
        self._head_limit = cap - cap // 2
        self._tail_limit = cap // 2
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    def feed(self, chunk: bytes) -> None:
        """Add the next chunk of the stream."""
        self._total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or not self._tail_limit:
            return
        if len(chunk) >= self._tail_limit:
            self._tail[:] = chunk[-self._tail_limit :]
        else:
            # Trim before appending, so the buffer never exceeds its limit.
            del self._tail[: max(0, len(self._tail) + len(chunk) - self._tail_limit)]
            self._tail += chunk

    def finish(self) -> CapturedOutput:
        """Return what was kept and how much was dropped."""
        kept = len(self._head) + len(self._tail)
        return CapturedOutput(bytes(self._head), bytes(self._tail), self._total - kept)


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """How a process ended and what it wrote."""

    argv: tuple[str, ...]
    returncode: int | None
    """Exit status, `-N` for signal N; `None` when it was killed after its timeout."""
    stdout: CapturedOutput
    stderr: CapturedOutput
    timed_out: bool
    duration_s: float


class ProcessExecutor(Protocol):
    """Runs one command to completion: `run_process`, or a stand-in with its signature.

    The seam where a recording keeps every command's result and a replay
    serves them back from a tool cassette, with everything around the run
    (validation, confirmation, the result text) unchanged.
    """

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        output_cap_bytes: int,
        kill_grace_s: float = 1.0,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProcessResult:
        """Run `argv` (see `run_process`)."""
        ...


async def _drain(stream: asyncio.StreamReader | None, sink: CappedBuffer) -> None:
    if stream is None:  # pragma: no cover - both pipes are always requested
        return
    while chunk := await stream.read(_READ_SIZE):
        sink.feed(chunk)


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    # The group outlives its leader while any member is alive, and its id is
    # not reused until the last one is gone, so this never hits a stranger.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def run_process(
    argv: Sequence[str],
    *,
    timeout_s: float,
    output_cap_bytes: int,
    kill_grace_s: float = 1.0,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> ProcessResult:
    """Run `argv` to completion, or kill its whole process group.

    The process starts in a new session (its own process group), so on
    timeout the group gets SIGTERM, then SIGKILL after `kill_grace_s`, which
    also ends any children it started. The timeout covers the process and its
    output pipes: a background child that keeps stdout open counts as still
    running. On cancellation the group gets SIGKILL at once and
    `asyncio.CancelledError` propagates. Each stream keeps at most
    `output_cap_bytes` (see `CappedBuffer`).

    Raises:
        OSError: the program could not be started (missing, not executable).
        asyncio.CancelledError: the caller was cancelled; the group is dead.
    """
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=None if env is None else dict(env),
        start_new_session=True,
    )
    stdout, stderr = CappedBuffer(output_cap_bytes), CappedBuffer(output_cap_bytes)
    waiter = asyncio.create_task(process.wait())
    readers = [
        asyncio.create_task(_drain(process.stdout, stdout)),
        asyncio.create_task(_drain(process.stderr, stderr)),
    ]
    timed_out = False
    try:
        _, pending = await asyncio.wait([waiter, *readers], timeout=timeout_s)
        if pending:
            timed_out = True
            _signal_group(process.pid, signal.SIGTERM)
            await asyncio.wait([waiter], timeout=kill_grace_s)
            _signal_group(process.pid, signal.SIGKILL)
            await waiter
            # Pipes reach EOF once the group is dead; a process that left the
            # session could still hold them, so do not wait on it forever.
            await asyncio.wait(readers, timeout=kill_grace_s)
    except BaseException:
        _signal_group(process.pid, signal.SIGKILL)
        raise
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(waiter, *readers, return_exceptions=True)
    return ProcessResult(
        argv=tuple(argv),
        returncode=None if timed_out else process.returncode,
        stdout=stdout.finish(),
        stderr=stderr.finish(),
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
    )
