"""REPL slash commands as one pure function (pydantic-ai clai's `handle_slash_command`).

`handle_slash_command(command, state)` returns what to show and the new
state; it performs no I/O, so every command is tested without a terminal.
The REPL reacts to the new state: `conversation` changing means "start a
new conversation" (`/clear`), an `exit_code` means leave, and an `action`
is work only the REPL can do (take the last exchange back and run it again,
compact, ask the gateway for its routes, read or switch saved sessions,
write an export).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from navagent.cli.render import format_call, format_messages, plural
from navagent.core.messages import AssistantMessage, Message, Tool, ToolCall, ToolResultMessage
from navagent.core.visible import visible

__all__ = [
    "SLASH_COMMANDS",
    "SlashAction",
    "SlashResult",
    "SlashState",
    "handle_slash_command",
    "tool_calls_in",
]

SLASH_COMMANDS: dict[str, str] = {
    "/help": "show this help",
    "/tools [NAME]": "the tools the agent can use, with their arguments",
    "/show [N]": "the full output of tool call N (no N: list the calls)",
    "/retry": "send your last message again; its new answer replaces the last one",
    "/compact": "summarize older turns now to free context",
    "/model [HINT]": "list the gateway's routes (routing hints), or switch the next turns to one",
    "/clear": "start a new conversation (the current one stays saved)",
    "/record NAME": "write this conversation as scenario NAME (and its cassettes) when it ends",
    "/history": "show the whole conversation, including compacted parts",
    "/sessions": "list saved sessions",
    "/resume NAME": "continue a saved session (Tab completes names; this one stays saved)",
    "/export [FILE]": "write this conversation as markdown (FILE.json: JSON) to FILE",
    "/exit": "leave (also: exit, quit, Ctrl-D)",
}
_KEYS = (
    "Keys: Enter sends · Esc then Enter, or a trailing \\, starts a new line · "
    "Tab completes commands · while the agent works, type (the prompt's editing keys work) "
    "and press Enter to queue a message for it; Ctrl-C or Esc cancels the turn · Esc or "
    "Ctrl-D at Run it? [y/N] says no · Ctrl-C at the prompt clears the line · "
    "Up recalls earlier lines, queued ones too · Ctrl-D on an empty line leaves · "
    "pasted text stays one message"
)
_ACTIONS: dict[str, Literal["compact", "model", "sessions", "export"]] = {
    "/compact": "compact",
    "/model": "model",
    "/sessions": "sessions",
    "/export": "export",
}
"""Commands that are work for the REPL alone, with their argument."""
_LIST_CALLS = 20
"""`/show` without N lists this many of the latest calls."""


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
    routing_hint: str = "agent"
    """The route the next turns ask the gateway for."""
    markdown: bool = True
    """`/history` renders answers as markdown (False: `--no-markdown`, raw text)."""


@dataclass(frozen=True, slots=True)
class SlashAction:
    """Work a slash command asks the REPL to do."""

    kind: Literal["retry", "compact", "model", "record", "sessions", "resume", "export"]
    argument: str = ""


@dataclass(frozen=True, slots=True)
class SlashResult:
    """What a slash command produced."""

    output: RenderableType | None = None
    """Shown on stderr; None shows nothing."""
    exit_code: int | None = None
    """Leave the REPL with this status."""
    action: SlashAction | None = None
    """Something for the REPL to do after showing `output`."""


def handle_slash_command(command: str, state: SlashState) -> tuple[SlashResult, SlashState]:
    """Run one slash command line (e.g. `/show 2`) against `state`.

    An unknown command gets a hint listing the known ones.
    """
    word, _, argument = command.strip().partition(" ")
    word, argument = (word.lower() or "/"), argument.strip()
    view = _VIEWS.get(word)
    if view is not None:
        return SlashResult(view(state, argument)), state
    match word:
        case "/retry":
            last = _last_user_text(state.log)
            if last is None:
                return SlashResult(_note("Nothing to retry yet.")), state
            return SlashResult(action=SlashAction("retry", last)), state
        case "/compact" | "/model" | "/sessions" | "/export":
            return SlashResult(action=SlashAction(_ACTIONS[word], argument)), state
        case "/resume":
            return SlashResult(
                action=SlashAction("resume" if argument else "sessions", argument)
            ), state
        case "/record":
            if not argument:
                return SlashResult(
                    _note("Usage: /record NAME (a scenario id, e.g. gpu-logs)")
                ), state
            return SlashResult(action=SlashAction("record", argument)), state
        case "/clear":
            return (
                SlashResult(Text("Started a new conversation.", style="dim")),
                replace(state, log=(), conversation=state.conversation + 1),
            )
        case "/exit" | "/quit":
            return SlashResult(exit_code=0), state
        case _:
            known = ", ".join(name.split()[0] for name in SLASH_COMMANDS)
            return (
                SlashResult(
                    Text(
                        f"Unknown command {visible(word)}; try /help. Commands: {known}",
                        style="yellow",
                    )
                ),
                state,
            )


def _record(name: str) -> SlashResult:
    if not name:
        return SlashResult(_note("Usage: /record NAME (a scenario name, e.g. gpu-trainer-logs)"))
    return SlashResult(action=SlashAction("record", name))


def _note(text: str) -> Text:
    return Text(text, style="dim")


def _last_user_text(log: tuple[Message, ...]) -> str | None:
    for message in reversed(log):
        if message.role == "user" and message.content.strip():
            return message.content
    return None


def tool_calls_in(log: tuple[Message, ...]) -> list[tuple[ToolCall, str | None]]:
    """Every tool call of the conversation, in order, with its result (None if missing)."""
    results = {m.tool_call_id: m.content for m in log if isinstance(m, ToolResultMessage)}
    return [
        (call, results.get(call.id))
        for message in log
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    ]


def _show(log: tuple[Message, ...], argument: str) -> RenderableType:
    calls = tool_calls_in(log)
    if not calls:
        return _note("No tool has run in this conversation yet.")
    if not argument:
        first = max(len(calls) - _LIST_CALLS, 0)
        text = Text("Tool calls (/show N for the full output):\n", style="dim")
        for number, (call, _) in enumerate(calls[first:], start=first + 1):
            text.append(f"  {number:>3}  {format_call(call)}\n")
        text.rstrip()
        return text
    if not argument.isdigit() or not 1 <= int(argument) <= len(calls):
        return Text(f"/show takes a call number from 1 to {len(calls)}", style="yellow")
    call, result = calls[int(argument) - 1]
    header = Text(f"[{argument}] {format_call(call)}", style="bold")
    body = visible(result) if result is not None else "(no result recorded)"
    return Text.assemble(header, "\n", body)


def _help() -> RenderableType:
    table = Table.grid(padding=(0, 2))
    for name, description in SLASH_COMMANDS.items():
        table.add_row(Text(name, style="bold"), description)
    table.add_row("", "")
    table.add_row("", Text(_KEYS, style="dim"))
    return table


def _tools(state: SlashState, name: str) -> RenderableType:
    tools = [tool for tool in state.tools if not name or tool.name == name]
    if not tools:
        known = ", ".join(tool.name for tool in state.tools)
        return Text(f"No tool named {visible(repr(name))}; the tools are: {known}", "yellow")
    text = Text()
    for tool in tools:
        text.append(visible(tool.name), style="bold")
        if tool.name in state.confirm_tools:
            text.append(" (runs without asking, --yes)" if state.assume_yes else " (asks first)")
        text.append("\n  " + visible(tool.description) + "\n")
        for line in _parameters(tool.parameters):
            text.append("    " + visible(line) + "\n", style="dim")
    text.rstrip()
    return text


def _parameters(schema: dict[str, Any]) -> list[str]:
    """One line per argument: `name: type, required - description`."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    lines = []
    for key, spec in properties.items():
        kinds = spec.get("type") or [option.get("type") for option in spec.get("anyOf", ())]
        kinds = [kinds] if isinstance(kinds, str) else [k for k in kinds if k and k != "null"]
        flags = [" | ".join(kinds) or "any", "required" if key in required else "optional"]
        description = spec.get("description", "")
        lines.append(f"{key}: {', '.join(flags)}" + (f" - {description}" if description else ""))
    if not lines:
        lines.append("(no arguments)")
    return lines


def _history(log: tuple[Message, ...], *, markdown: bool) -> RenderableType:
    if not log:
        return Text("Nothing has been said in this conversation yet.", style="dim")
    header = Text(f"{plural(len(log), 'message')} (the full log, compacted turns included):", "dim")
    return Group(header, format_messages(log, markdown=markdown))


_VIEWS: dict[str, Callable[[SlashState, str], RenderableType]] = {
    "/help": lambda _state, _argument: _help(),
    "/?": lambda _state, _argument: _help(),
    "/tools": _tools,
    "/show": lambda state, argument: _show(state.log, argument),
    "/history": lambda state, _argument: _history(state.log, markdown=state.markdown),
}
"""Commands that only show something: (state, argument) -> what to print."""
