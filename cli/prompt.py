"""The REPL's line editor: multi-line input and tab completion (prompt_toolkit).

Enter sends the message, except after a trailing backslash, which becomes a
line break; Esc then Enter (Meta-Enter) also inserts a line break. Pasted
text arrives as one bracketed paste and stays one message whatever it holds.
Tab completes slash commands and their arguments (tool names after `/tools`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import History
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output

from navagent.cli.prompt_wrap import wrap_prompt_at_words
from navagent.cli.slash import SLASH_COMMANDS

__all__ = ["SlashCompleter", "key_bindings", "make_prompt_session", "slash_completer"]


def key_bindings() -> KeyBindings:
    """Enter sends (a trailing backslash continues the line); Esc-Enter inserts a line break."""
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if (
            buffer.document.text_before_cursor.endswith("\\")
            and buffer.document.is_cursor_at_the_end
        ):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


class SlashCompleter(Completer):
    """Completes `/command` words and, after `/tools`, a tool name."""

    def __init__(self, tool_names: Iterable[str]) -> None:
        self._commands = [name.split()[0] for name in SLASH_COMMANDS]
        self._arguments = {"/tools": sorted(tool_names)}

    def get_completions(
        self, document: Document, _complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        """Complete the command word, or the argument of a command that takes one."""
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        word, space, argument = text.partition(" ")
        if not space:
            choices, typed = self._commands, word
        elif " " not in argument:
            choices, typed = self._arguments.get(word.lower(), []), argument
        else:
            return
        for choice in choices:
            if choice.startswith(typed):
                yield Completion(choice, start_position=-len(typed))


def slash_completer(tool_names: Iterable[str]) -> SlashCompleter:
    """The completer the prompt uses (see `SlashCompleter`)."""
    return SlashCompleter(tool_names)


def make_prompt_session(
    *,
    history: History | None = None,
    tool_names: Iterable[str] = (),
    input: Input | None = None,
    output: Output | None = None,
) -> PromptSession[str]:
    """The prompt session `nav agent` reads messages with (`input`/`output` for tests)."""
    return wrap_prompt_at_words(
        PromptSession(
            history=history,
            input=input,
            output=output,
            key_bindings=key_bindings(),
            completer=slash_completer(tool_names),
            complete_while_typing=False,
            multiline=False,
        )
    )
