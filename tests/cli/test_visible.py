"""Untrusted text on the terminal: every control character shown, none obeyed (issue 27 §3).

The oracle for "unsafe" is independent of `navagent.core.visible`: Unicode's
own categories (Cc: C0, DEL, C1; Cf: format characters such as bidi
overrides; Zl, Zp: line and paragraph separators; Cs: lone surrogates), less
newline, tab, ZWJ and ZWNJ. Each surface the CLI prints untrusted text on is
checked as a class: whatever hostile text reaches it, its output holds no
unsafe character, and the hostile text's characters are all there, visible.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.style import Style
from rich.table import Table
from rich.text import Text

from navagent.cli.consoles import SafeConsole, make_console
from navagent.cli.markdown_stream import AnswerMarkdown
from navagent.cli.render import (
    JsonLinesSink,
    TerminalRenderer,
    format_messages,
    format_outcome,
)
from navagent.cli.sessions_view import export_session, sessions_table, show_sessions
from navagent.cli.slash import SlashState, handle_slash_command
from navagent.core.agent_events import (
    AgentEvent,
    AgentNotice,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from navagent.core.events import RefusalDelta, TextDelta, ThinkingDelta
from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.sessions import SessionStore, SessionSummary
from navagent.core.tools import ToolOutcome
from navagent.core.visible import is_unsafe, shell_line, visible

_KEPT = "\n\t\u200c\u200d"


def unsafe(char: str) -> bool:
    """The test's own definition: what a terminal may obey or not show."""
    return char not in _KEPT and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def unsafe_in(text: str) -> list[str]:
    return sorted({repr(char) for char in text if unsafe(char)})


ATTACKS = [
    "\x1b]52;c;aGVsbG8=\x07",  # OSC 52: write the clipboard
    "\x1b]0;PWNED\x07",  # OSC 0: the window title
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b[2J\x1b[H",  # clear the screen, home
    "\x9b2J",  # C1 CSI: clear the screen
    "\x1b[8mhidden\x1b[0m",  # conceal
    "\rover\x08\x07\x0b\x0c",  # overdraw, backspace, bell, VT, FF
    "\u202eevil\u202c \u2066iso\u2069 \u200b\ufeff\u00ad\U000e0041",  # bidi, invisibles, tags
    "\x00\x7f\x85\u2028\u2029",
]
"""One of each kind of sequence a model, a tool or a cassette could send."""

CONTROLS = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]] + [
    "\u061c",
    "\u200b",
    "\u200e",
    "\u202a",
    "\u202e",
    "\u2028",
    "\u2066",
    "\u2069",
    "\ufeff",
    "\U000e0001",
]

# Any text, controls and lone surrogates included, with controls and attacks mixed in often.
hostile_text = st.lists(
    st.one_of(
        st.text(st.characters(codec=None, exclude_categories=()), max_size=8),
        st.sampled_from(CONTROLS),
        st.sampled_from(ATTACKS),
    ),
    max_size=12,
).map("".join)


# --- the neutralising function -------------------------------------------------


@given(hostile_text)
def test_visible_output_holds_no_control_but_newline_and_tab(text: str) -> None:
    shown = visible(text)
    assert unsafe_in(shown) == []
    assert visible(shown) == shown  # idempotent: nothing left to replace


@given(hostile_text)
def test_visible_changes_exactly_the_unsafe_characters(text: str) -> None:
    assert [is_unsafe(char) for char in text] == [unsafe(char) for char in text]
    if not any(unsafe(char) for char in text):
        assert visible(text) == text


_TOKEN = re.compile(r"\^([@-_?])|\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\U([0-9a-f]{8})")


def decode(shown: str) -> str:
    """Read the visible tokens back (only for text without a literal `^` or backslash)."""

    def char(match: re.Match[str]) -> str:
        caret, *codes = match.groups()
        if caret is not None:
            return "\x7f" if caret == "?" else chr(ord(caret) - 0x40)
        return chr(int(next(code for code in codes if code), 16))

    return _TOKEN.sub(char, shown)


@given(hostile_text.filter(lambda text: "^" not in text and "\\" not in text))
def test_the_visible_form_keeps_which_control_stood_where(text: str) -> None:
    assert decode(visible(text)) == text


def test_the_visible_tokens_are_the_ones_people_know() -> None:
    assert visible("\x1b[2J") == "^[[2J"
    assert visible("a\rb\x7f\x00") == "a^Mb^?^@"
    assert visible("\x9b2J") == "\\x9b2J"
    assert visible("\u202eevil") == "\\u202eevil"
    assert visible("tab\tand\nnewline stay, 👨‍👩‍👧 too") == "tab\tand\nnewline stay, 👨‍👩‍👧 too"


