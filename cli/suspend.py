"""Ctrl-Z or SIGTSTP while a turn runs: stop as any shell program does, come back drawing.

At the prompt prompt_toolkit suspends on Ctrl-Z itself (`enable_suspend`).
While a turn runs the terminal is in raw mode (the type-ahead reads keys), so
Ctrl-Z arrives as a key rather than as a signal: the type-ahead sends SIGTSTP
to the process group, as the terminal would have. `stop_on_sigtstp` catches
that signal (and one sent with `kill -TSTP`) in the event loop, lets the
terminal go (`release`: erase the live lines, leave raw mode and bracketed
paste, show the cursor), stops the process for real, and once the shell
continues it (`fg`, SIGCONT) takes the terminal back (`retake`) while the
turn goes on where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import termios
from collections.abc import Callable, Iterator

from prompt_toolkit.application.current import get_app_or_none

__all__ = ["stop_on_sigtstp", "suspend_process_group"]


def suspend_process_group() -> None:
    """Do what Ctrl-Z does on a terminal in cooked mode: SIGTSTP to the foreground group."""
    os.kill(0, signal.SIGTSTP)


@contextlib.contextmanager
def stop_on_sigtstp(release: Callable[[], None], retake: Callable[[], None]) -> Iterator[None]:
    """Within the block, SIGTSTP releases the terminal, stops, and retakes it on continue.

    Without signals (not the main thread, not POSIX) the block runs as is.
    """
    loop = asyncio.get_running_loop()

    def stop() -> None:
        modes = _terminal_modes()
        release()
        try:
            loop.remove_signal_handler(signal.SIGTSTP)  # back to the default action: stop
            # The signal goes to this thread, so the process stops before kill
            # returns; it returns after SIGCONT (`fg`). In an orphaned process
            # group (no shell with job control) the kernel drops it: no stop.
            os.kill(os.getpid(), signal.SIGTSTP)
        finally:
            loop.add_signal_handler(signal.SIGTSTP, stop)
            _set_terminal_modes(modes)  # as before the stop, whatever the shell left
            retake()
            _redraw_prompt()

    try:
        loop.add_signal_handler(signal.SIGTSTP, stop)
    except (NotImplementedError, RuntimeError, ValueError):  # no signals here
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTSTP)


TerminalModes = list[int | list[bytes | int]]


def _terminal_modes() -> TerminalModes | None:
    try:
        return termios.tcgetattr(sys.stdin.fileno())
    except (termios.error, OSError, ValueError):  # not a terminal
        return None


def _set_terminal_modes(modes: TerminalModes | None) -> None:
    if modes is None:
        return
    try:
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, modes)
    except (termios.error, OSError, ValueError):
        pass


def _redraw_prompt() -> None:
    """Draw a question shown when the process stopped (`Run it?`) again, below the shell."""
    app = get_app_or_none()
    if app is not None and app.is_running:
        app.renderer.reset()  # what it drew is above the shell's lines now
        app.invalidate()
