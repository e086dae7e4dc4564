"""A terminal for pty tests: pyte with scrollback, autowrap tracked, re-wrapped on resize.

`ReflowScreen` is a `pyte.HistoryScreen` that remembers which rows continue
the row above because the terminal wrapped a line that was too long
(`autowrapped`: the program did not wrap it itself), and that re-wraps every
line when resized, as tmux, iTerm2, VTE and kitty do: a narrower window
splits long lines into more rows and pushes the top ones into the
scrollback. pyte alone keeps rows as they are and cuts them.

`PtySession` runs a program in a pseudo-terminal of a given size and feeds
everything it writes to a `ReflowScreen`; `wait_until` polls the screen for
a condition (the condition is what is asserted; the timeout only bounds a
failure).
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pyte

_Row = Any  # pyte's StaticDefaultDict of Char; the wrap flag is an attribute on it


def _wrapped(row: _Row) -> bool:
    return bool(getattr(row, "autowrapped", False))


def _mark(row: _Row, wrapped: bool) -> None:
    setattr(row, "autowrapped", wrapped)  # noqa: B010 - pyte's row type has no such field


class ReflowScreen(pyte.HistoryScreen):
    """pyte with scrollback, autowrap flags and re-wrapping on `reflow`."""

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines, history=100_000, ratio=0.5)
        # The pty turns "\n" into "\r\n" (onlcr); LNM does the same here.
        self.set_mode(pyte.modes.LNM)
        self._drawing = False
        self.autowraps = 0
        """How many times a line was too long for the screen and the terminal wrapped it."""

    # --- tracking rows the terminal wrapped ---------------------------------

    def draw(self, data: str) -> None:
        self._drawing = True
        try:
            super().draw(data)
        finally:
            self._drawing = False

    def linefeed(self) -> None:
        super().linefeed()
        if self._drawing:  # pyte's draw wraps by carriage return + linefeed
            _mark(self.buffer[self.cursor.y], True)
            self.autowraps += 1

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        super().erase_in_line(how, private)
        if how == 2 or (how == 0 and self.cursor.x == 0):
            _mark(self.buffer[self.cursor.y], False)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        super().erase_in_display(how, *args, **kwargs)
        rows = range(self.cursor.y + 1, self.lines) if how == 0 else range(self.lines)
        for y in rows if how in (0, 2, 3) else ():
            _mark(self.buffer[y], False)

    # --- reading ------------------------------------------------------------

    def _text(self, row: _Row, columns: int) -> str:
        return "".join(row[x].data for x in range(columns)).rstrip()

    @property
    def history_lines(self) -> list[str]:
        """The rows scrolled off the top, oldest first."""
        return [self._text(row, self.columns) for row in self.history.top]

    @property
    def screen_lines(self) -> list[str]:
        """The rows on screen now."""
        return [self._text(self.buffer[y], self.columns) for y in range(self.lines)]

    @property
    def all_lines(self) -> list[str]:
        """Scrollback then screen: everything a person can scroll to."""
        return self.history_lines + self.screen_lines

    @property
    def logical_lines(self) -> list[str]:
        """`all_lines` with the rows the terminal wrapped joined to the row they continue."""
        rows = [*self.history.top, *(self.buffer[y] for y in range(self.lines))]
        joined: list[str] = []
        for row in rows:
            text = "".join(row[x].data for x in range(self.columns))
            if _wrapped(row) and joined:
                joined[-1] += text
            else:
                joined.append(text)
        return [line.rstrip() for line in joined]

    def rows_autowrapped(self) -> list[str]:
        """Rows (scrollback and screen) that continue a line the terminal had to wrap."""
        rows = [*self.history.top, *(self.buffer[y] for y in range(self.lines))]
        return [self._text(row, self.columns) for row in rows if _wrapped(row)]

    # --- resizing -----------------------------------------------------------

    def reflow(self, columns: int, lines: int) -> None:
        """Resize to `columns` x `lines`, re-wrapping every line as tmux does."""
        rows = [*self.history.top, *(self.buffer[y] for y in range(self.lines))]
        cursor_row = len(self.history.top) + self.cursor.y
        logical: list[list[Any]] = []
        cursor: tuple[int, int] = (0, 0)
        for index, row in enumerate(rows):
            if not (_wrapped(row) and logical):
                logical.append([])
            cells = [row[x] for x in range(self.columns)]
            continued = index + 1 < len(rows) and _wrapped(rows[index + 1])
            if not continued:
                while cells and cells[-1].data == " " and cells[-1].bg == "default":
                    cells.pop()
            if index == cursor_row:
                cursor = (len(logical) - 1, len(logical[-1]) + min(self.cursor.x, self.columns))
            logical[-1].extend(cells)
        # Blank lines below the cursor are not content.
        while len(logical) > cursor[0] + 1 and not logical[-1]:
            logical.pop()

        new_rows: list[tuple[list[Any], bool]] = []
        new_cursor = (0, 0)
        for number, line in enumerate(logical):
            pieces = [line[i : i + columns] for i in range(0, len(line), columns)] or [[]]
            if number == cursor[0]:
                at_row, x = divmod(cursor[1], columns)
                if x == 0 and at_row and at_row == len(pieces):
                    at_row, x = at_row - 1, columns  # at the end of a full row: pending wrap
                while at_row >= len(pieces):
                    pieces.append([])
                new_cursor = (len(new_rows) + at_row, x)
            new_rows += [(piece, i > 0) for i, piece in enumerate(pieces)]

        top = max(0, max(len(new_rows), new_cursor[0] + 1) - lines)
        top = min(top, new_cursor[0])
        self.columns, self.lines = columns, lines
        self.margins = None
        self.tabstops = set(range(8, columns, 8))
        self.history = self.history._replace(
            top=collections.deque(
                (self._row(cells, wrapped) for cells, wrapped in new_rows[:top]),
                maxlen=self.history.top.maxlen,
            )
        )
        self.buffer.clear()
        for y, (cells, wrapped) in enumerate(new_rows[top : top + lines]):
            self.buffer[y] = self._row(cells, wrapped)
        self.cursor.y, self.cursor.x = new_cursor[0] - top, new_cursor[1]
        self.dirty.update(range(lines))

    def _row(self, cells: list[Any], wrapped: bool) -> _Row:
        row: _Row = pyte.screens.StaticDefaultDict(self.default_char)
        for x, cell in enumerate(cells):
            row[x] = cell
        _mark(row, wrapped)
        return row


CPR_REQUEST = b"\x1b[6n"
"""A cursor position request (prompt_toolkit asks at every prompt)."""


class PtySession:
    """A program in a pseudo-terminal, drawn on a `ReflowScreen` as it writes.

    Like a real terminal (and unlike pyte alone) it answers cursor position
    requests, so prompt_toolkit never waits for an answer that will not
    come. A test acts when the screen shows what a person would wait for
    (`wait_for`, `wait_prompt`, `wait_until`); a timeout only bounds a failure.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        columns: int,
        lines: int = 40,
        cwd: Path | None = None,
        timeout: float = 30.0,
    ) -> None:
        env = {key: value for key, value in env.items() if key not in ("COLUMNS", "LINES")}
        self.timeout = timeout
        self.child = pexpect.spawn(
            argv[0], argv[1:], env=env, cwd=cwd, dimensions=(lines, columns), timeout=timeout
        )
        self.screen = ReflowScreen(columns, lines)
        self._stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()

    def pump(self, wait: float = 0.02) -> bool:
        """Feed what the program wrote so far; False once it has exited and all is read."""
        try:
            while True:
                data = self.child.read_nonblocking(65536, timeout=wait)
                self.raw += data
                *parts, last = data.split(CPR_REQUEST)
                for part in parts:
                    self._stream.feed(part)
                    cursor = self.screen.cursor
                    self.child.send(f"\x1b[{cursor.y + 1};{cursor.x + 1}R".encode())
                self._stream.feed(last)
                wait = 0
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False

    def wait_until(
        self, condition: Callable[[], object], *, timeout: float | None = None, what: str = ""
    ) -> None:
        """Pump until `condition()` holds; fail with the screen after `timeout`."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            alive = self.pump()
            if condition():
                return
            if time.monotonic() > deadline or not alive:
                screen = "\n".join(self.screen.all_lines[-60:])
                screen += f"\n(autowrapped rows: {self.screen.rows_autowrapped()[:5]})"
                state = "timed out" if alive else "the program ended"
                raise AssertionError(f"{state} waiting for {what or condition}:\n{screen}")

    def wait_for_text(self, text: str, *, timeout: float | None = None) -> None:
        """Wait until `text` is on screen (rows joined, spaces collapsed)."""
        self.wait_until(lambda: text in self.screen_text(), timeout=timeout, what=repr(text))

    def wait_for(self, text: str, *, timeout: float | None = None) -> None:
        """Wait until `text` is on screen, on one row or across rows the terminal wrapped."""
        self.wait_until(
            lambda: text in self.display or text in self.rows_joined,
            timeout=timeout,
            what=repr(text),
        )

    def wait_prompt(self, prompt: str = "nav>") -> None:
        """Wait until an empty prompt is the last line: the turn is over, keys go to it."""

        def ready() -> bool:
            lines = [line for line in self.screen.screen_lines if line.strip()]
            return bool(lines) and lines[-1] == prompt

        self.wait_until(ready, what=f"the prompt {prompt!r} on the last line")

    def screen_text(self) -> str:
        """The screen's rows joined with spaces, whitespace collapsed: text however wrapped."""
        return " ".join(" ".join(self.screen.screen_lines).split())

    @property
    def display(self) -> str:
        """What the screen shows now, line by line."""
        return "\n".join(self.screen.screen_lines)

    @property
    def rows_joined(self) -> str:
        """The screen's rows end to end, full width: text the terminal wrapped is whole."""
        return "".join(self.screen.display)

    def lines(self) -> list[str]:
        """Every line on screen or scrolled off it."""
        return self.screen.all_lines

    def wait_for_file(self, path: Path, *, timeout: float | None = None) -> None:
        """Wait until `path` exists (a scripted answer reached a pause), reading meanwhile.

        The program blocks when nobody reads what it writes: keep pumping.
        """
        self.wait_until(path.exists, timeout=timeout, what=str(path))

    def send(self, keys: str | bytes) -> None:
        """One write to the terminal, as a key or a paste arrives."""
        self.child.send(keys)

    def resize(self, columns: int, lines: int) -> None:
        """Resize the window: the terminal re-wraps, then the program is told (SIGWINCH)."""
        self.pump()
        self.screen.reflow(columns, lines)
        self.child.setwinsize(lines, columns)

    def resize_twice(self, first: int, second: int, lines: int, *, within: float) -> None:
        """Change the width twice within `within` seconds, as dragging a window edge does.

        What the program writes between the two changes (a frame drawn for
        `first`) reaches the screen after the second, as it does when a
        terminal is resized twice before it has read the program's output.
        """
        self.pump()
        self.screen.reflow(first, lines)
        self.child.setwinsize(lines, first)
        deadline = time.monotonic() + within
        written = bytearray()
        while (left := deadline - time.monotonic()) > 0:
            try:
                written += self.child.read_nonblocking(65536, timeout=left)
            except pexpect.TIMEOUT:
                break
        self.screen.reflow(second, lines)
        self.child.setwinsize(lines, second)
        self.raw += written
        self._stream.feed(bytes(written))

    def finish(self, *, timeout: float | None = None) -> int:
        """Wait for the program to exit (reading everything); its exit status."""
        self.wait_until(lambda: not self.child.isalive(), timeout=timeout, what="exit")
        self.pump()
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def color_env(**extra: str) -> dict[str, str]:
    """A colour terminal's environment (TERM=xterm-256color), without NO_COLOR."""
    env = {**os.environ, "TERM": "xterm-256color", **extra}
    env.pop("NO_COLOR", None)
    return env