@given(st.lists(hostile_text, min_size=1, max_size=6))
def test_shell_line_quotes_each_argument_and_hides_nothing(argv: list[str]) -> None:
    line = shell_line(argv)
    assert unsafe_in(line) == []
    assert "\n" not in line or all("\n" in arg for arg in argv if "\n" in arg)
    assert shlex.split(line) == [visible(arg) for arg in argv]


# --- the console net ----------------------------------------------------------


def plain_terminal(file: io.StringIO, console_type: type[Console] = SafeConsole) -> Console:
    """A terminal console that writes no styles: any escape in its output came from the text."""
    return console_type(file=file, force_terminal=True, color_system=None, width=60)


@settings(max_examples=60, deadline=None)
@given(hostile_text)
def test_a_safe_console_never_passes_a_control_from_any_renderable(text: str) -> None:
    out = io.StringIO()
    console = plain_terminal(out)
    table = Table("column")
    table.add_row(text)
    for renderable in [Text(text), Markdown(text), table]:
        console.print(renderable)
    console.out(text)
    console.print(text, markup=False)
    assert unsafe_in(out.getvalue()) == []


def test_a_safe_console_drops_a_hyperlink_that_would_carry_an_escape() -> None:
    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="truecolor", width=60)
    console.print(Text("click", style=Style(link="http://a\x1b]52;c;aGk=\x07")))
    console.print(Text("fine", style=Style(link="https://example.com/ok")))
    assert "\x1b]52" not in out.getvalue() and "\x07" not in out.getvalue()
    assert "https://example.com/ok" in out.getvalue()  # a clean link stays a link


def test_only_piped_stdout_keeps_the_text_unchanged() -> None:
    text = "A \x1b]0;T\x07 \x9b2J"
    piped_out, piped_err = io.StringIO(), io.StringIO()
    make_console(file=piped_out).out(text)
    make_console(file=piped_err, stderr=True).out(text)
    assert "\x1b]0;T" in piped_out.getvalue() and "\x9b" in piped_out.getvalue()
    assert unsafe_in(piped_err.getvalue()) == []


# --- every surface that prints untrusted text ------------------------------------


def _call(name: str, text: str) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=json.dumps({"name": text, "command": text}))


def _log(text: str) -> tuple[Message, ...]:
    call = _call("sandbox_create", text)
    return (
        SystemMessage(content=text),
        UserMessage(content=text),
        AssistantMessage(content=text, refusal=text, tool_calls=(call,)),
        ToolResultMessage(tool_call_id="c1", content=text + "\nsecond " + text),
        AssistantMessage(tool_calls=(ToolCall(id="c2", name=text, arguments=text),)),
        ToolResultMessage(tool_call_id="c2", content=text),
    )


def _slash(command: str, text: str) -> RenderableType:
    schema = {"properties": {"x": {"description": text}}}
    tool = Tool(name=text, description=text, parameters=schema)
    state = SlashState(tools=(tool,), log=_log(text))
    output = handle_slash_command(command, state)[0].output
    assert output is not None
    return output


def _summary(text: str) -> SessionSummary:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return SessionSummary(
        id="0123456789", name=text, cluster=text, created_at=now, updated_at=now,
        message_count=2, preview=text,
    )  # fmt: skip


STATIC_SURFACES: dict[str, Callable[[str], RenderableType]] = {
    "/history, resumed replay": lambda t: format_messages(_log(t)),
    "/history, resumed replay, --no-markdown": lambda t: format_messages(_log(t), markdown=False),
    "an answer replayed": lambda t: AnswerMarkdown(t),
    "/show": lambda t: _slash("/show", t),
    "/show N": lambda t: _slash("/show 1", t),
    "/show N of a call with unparsable arguments": lambda t: _slash("/show 2", t),
    "/tools": lambda t: _slash("/tools", t),
    "an unknown slash command": lambda t: _slash("/x" + t, t),
    "/sessions": lambda t: sessions_table([_summary(t)], width=200),
    "a failed tool's line": lambda t: format_outcome(
        ToolOutcome(call=_call(t, t), status="failed", content=t)
    ),
}


@pytest.mark.parametrize("surface", STATIC_SURFACES)
@settings(max_examples=25, deadline=None)
@given(text=hostile_text)
def test_every_surface_shows_hostile_text_without_a_control(surface: str, text: str) -> None:
    # A plain rich Console, not the net: the surface itself makes its text visible.
    out = io.StringIO()
    plain_terminal(out, Console).print(STATIC_SURFACES[surface](text))
    assert unsafe_in(out.getvalue()) == []


