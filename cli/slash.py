"""REPL slash commands as one pure function (pydantic-ai clai's `handle_slash_command`).

`handle_slash_command(command, state)` returns what to show and the new
state; it performs no I/O, so every command is tested without a terminal.
The REPL reacts to the new state: `conversation` changing means "start a
new conversation" (`/clear`), an `exit_code` means leave.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from navagent.cli.render import format_messages
from navagent.core.messages import Message, Tool

__all__ = ["SLASH_COMMANDS", "SlashResult", "SlashState", "handle_slash_command"]

SLASH_COMMANDS: dict[str, str] = {
    "/help": "show this help",
    "/tools": "list the tools the agent can use",
    "/clear": "start a new conversation (the current one stays saved)",
    "/history": "show the whole conversation, including compacted parts",
    "/exit": "leave (also: exit, quit, Ctrl-D)",
}
_KEYS = (
    "Keys: Enter sends · Ctrl-C cancels a running turn or clears the line · "
    "Ctrl-D on an empty line leaves · pasted text may span lines"
)


@dataclass(frozen=True, slots=True)
class SlashState:
    """What the slash commands can see; the REPL refreshes `log` before each call."""

    tools: tuple[Tool, ...] = ()
    """The tools offered to the model."""
    confirm_tools: frozenset[str] = frozenset()
    """Tools that ask before running (unless `--yes`)."""
    log: tuple[Message, ...] = ()
    """The current conversation's full log, compacted turns included."""
    conversation: int = 0
    """Bumped by `/clear`; the REPL starts a new conversation when it changes."""
    assume_yes: bool = False
    """`--yes` was given: nothing asks before running."""


@dataclass(frozen=True, slots=True)
class SlashResult:
    """What a slash command produced."""

    output: RenderableType | None = None
    """Shown on stderr; None shows nothing."""
    exit_code: int | None = None
    """Leave the REPL with this status."""


def handle_slash_command(command: str, state: SlashState) -> tuple[SlashResult, SlashState]:
    """Run one slash command line (e.g. `/history`) against `state`.

    Arguments after the command word are ignored; an unknown command gets a
    hint listing the known ones.
    """
    word = command.strip().split(maxsplit=1)[0].lower() if command.strip() else "/"
    match word:
        case "/help" | "/?":
            return SlashResult(_help()), state
        case "/tools":
            return SlashResult(_tools(state)), state
        case "/clear":
            return (
                SlashResult(Text("Started a new conversation.", style="dim")),
                replace(state, log=(), conversation=state.conversation + 1),
            )
        case "/history":
            return SlashResult(_history(state.log)), state
        case "/exit" | "/quit":
            return SlashResult(exit_code=0), state
        case _:
            known = ", ".join(SLASH_COMMANDS)
            return (
                SlashResult(
                    Text(f"Unknown command {word}; try /help. Commands: {known}", style="yellow")
                ),
                state,
            )


def _help() -> RenderableType:
    table = Table.grid(padding=(0, 2))
    for name, description in SLASH_COMMANDS.items():
        table.add_row(Text(name, style="bold"), description)
    table.add_row("", "")
    table.add_row("", Text(_KEYS, style="dim"))
    return table


def _tools(state: SlashState) -> RenderableType:
    table = Table(box=None, show_header=True, header_style="bold", padding=(0, 2))
    table.add_column("tool")
    table.add_column("what it does")
    for tool in state.tools:
        description = tool.description.split(". ")[0].rstrip(".")
        if tool.name in state.confirm_tools:
            description += " (runs without asking, --yes)" if state.assume_yes else " (asks first)"
        table.add_row(tool.name, description)
    return table


def _history(log: tuple[Message, ...]) -> RenderableType:
    if not log:
        return Text("Nothing has been said in this conversation yet.", style="dim")
    header = Text(f"{len(log)} messages (the full log, compacted turns included):\n", "dim")
    return Text.assemble(header, format_messages(log))
