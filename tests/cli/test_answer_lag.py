"""The answer on screen keeps up with the stream (issue 20, item 1).

A streamed answer is fed to `MarkdownStream` on a simulated clock with
simulated timers (`FakeTime`), and everything it writes is replayed through
a terminal emulator: the lag of a delta is the simulated time from its
arrival to the first moment the screen shows the answer up to it. Drawing
costs no simulated time here, so the figures bound the throttling, not the
machine; `bench/answer_lag.py` measures the real thing.
"""

from __future__ import annotations

import heapq
import io
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import pyte
import pytest
from rich.console import Console

from navagent.cli.markdown_stream import MarkdownStream

MAX_LAG_S = 0.25
"""Generous: the stream redraws at least every 0.1 s of simulated time."""


@dataclass
class _Handle:
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class FakeTime:
    """A clock and `call_later` timers that move only when told to."""

    now: float = 0.0
    _timers: list[tuple[float, int, Callable[[], None], _Handle]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)

    def clock(self) -> float:
        return self.now

    def timer(self, delay: float, callback: Callable[[], None]) -> _Handle:
        handle = _Handle()
        heapq.heappush(self._timers, (self.now + delay, next(self._order), callback, handle))
        return handle

    def advance_to(self, when: float, after_each: Callable[[], None]) -> None:
        """Run the timers due by `when`, in order, calling `after_each` after each one."""
        while self._timers and self._timers[0][0] <= when:
            due, _, callback, handle = heapq.heappop(self._timers)
            self.now = max(self.now, due)
            if not handle.cancelled:
                callback()
                after_each()
        self.now = max(self.now, when)


class Watched:
    """A `MarkdownStream` on a terminal emulator, with the lag of every delta recorded."""

    def __init__(self, columns: int, lines: int = 40) -> None:
        self.time = FakeTime()
        self.file = io.StringIO()
        console = Console(
            file=self.file, force_terminal=True, width=columns, height=lines, color_system=None
        )
        self.stream = MarkdownStream(console, clock=self.time.clock, timer=self.time.timer)
        self.screen = pyte.Screen(columns, lines)
        self.screen.set_mode(pyte.modes.LNM)
        self._terminal = pyte.Stream(self.screen)
        self._read = 0
        self.text = ""
        self.waiting: list[tuple[float, str]] = []
        """(arrival time, answer so far) of deltas not on screen yet."""
        self.lags: list[float] = []

    def _look(self) -> None:
        written = self.file.getvalue()
        if len(written) == self._read:
            return
        self._terminal.feed(written[self._read :])
        self._read = len(written)
        shown = self.visible()
        # The newest delta shown marks every older one as shown too.
        for index in range(len(self.waiting) - 1, -1, -1):
            tail = " ".join(self.waiting[index][1].split())[-40:]
            if shown.endswith(tail):
                self.lags += [self.time.now - arrived for arrived, _ in self.waiting[: index + 1]]
                del self.waiting[: index + 1]
                break

    def visible(self) -> str:
        """The screen's text, rows joined, whitespace collapsed (pyte's `display`, faster)."""
        buffer = self.screen.buffer
        rows = ("".join(cell.data for _, cell in sorted(buffer[y].items())) for y in sorted(buffer))
        return " ".join(" ".join(rows).split())

    def feed(self, at: float, delta: str) -> None:
        self.time.advance_to(at, self._look)
        self.text += delta
        self.waiting.append((at, self.text))
        self.stream.feed(delta)
        self._look()

    def wait(self, until: float) -> None:
        self.time.advance_to(until, self._look)


def long_paragraph(tokens: int) -> list[str]:
    """One paragraph, `tokens` deltas: words that never repeat, so a tail is unique."""
    return [f" w{n:04d}" if n else f"w{n:04d}" for n in range(tokens)]


def test_a_2000_token_paragraph_is_never_more_than_a_frame_behind() -> None:
    # Issue 20: a paragraph whose draw took over 1 ms was redrawn only when a
    # newline came, and nothing redrew it while the deltas paused.
    watched = Watched(120)
    now = 0.0
    for number, delta in enumerate(long_paragraph(2000)):
        # 100 tokens/s in bursts of 5, and the model stalls for 2 s every 400 tokens.
        now += 2.0 if number % 400 == 399 else (0.05 if number % 5 == 4 else 0.0)
        watched.feed(now, delta)
    watched.wait(now + 2.0)
    assert not watched.waiting, "text that arrived was never drawn"
    assert len(watched.lags) == 2000
    assert max(watched.lags) < MAX_LAG_S, sorted(watched.lags)[-10:]
    watched.stream.finish()


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_last_words_before_a_pause_are_drawn_during_it(columns: int) -> None:
    watched = Watched(columns)
    for number, delta in enumerate(long_paragraph(300)):
        watched.feed(number * 0.01, delta)
    paused_at = watched.time.now
    watched.wait(paused_at + MAX_LAG_S)
    assert not watched.waiting, "the pause left text off screen"


def test_a_costly_answer_does_not_slow_the_next_one() -> None:
    # Issue 20: the cost of the last draw carried over into the next turn.
    watched = Watched(120)
    for number, delta in enumerate(long_paragraph(600)):
        watched.feed(number * 0.01, delta)
    watched.stream.finish()
    start = watched.time.now + 5.0
    watched.feed(start, "Next")
    watched.feed(start + 0.001, " answer")
    watched.wait(start + 1.0)
    assert max(watched.lags[-2:]) < 0.06, watched.lags[-2:]


@pytest.mark.parametrize(
    "block",
    [
        "| name | phase |\n|---|---|\n" + "".join(f"| box{n} | Ready |\n" for n in range(30)),
        "```python\n" + "".join(f"value_{n} = compute({n})\n" for n in range(30)),
        "- " + "\n- ".join(f"item number {n}" for n in range(30)) + "\n",
    ],
    ids=["table", "code", "list"],
)
def test_every_kind_of_growing_block_is_drawn_during_a_pause(block: str) -> None:
    watched = Watched(100)
    for number, piece in enumerate(block.split(" ")):
        watched.feed(number * 0.005, piece if number == 0 else " " + piece)
    last_word = block.split()[-1].strip("|`")
    watched.wait(watched.time.now + MAX_LAG_S)
    assert last_word in watched.visible()