def _play_turn(renderer: TerminalRenderer, text: str) -> None:
    call = _call("sandbox_create", text)
    renderer.begin_turn()
    events: list[AgentEvent] = [
        ThinkingDelta(text=text),
        TextDelta(text=text),
        RefusalDelta(text=text),
        ToolStarted(index=0, call=call),
        ToolFinished(index=0, outcome=ToolOutcome(call=call, status="failed", content=text)),
        AgentNotice(text=text, level="warning"),
        TurnFinished(reason="error", message=text),
    ]
    for event in events:
        renderer(event)
    renderer.error(text)
    renderer.note(text)
    renderer.end_turn()


@pytest.mark.parametrize("markdown", [True, False], ids=["markdown", "no-markdown"])
@settings(max_examples=25, deadline=None)
@given(text=hostile_text)
def test_a_turn_shows_hostile_text_without_a_control(markdown: bool, text: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = TerminalRenderer(
        plain_terminal(out, Console), plain_terminal(err, Console), spinner=False, markdown=markdown
    )
    _play_turn(renderer, text)
    # The live region's own cursor moves (CR, up, erase line) are the only controls.
    drawn = re.sub(r"\r|\x1b\[1A|\x1b\[2K", "", out.getvalue() + err.getvalue())
    assert unsafe_in(drawn) == []


def test_json_lines_escape_everything_a_terminal_could_obey() -> None:
    stream = io.StringIO()
    attack = "".join(ATTACKS)
    JsonLinesSink(stream)(TextDelta(text=attack))
    line = stream.getvalue()
    assert line.isascii() and unsafe_in(line.rstrip("\n")) == []
    assert json.loads(line)["text"] == attack


@pytest.mark.parametrize("markdown", [True, False], ids=["markdown", "no-markdown"])
def test_a_streamed_answer_is_shown_visibly_on_a_color_terminal(markdown: bool) -> None:
    # With colours and links on (what a person has): the screen is not cleared,
    # the title not set, and every sequence is there to read.
    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="truecolor", width=200)
    renderer = TerminalRenderer(console, console, spinner=False, markdown=markdown)
    console.print("BEFORE THE ANSWER")
    answer = "".join(ATTACKS) + "\n\n`code \x1b[31m` [x](http://a\x1b]52;c;aGk=\x07/) done\n"
    renderer.begin_turn()
    for piece in re.findall(r".{1,7}", answer, flags=re.DOTALL):
        renderer(TextDelta(text=piece))
    renderer.end_turn()
    screen = pyte.Screen(200, 30)
    pyte.ByteStream(screen).feed(out.getvalue().encode())
    shown = "\n".join(screen.display)
    assert screen.title == ""
    assert "BEFORE THE ANSWER" in shown
    for token in ["^[]52;c;aGVsbG8=^G", "^[]0;PWNED^G", "^[[2J", "\\x9b2J", "^[[8mhidden"]:
        assert token in shown, token
    for token in ["^Mover^H^G^K^L", "\\u202eevil\\u202c", "\\U000e0041", "^[[31m"]:
        assert token in shown, token
    for sequence in ["\x1b]52", "\x1b]0;", "\x9b", "\x1b[2J", "\x1b[8m", "\u202e"]:
        assert sequence not in out.getvalue(), repr(sequence)


class _TerminalFile(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("on_terminal", [True, False], ids=["terminal", "piped"])
def test_nav_agent_sessions_list_and_export_show_hostile_text_visibly_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_terminal: bool
) -> None:
    monkeypatch.setenv("NAV_AGENT_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    attack = "".join(ATTACKS)
    with SessionStore() as store:
        info = store.create(name="hostile", cluster="demo")
        recorder = store.recorder(info.id)
        recorder.record_message(UserMessage(content="first " + attack))
        recorder.record_message(AssistantMessage(content="answer " + attack))

    def listing() -> int:
        return show_sessions(json_output=False, limit=10)

    def export() -> int:
        return export_session("hostile", as_json=False, output=None)

    for command, raw_when_piped in [(listing, False), (export, True)]:
        stdout = _TerminalFile() if on_terminal else io.StringIO()
        monkeypatch.setattr(sys, "stdout", stdout)
        assert command() == 0
        written = stdout.getvalue()
        if raw_when_piped and not on_terminal:  # the transcript is data: as it is
            assert "answer " + attack in written
            continue
        drawn = re.sub(r"\x1b\[[0-9;]*m", "", written)  # the table's own bold header
        assert unsafe_in(drawn) == [] and "first ^[]52;c;" in drawn, written
