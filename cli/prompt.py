"""The REPL's line editor: multi-line input and tab completion (prompt_toolkit).

Enter sends the message, except after a trailing backslash, which becomes a
line break; Esc then Enter (Meta-Enter) also inserts a line break. Up and
Down browse the line history (kept across runs); Ctrl-R searches it backwards
and Enter sends the match (Esc or an arrow keeps it to edit). Ctrl-Z
suspends `nav agent` to the shell (`fg` brings it back). Pasted
text arrives as one bracketed paste and stays one message whatever it holds.
Tab completes slash commands and their arguments (tool names after `/tools`,
saved sessions after `/resume`, routing hints after `/model` once the gateway
has listed them), whatever the case typed (`/TO` completes `/tools`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping

from prompt_toolkit import PromptSession
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import is_searching
from prompt_toolkit.history import History
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.bindings import search
from prompt_toolkit.output import Output
from prompt_toolkit.output.plain_text import PlainTextOutput
from prompt_toolkit.utils import is_dumb_terminal

from navagent.cli.prompt_wrap import wrap_prompt_at_words
from navagent.cli.slash import SLASH_COMMANDS
from navagent.core.visible import is_unsafe

__all__ = [
    "ArgumentSource",
    "SlashCompleter",
    "key_bindings",
    "erased_when_sent",
    "make_prompt_session",
    "slash_completer",
    "terminal_as_declared",
]


def key_bindings() -> KeyBindings:
    """Enter sends (a trailing backslash continues the line); Esc-Enter inserts a line break.

    In a reverse search (Ctrl-R) Enter takes the match and sends it, as a
    shell does; these bindings never act on the search field itself.
    """
    bindings = KeyBindings()

    bindings.add("enter", filter=is_searching)(search.accept_search_and_accept_input)

    @bindings.add("enter", filter=~is_searching)
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if (
            buffer.document.text_before_cursor.endswith("\\")
            and buffer.document.is_cursor_at_the_end
        ):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            _erase_when_taller_than_the_window(event)
            buffer.validate_and_handle()

    @bindings.add("escape", "enter", filter=~is_searching)
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


@contextlib.contextmanager
def terminal_as_declared() -> Iterator[None]:
    """Within the block, prompt_toolkit writes no control sequence a dumb terminal lacks.

    On `TERM=dumb` prompt_toolkit reads lines with its plain prompt (no
    cursor movement), but its default output still turns on bracketed paste
    and shows the cursor, which such a terminal prints as junk: every prompt
    session made in the block writes through a `PlainTextOutput` instead,
    which drops them. Elsewhere nothing changes.
    """
    if not is_dumb_terminal():
        yield
        return
    with create_app_session(output=PlainTextOutput(sys.stdout)):
        yield


def _erase_when_taller_than_the_window(event: KeyPressEvent) -> None:
    """Have prompt_toolkit erase a message taller than the window when it is sent.

    It would leave only the last screenful of it (the window scrolled), so
    the start - the `nav>` row, the first lines - would never reach the
    scrollback; the REPL prints it whole instead (`erased_when_sent`).
    """
    info = event.app.layout.current_window.render_info
    if info is not None and info.content_height > info.window_height:
        event.app.erase_when_done = True


def erased_when_sent(session: PromptSession[str]) -> bool:
    """The message just sent was erased from the screen (too tall): print it whole.

    Resets the flag, so the next prompt is left on screen as usual.
    """
    erased, session.app.erase_when_done = session.app.erase_when_done, False
    return erased


ArgumentSource = Callable[[], Iterable[str]]
"""The current choices for a command's argument (asked at each Tab)."""


class SlashCompleter(Completer):
    """Completes `/command` words and, after a command that takes one, its argument."""

    def __init__(
        self, tool_names: Iterable[str], arguments: Mapping[str, ArgumentSource] | None = None
    ) -> None:
        self._commands = [name.split()[0] for name in SLASH_COMMANDS]
        tools = sorted(tool_names)
        self._arguments: dict[str, ArgumentSource] = {"/tools": lambda: tools, **(arguments or {})}

    def set_argument_source(self, command: str, source: ArgumentSource) -> None:
        """Complete `command`'s argument from `source` from now on (e.g. `/model`)."""
        self._arguments[command.lower()] = source

    def get_completions(
        self, document: Document, _complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        """Complete the command word, or the argument of a command that takes one."""
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        word, space, argument = text.partition(" ")
        choices: Iterable[str]
        if not space:
            choices, typed = self._commands, word
        elif " " not in argument and word.lower() in self._arguments:
            choices, typed = self._arguments[word.lower()](), argument
        else:
            return
        folded = typed.casefold()
        for choice in choices:
            # A choice from a gateway (a routing hint) with a control or bidi
            # character would reach the menu and the input line raw: not offered.
            if choice.casefold().startswith(folded) and not any(map(is_unsafe, choice)):
                yield Completion(choice, start_position=-len(typed))


def slash_completer(
    tool_names: Iterable[str], arguments: Mapping[str, ArgumentSource] | None = None
) -> SlashCompleter:
    """The completer the prompt uses (see `SlashCompleter`)."""
    return SlashCompleter(tool_names, arguments)


def make_prompt_session(
    *,
    history: History | None = None,
    tool_names: Iterable[str] = (),
    arguments: Mapping[str, ArgumentSource] | None = None,
    input: Input | None = None,
    output: Output | None = None,
) -> PromptSession[str]:
    """The prompt session `nav agent` reads messages with (`input`/`output` for tests).

    `arguments` completes more command arguments, e.g. `{"/resume": session_names}`.
    """
    return wrap_prompt_at_words(
        PromptSession(
            history=history,
            input=input,
            output=output,
            key_bindings=key_bindings(),
            completer=slash_completer(tool_names, arguments),
            complete_while_typing=False,
            multiline=False,
            enable_suspend=True,  # Ctrl-Z stops nav agent as it stops any shell program
        )
    )
