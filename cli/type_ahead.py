"""Typing while a turn runs: lines are queued for the model, Ctrl-C or Esc cancels.

While the prompt is not shown (a turn is running) the terminal stays in raw
mode and `TypeAhead` reads the keys itself, through the same prompt_toolkit
`Input` the prompt uses: printable keys build a line, Backspace edits it,
Enter queues it (the REPL shows it as queued and the agent hands it to the
model before its next call in the same turn, see `Agent.run_turn(steering=)`),
a bracketed paste stays one line of the queue however many lines it has,
Ctrl-C or Esc cancels the turn, and Ctrl-D on an empty line asks to leave once
the turn is over. Nothing typed is echoed into the answer.

The queue outlives the turn: whatever the model did not get is the next
turn's input (see the REPL).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import Output

__all__ = ["TypeAhead"]

_ESCAPE_FLUSH_S = 0.05
"""A lone Esc is told apart from an escape sequence after this long."""
_SUBMIT = frozenset({Keys.ControlM, Keys.ControlJ, Keys.Enter})
_ERASE = frozenset({Keys.Backspace, Keys.ControlH})


class TypeAhead:
    """Reads keys during a turn; see the module docstring."""

    def __init__(
        self,
        keys: Input,
        *,
        screen: Output | None = None,
        on_cancel: Callable[[], object],
        on_queued: Callable[[str], None],
        on_typing: Callable[[str], None] = lambda _line: None,
    ) -> None:
        """Read from `keys` while `active()`.

        Args:
            keys: The prompt session's input.
            screen: The prompt session's output: bracketed paste is turned on
                while reading, so a pasted block is one paste, not many Enters.
            on_cancel: Called for Ctrl-C or Esc (cancel the turn).
            on_queued: Called with each line queued by Enter (show it).
            on_typing: Called with the line being typed after each edit.
        """
        self._keys = keys
        self._screen = screen
        self._on_cancel = on_cancel
        self._on_queued = on_queued
        self._on_typing = on_typing
        self._line = ""
        self._queue: list[str] = []
        self._attached = False
        self._flush: asyncio.TimerHandle | None = None
        self.leave_requested = False
        """Ctrl-D was pressed on an empty line; the REPL leaves after the turn."""

    @property
    def line(self) -> str:
        """What has been typed since the last Enter."""
        return self._line

    @property
    def queued(self) -> tuple[str, ...]:
        """Lines queued and not yet taken."""
        return tuple(self._queue)

    def take(self) -> list[str]:
        """Hand over the queued lines and forget them (the agent's steering callback)."""
        taken, self._queue = self._queue, []
        return taken

    def take_unfinished(self) -> str:
        """The line typed without Enter yet, and forget it."""
        line, self._line = self._line, ""
        return line

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Read keys (terminal in raw mode) for the duration of the block."""
        with self._keys.raw_mode(), self._reading():
            yield

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop reading, e.g. while a y/N question has the terminal."""
        if not self._attached:
            yield
            return
        self._stop()
        try:
            yield
        finally:
            self._start()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        self._start()
        try:
            yield
        finally:
            self._stop()

    def _start(self) -> None:
        self._detach = self._keys.attach(self._ready)
        self._detach.__enter__()
        self._attached = True
        if self._screen is not None:
            self._screen.enable_bracketed_paste()
            self._screen.flush()

    def _stop(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if self._attached:
            self._attached = False
            self._detach.__exit__(None, None, None)
            if self._screen is not None:
                self._screen.disable_bracketed_paste()
                self._screen.flush()

    def _ready(self) -> None:
        self.handle(self._keys.read_keys())
        if self._flush is not None:
            self._flush.cancel()
        # A lone Esc stays in the parser until we say no more bytes follow.
        loop = asyncio.get_running_loop()
        self._flush = loop.call_later(_ESCAPE_FLUSH_S, self._flush_keys)

    def _flush_keys(self) -> None:
        self._flush = None
        if self._attached:
            self.handle(self._keys.flush_keys())

    def handle(self, presses: list[KeyPress]) -> None:
        """Apply key presses (public for tests that have no terminal)."""
        edited = False
        for press in presses:
            key = press.key
            if key in (Keys.ControlC, Keys.Escape):
                self._on_cancel()
            elif key == Keys.ControlD and not self._line:
                self.leave_requested = True
            elif key in _SUBMIT:
                self._submit()
                edited = True
            elif key in _ERASE:
                self._line = self._line[:-1]
                edited = True
            elif key == Keys.BracketedPaste:
                self._line += press.data.replace("\r\n", "\n").replace("\r", "\n")
                edited = True
            elif not isinstance(key, Keys) and press.data.isprintable():
                self._line += press.data
                edited = True
        if edited:
            self._on_typing(self._line)

    def _submit(self) -> None:
        line, self._line = self._line.strip(), ""
        if line:
            self._queue.append(line)
            self._on_queued(line)
