"""Typing while a turn runs: lines are queued for the model, Ctrl-C or a lone Esc cancels.

While the prompt is not shown (a turn is running) the terminal stays in raw
mode and `TypeAhead` reads the keys itself, through the same prompt_toolkit
`Input` the prompt uses, into a prompt_toolkit `Buffer` edited by prompt_toolkit's
own key processor and bindings: the prompt's editing keys work as at the prompt
(arrows, Home/End, Ctrl-A/E/K/U/W/Y, Meta-b/f/d/Backspace, Option-arrows, undo,
Up/Down through the line history), and so do the prompt's Enter and Esc-Enter
(`navagent.cli.prompt.key_bindings`). Enter queues the line (the REPL shows it
as queued and the agent hands it to the model before its next call in the same
turn, see `Agent.run_turn(steering=)`) and adds it to the line history, so Up
at the next prompt brings it back; a bracketed paste stays one line of the
queue however many lines it has; Ctrl-C or a lone Esc cancels the turn; Ctrl-D
on an empty line asks to leave once the turn is over; Ctrl-Z suspends the
process as in cooked mode (`navagent.cli.suspend`: `release` and `retake`
give the terminal to the shell and take it back). Nothing typed is echoed
into the answer: the REPL shows the line through `on_typing`.

A terminal sends Meta keys (Alt-b, Option-arrows, Esc-Enter) as Esc followed by
more bytes in one write. A lone Esc is only an Esc that nothing followed
within the escape timeout (`ESCAPE_TIMEOUT_S`, as a terminal's own): only
that one cancels; an Esc that starts a sequence is the Meta prefix of a key
binding, or ignored as at the prompt.

The queue outlives the turn: whatever the model did not get is the next
turn's input (see the REPL).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from prompt_toolkit.application import Application
from prompt_toolkit.application.current import set_app
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent, merge_key_bindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.output import DummyOutput, Output

from navagent.cli.prompt import key_bindings as prompt_key_bindings
from navagent.cli.suspend import suspend_process_group

__all__ = ["CURSOR_MARK", "ESCAPE_TIMEOUT_S", "TypeAhead", "show_cursor"]

ESCAPE_TIMEOUT_S = 0.05
"""An Esc with nothing after it for this long is a lone Esc, not a Meta prefix."""
CURSOR_MARK = "▏"
"""Shows where the cursor is in a typed line when it is not at the end."""


def show_cursor(text: str, cursor: int) -> str:
    """`text` as shown beside the spinner: the cursor marked unless it is at the end."""
    if cursor >= len(text):
        return text
    return text[:cursor] + CURSOR_MARK + text[cursor:]


class TypeAhead:
    """Reads keys during a turn; see the module docstring."""

    def __init__(
        self,
        keys: Input,
        *,
        screen: Output | None = None,
        history: History | None = None,
        on_cancel: Callable[[], object],
        on_queued: Callable[[str], None],
        on_typing: Callable[[str], None] = lambda _line: None,
    ) -> None:
        """Read from `keys` while `active()`.

        Args:
            keys: The prompt session's input.
            screen: The prompt session's output: bracketed paste is turned on
                while reading, so a pasted block is one paste, not many Enters.
            history: The prompt's line history: Up and Down browse it, and each
                queued line is added to it.
            on_cancel: Called for Ctrl-C or a lone Esc (cancel the turn).
            on_queued: Called with each line queued by Enter (show it).
            on_typing: Called with the line being typed after each change,
                the cursor marked when it is not at the end (`show_cursor`).
        """
        self._keys = keys
        self._screen = screen
        self._on_cancel = on_cancel
        self._on_queued = on_queued
        self._on_typing = on_typing
        self._queue: list[str] = []
        self._attached = False
        self._released: contextlib.ExitStack | None = None
        """Cooked mode while the process is suspended (see `release`)."""
        self._flush: asyncio.TimerHandle | None = None
        self._shown = ""
        self._buffer = Buffer(
            history=history if history is not None else InMemoryHistory(),
            multiline=False,
            accept_handler=self._accept,
        )
        # Never run: it gives prompt_toolkit's key processor and bindings (the
        # Application's defaults: basic + emacs) a current buffer to edit.
        self._editor: Application[None] = Application(
            layout=Layout(Window(BufferControl(self._buffer))),
            key_bindings=merge_key_bindings([prompt_key_bindings(), self._own_bindings()]),
            input=keys,
            output=DummyOutput(),
        )
        # No timer for ambiguous key prefixes: the escape timeout has already
        # told a lone Esc from a Meta prefix before a key reaches the processor.
        self._editor.timeoutlen = None  # type: ignore[assignment]  # documented: "None or a float"
        self.leave_requested = False
        """Ctrl-D was pressed on an empty line; the REPL leaves after the turn."""

    @property
    def line(self) -> str:
        """What has been typed since the last Enter."""
        return self._buffer.text

    @property
    def cursor(self) -> int:
        """Where the cursor is in `line`."""
        return self._buffer.cursor_position

    @property
    def queued(self) -> tuple[str, ...]:
        """Lines queued and not yet taken."""
        return tuple(self._queue)

    def take(self) -> list[str]:
        """Hand over the queued lines and forget them (the agent's steering callback)."""
        taken, self._queue = self._queue, []
        return taken

    def take_unfinished(self) -> str:
        """The line typed without Enter yet, and forget it (it is no longer shown either)."""
        line = self._buffer.text
        self._buffer.reset()
        self._report()
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

    def release(self) -> None:
        """Give the terminal back as found (cooked mode, no bracketed paste) before a stop."""
        if not self._attached or self._released is not None:
            return
        self._stop()
        self._released = contextlib.ExitStack()
        self._released.enter_context(self._keys.cooked_mode())

    def retake(self) -> None:
        """Read keys again after `release` (the process was continued)."""
        released, self._released = self._released, None
        if released is None:
            return
        released.close()  # raw mode again, whatever the shell left
        self._start()

    def handle(self, presses: list[KeyPress], *, flushed: bool = False) -> None:
        """Apply key presses as the terminal sent them (public for tests with no terminal).

        Args:
            presses: Keys parsed from the input.
            flushed: The keys came out of the parser because nothing followed
                them within the escape timeout: a last Esc is a lone Esc.
        """
        lone_escape = flushed and bool(presses) and presses[-1].key == Keys.Escape
        if lone_escape:
            presses = presses[:-1]
        if presses:
            with set_app(self._editor):
                processor = self._editor.key_processor
                processor.feed_multiple(presses)
                processor.process_keys()
                # Up browses the history: load it into the buffer (again after each reset).
                self._buffer.load_history_if_not_yet_loaded()
            self._report()
        if lone_escape:
            self._on_cancel()

    # --- reading ------------------------------------------------------------

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
        self._editor.key_processor.reset()
        with set_app(self._editor):
            self._buffer.load_history_if_not_yet_loaded()
        self._report()
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
        # An Esc (or the start of any sequence) stays in the parser until we
        # say no more bytes follow.
        loop = asyncio.get_running_loop()
        self._flush = loop.call_later(ESCAPE_TIMEOUT_S, self._flush_keys)

    def _flush_keys(self) -> None:
        self._flush = None
        if self._attached:
            self.handle(self._keys.flush_keys(), flushed=True)

    # --- editing ------------------------------------------------------------

    def _own_bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        @bindings.add("c-c")
        def _cancel(_event: KeyPressEvent) -> None:
            self._on_cancel()

        @bindings.add("c-z")
        def _suspend(_event: KeyPressEvent) -> None:
            suspend_process_group()

        @bindings.add("c-d", filter=_empty(self._buffer))
        def _leave(_event: KeyPressEvent) -> None:
            self.leave_requested = True

        return bindings

    def _accept(self, buffer: Buffer) -> bool:
        """Enter (the prompt's own binding): queue the line; the buffer adds it to history."""
        line = buffer.text.strip()
        buffer.document = Document(line)
        if line:
            self._queue.append(line)
            self._on_queued(line)
        return False

    def _report(self) -> None:
        shown = show_cursor(self._buffer.text, self._buffer.cursor_position)
        if shown != self._shown:
            self._shown = shown
            self._on_typing(shown)


def _empty(buffer: Buffer) -> Condition:
    return Condition(lambda: not buffer.text)
