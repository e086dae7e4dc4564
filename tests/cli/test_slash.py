"""Slash commands: a pure function from (command, state) to (result, state)."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from rich.console import Console

from navagent.cli.slash import SLASH_COMMANDS, SlashAction, SlashState, handle_slash_command
from navagent.core.messages import AssistantMessage, ToolResultMessage, UserMessage
from navagent.core.tools import TOOLS
from tests.core.fakes import call

LOG = (
    UserMessage(content="list my sandboxes"),
    AssistantMessage(tool_calls=(call("c1"),)),
    ToolResultMessage(tool_call_id="c1", content="NAME  PHASE\ndev-box  Ready\npy-worker  Ready"),
    AssistantMessage(content="You have 2 sandboxes."),
)
STATE = SlashState(tools=TOOLS, confirm_tools=frozenset({"sandbox_create", "sandbox_delete"}))


def shown(result) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(result.output)
    return buffer.getvalue()


def test_slash_help_lists_every_command() -> None:
    result, state = handle_slash_command("/help", STATE)
    assert state is STATE and result.exit_code is None
    text = shown(result)
    for name in SLASH_COMMANDS:
        assert name in text
    assert "Ctrl-C" in text


def test_slash_tools_lists_the_nine_tools_and_which_ask_first() -> None:
    result, _ = handle_slash_command("/tools", STATE)
    lines = shown(result).splitlines()
    for tool in TOOLS:
        assert any(line.strip().startswith(tool.name) for line in lines), tool.name
    asking = {line.split()[0] for line in lines if "(asks first)" in line}
    assert asking == {"sandbox_create", "sandbox_delete"}


def test_slash_tools_says_yes_skips_the_question() -> None:
    result, _ = handle_slash_command("/tools", replace(STATE, assume_yes=True))
    text = shown(result)
    assert "(asks first)" not in text and text.count("runs without asking") == 2


def test_slash_clear_empties_the_log_and_bumps_the_conversation() -> None:
    before = SlashState(tools=TOOLS, log=LOG, conversation=3)
    result, after = handle_slash_command("/clear", before)
    assert after.log == () and after.conversation == 4
    assert after.tools == before.tools
    assert result.exit_code is None and "new conversation" in shown(result)


def test_slash_history_shows_calls_and_first_lines_of_results() -> None:
    result, state = handle_slash_command("/history", SlashState(log=LOG))
    text = shown(result)
    assert state.log == LOG
    assert "4 messages" in text
    assert "you: list my sandboxes" in text
    assert "→ sandbox_list" in text
    assert "NAME  PHASE  (+2 lines)" in text
    assert "dev-box  Ready" not in text
    assert "agent: You have 2 sandboxes." in text


@pytest.mark.parametrize("markdown", [True, False])
def test_slash_history_renders_answers_as_the_session_shows_them(markdown: bool) -> None:
    log = (UserMessage(content="hi"), AssistantMessage(content="Use **bold** `nav` here."))
    result, _ = handle_slash_command("/history", SlashState(log=log, markdown=markdown))
    text = shown(result)
    raw = "**bold** `nav`" in text
    assert raw is not markdown  # rendered markdown drops the syntax; --no-markdown keeps it
    assert "bold" in text


@pytest.mark.parametrize("size", [1, 2, 3])
def test_slash_history_counts_messages_in_the_right_number(size: int) -> None:
    log = LOG[:size]
    result, _ = handle_slash_command("/history", SlashState(log=log))
    first = shown(result).splitlines()[0]
    assert first.startswith(f"{size} message{'' if size == 1 else 's'} (the full log")


def test_slash_history_of_an_empty_conversation_says_so() -> None:
    result, _ = handle_slash_command("/history", SlashState())
    assert "Nothing has been said" in shown(result)


@pytest.mark.parametrize("command", ["/exit", "/quit", "/EXIT", "/exit now"])
def test_slash_exit_leaves_with_status_0(command) -> None:
    result, _ = handle_slash_command(command, STATE)
    assert result.exit_code == 0 and result.output is None


@pytest.mark.parametrize("command", ["/frobnicate", "/", "/ help"])
def test_slash_unknown_command_gets_a_hint_and_changes_nothing(command) -> None:
    result, state = handle_slash_command(command, STATE)
    assert state is STATE and result.exit_code is None
    text = shown(result)
    assert "try /help" in text and "/history" in text


def test_slash_arguments_after_the_command_are_ignored() -> None:
    with_args, _ = handle_slash_command("/help me please", STATE)
    plain, _ = handle_slash_command("/help", STATE)
    assert shown(with_args) == shown(plain)


def test_slash_tools_name_shows_full_description_and_arguments() -> None:
    result, _ = handle_slash_command("/tools sandbox_create", STATE)
    text = shown(result)
    create = next(tool for tool in TOOLS if tool.name == "sandbox_create")
    assert " ".join(create.description.split()) in " ".join(text.split())
    assert "name: string, optional" in text and "command: string, optional" in text
    assert "sandbox_list" not in text
    missing, _ = handle_slash_command("/tools nope", STATE)
    assert "No tool named 'nope'" in shown(missing)


def test_slash_show_lists_calls_and_prints_one_full_output() -> None:
    listing, _ = handle_slash_command("/show", SlashState(log=LOG))
    assert "1  sandbox_list" in shown(listing)
    full, _ = handle_slash_command("/show 1", SlashState(log=LOG))
    assert "dev-box  Ready\npy-worker  Ready" in shown(full)
    for bad in ("/show 2", "/show x"):
        result, _ = handle_slash_command(bad, SlashState(log=LOG))
        assert "from 1 to 1" in shown(result)


def test_slash_retry_compact_and_model_ask_the_repl_to_act() -> None:
    retry, _ = handle_slash_command("/retry", SlashState(log=LOG))
    assert retry.action == SlashAction("retry", "list my sandboxes")
    nothing, _ = handle_slash_command("/retry", SlashState())
    assert nothing.action is None and "Nothing to retry" in shown(nothing)
    compact, _ = handle_slash_command("/compact", STATE)
    assert compact.action == SlashAction("compact")
    # /model asks the gateway first (the REPL does): the pure function only passes it on.
    model, state = handle_slash_command("/model fast", STATE)
    assert model.action == SlashAction("model", "fast") and state is STATE
    current, _ = handle_slash_command("/model", state)
    assert current.action == SlashAction("model", "") and current.output is None


@pytest.mark.parametrize(
    ("command", "action"),
    [
        ("/sessions", SlashAction("sessions")),
        ("/resume", SlashAction("sessions")),  # no name: the list to pick from
        ("/resume incident-42", SlashAction("resume", "incident-42")),
        ("/RESUME Work", SlashAction("resume", "Work")),  # names keep their case
        ("/export", SlashAction("export")),
        ("/export ~/notes/run.md", SlashAction("export", "~/notes/run.md")),
    ],
)
def test_slash_session_commands_ask_the_repl_to_act(command, action) -> None:
    result, state = handle_slash_command(command, STATE)
    assert result.action == action and state is STATE
