"""The terminal sink: what goes to stdout (the answer only) and what to stderr."""

from __future__ import annotations

import io
import json

import pyte
import pytest
from pydantic import TypeAdapter
from rich.console import Console

from navagent.cli.consoles import wrap_at_words
from navagent.cli.render import (
    CANCELLED_NOTE,
    INTERRUPTED_NOTE,
    PARTIAL_NOTE,
    JsonLinesSink,
    TerminalRenderer,
    format_arguments,
    format_messages,
    format_outcome,
    format_usage,
)
from navagent.core.agent import PAUSED_NOTE, REFUSED_NOTE
from navagent.core.agent_events import (
    AgentEvent,
    AgentNotice,
    ContextCompacted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from navagent.core.events import (
    ChatError,
    MessageComplete,
    RefusalDelta,
    StreamError,
    TextDelta,
    ThinkingDelta,
    TurnEnd,
    Usage,
)
from navagent.core.messages import AssistantMessage, ToolCall
from navagent.core.nav_cli import strip_ansi
from navagent.core.tools import ToolOutcome
from tests.cli.harness import capture_console
from tests.cli.terminal import ReflowScreen
from tests.core.fakes import call


class Screens:
    def __init__(self) -> None:
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.renderer = TerminalRenderer(capture_console(self.out), capture_console(self.err))

    def play(self, *events: AgentEvent) -> None:
        self.renderer.begin_turn()
        for event in events:
            self.renderer(event)
        self.renderer.end_turn()


def outcome(status: str, *, content: str = "result text", **fields) -> ToolOutcome:
    return ToolOutcome(
        call=call("c1", "sandbox_get", name="dev-box"), status=status, content=content, **fields
    )


def test_render_answer_goes_to_stdout_and_everything_else_to_stderr() -> None:
    screens = Screens()
    tool_call = call("c1", "sandbox_get", name="dev-box")
    screens.play(
        ThinkingDelta(text="Let me look."),
        ToolStarted(index=0, call=tool_call),
        ToolFinished(index=0, outcome=outcome("ok", exit_code=0, duration_s=0.25)),
        TextDelta(text="dev-box "),
        TextDelta(text="is Ready."),
        TurnEnd(finish_reason="stop", usage=Usage(input_tokens=1200, output_tokens=7)),
        MessageComplete(message=AssistantMessage(content="dev-box is Ready.")),
        TurnFinished(reason="answered", iterations=2),
    )
    assert screens.out.getvalue() == "dev-box is Ready.\n"
    err = screens.err.getvalue().splitlines()
    assert err == [
        "Let me look.",
        "  → sandbox_get name=dev-box",
        "  ✓ sandbox_get · 0.25 s · exit 0",
        "2 model calls · 1,200 tokens in · 7 out · 1.2k tokens in context",
    ]


def test_render_usage_adds_up_every_completion_of_the_turn() -> None:
    screens = Screens()
    screens.play(
        TurnEnd(finish_reason="tool_calls", usage=Usage(input_tokens=100, output_tokens=5)),
        TurnEnd(finish_reason="stop", usage=Usage(input_tokens=250, output_tokens=20)),
        TurnFinished(reason="answered", iterations=2),
    )
    # Totals over the calls; the context is the last call's input plus output.
    assert "350 tokens in · 25 out · 270 tokens in context" in screens.err.getvalue()


def test_render_usage_line_shows_cache_and_reasoning_parts() -> None:
    screens = Screens()
    screens.play(
        TurnEnd(
            finish_reason="tool_calls",
            usage=Usage(input_tokens=3100, cache_write_tokens=3000, output_tokens=5),
        ),
        TurnEnd(
            finish_reason="stop",
            usage=Usage(
                input_tokens=3200, cache_read_tokens=3000, output_tokens=25, reasoning_tokens=9
            ),
        ),
        TurnFinished(reason="answered", iterations=2),
    )
    assert screens.err.getvalue().splitlines()[-1] == (
        "2 model calls · 6,300 tokens in (3,000 cached, 3,000 written to cache)"
        " · 30 out (9 reasoning) · 3.2k tokens in context"
    )
    assert format_usage(Usage(input_tokens=5, output_tokens=1)) == "5 tokens in · 1 out"


def test_render_refusal_goes_to_stdout_as_a_refusal() -> None:
    screens = Screens()
    screens.play(
        RefusalDelta(text="I can't "),
        RefusalDelta(text="help with that."),
        TurnEnd(finish_reason="refusal", usage=Usage(input_tokens=10, output_tokens=4)),
        MessageComplete(message=AssistantMessage(refusal="I can't help with that.")),
        TurnFinished(reason="refused", message=REFUSED_NOTE, iterations=1),
    )
    assert screens.out.getvalue() == "I can't help with that.\n"
    assert screens.err.getvalue().splitlines() == [
        REFUSED_NOTE,
        "10 tokens in · 4 out · 14 tokens in context",
    ]
    history = io.StringIO()
    capture_console(history).print(
        format_messages([AssistantMessage(refusal="I can't help with that.")])
    )
    assert history.getvalue() == "agent (refused): I can't help with that.\n"


def test_json_sink_carries_the_refusal() -> None:
    stream = io.StringIO()
    sink = JsonLinesSink(stream)
    sink(RefusalDelta(text="no"))
    sink(MessageComplete(message=AssistantMessage(refusal="no")))
    sink(TurnFinished(reason="refused", message=REFUSED_NOTE))
    kinds = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert kinds[0] == {"kind": "refusal_delta", "text": "no"}
    assert kinds[1]["message"]["refusal"] == "no" and kinds[1]["message"]["content"] == ""
    assert kinds[2]["reason"] == "refused"


@pytest.mark.parametrize(
    ("finished", "expected"),
    [
        (
            TurnFinished(
                reason="error", message="the gateway is down", error=ChatError(message="x")
            ),
            "error: the gateway is down",
        ),
        (TurnFinished(reason="timeout", message="sent nothing for 60 s"), "error: sent nothing"),
        (TurnFinished(reason="iteration_limit", message="stopped after 20"), "stopped after 20"),
        (TurnFinished(reason="cancelled", message="turn cancelled"), INTERRUPTED_NOTE),
        (TurnFinished(reason="refused", message=REFUSED_NOTE), REFUSED_NOTE),
        (TurnFinished(reason="paused", message=PAUSED_NOTE), PAUSED_NOTE),
    ],
)
def test_render_turn_endings_are_one_line_on_stderr(finished, expected) -> None:
    screens = Screens()
    screens.play(
        TextDelta(text="partial"),
        StreamError(error=ChatError(message="the gateway is down")),
        finished,
    )
    assert screens.out.getvalue() == "partial\n"
    err = screens.err.getvalue()
    assert err.startswith(expected) and err.count("\n") == 1
    assert err.count("the gateway is down") <= 1  # the StreamError is not shown twice


def test_render_notices_and_compaction() -> None:
    screens = Screens()
    screens.play(
        AgentNotice(level="warning", text="could not compact"),
        ContextCompacted(
            summarized_messages=12, kept_messages=4, tokens_before=101_000, tokens_after=9_000
        ),
    )
    err = screens.err.getvalue()
    assert "could not compact\n" in err
    assert "compacted 12 older messages" in err and "~101,000 → ~9,000 tokens" in err


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (outcome("ok", exit_code=0, duration_s=1.5), "✓ sandbox_get · 1.50 s · exit 0"),
        (outcome("failed", exit_code=1, duration_s=0.1), "✗ sandbox_get · 0.10 s · exit 1"),
        (outcome("failed", content="Could not start the nav CLI"), "✗ sandbox_get · Could not"),
        (outcome("timeout", duration_s=60.0), "✗ sandbox_get · 60.00 s · timed out, killed"),
        (outcome("declined"), "✗ sandbox_get · declined, not run"),
        (outcome("cancelled"), "✗ sandbox_get · cancelled"),
        (outcome("invalid", content="bad name\nmore"), "✗ sandbox_get · refused: bad name"),
        (outcome("unknown_tool", content="no such tool"), "✗ sandbox_get · refused: no such"),
    ],
)
def test_render_outcome_line_names_status_duration_and_exit(result, expected) -> None:
    line = format_outcome(result).plain
    assert line.strip().startswith(expected)
    assert "\n" not in line


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{}", ""),
        ('{"name": "dev-box", "lines": 20}', "name=dev-box lines=20"),
        ('{"command": "echo hi there"}', 'command="echo hi there"'),
        ('{"name": ""}', 'name=""'),
        ("not json", "not json"),
        ("[1, 2]", "[1, 2]"),
        ('{"name": "测试", "command": "echo 你好 🚀"}', 'name=测试 command="echo 你好 🚀"'),
    ],
)
def test_render_arguments_on_one_unambiguous_line(arguments, expected) -> None:
    assert format_arguments(ToolCall(id="c", name="t", arguments=arguments)) == expected


def test_render_long_arguments_are_cut() -> None:
    text = format_arguments(ToolCall(id="c", name="t", arguments=json.dumps({"x": "a" * 500})))
    assert len(text) == 200 and text.endswith("…")


def test_json_sink_writes_one_parseable_event_per_line() -> None:
    events: list[AgentEvent] = [
        TextDelta(text="hi\nthere"),
        ToolStarted(index=0, call=call("c1")),
        ToolFinished(index=0, outcome=outcome("declined", content="declined")),
        TurnFinished(reason="answered", iterations=1),
    ]
    stream = io.StringIO()
    sink = JsonLinesSink(stream)
    for event in events:
        sink(event)
    lines = stream.getvalue().splitlines()
    adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
    assert [adapter.validate_json(line) for line in lines] == events


def test_render_cancel_without_streamed_text_does_not_claim_a_cut() -> None:
    screens = Screens()
    screens.play(TurnFinished(reason="cancelled", message="turn cancelled"))
    assert screens.err.getvalue().strip() == CANCELLED_NOTE
    assert INTERRUPTED_NOTE not in screens.err.getvalue()


@pytest.mark.parametrize(("iterations", "shown"), [(2, "2 model calls · "), (1, "")])
def test_render_usage_line_counts_model_calls(iterations: int, shown: str) -> None:
    screens = Screens()
    screens.play(
        TurnEnd(usage=Usage(input_tokens=10, output_tokens=2), finish_reason="stop"),
        TurnFinished(reason="answered", iterations=iterations),
    )
    assert screens.err.getvalue() == f"{shown}10 tokens in · 2 out · 12 tokens in context\n"


def test_render_usage_line_shows_cache_reads_when_reported() -> None:
    screens = Screens()
    screens.play(
        TurnEnd(
            finish_reason="stop",
            usage=Usage(input_tokens=12_345, cache_read_tokens=10_000, output_tokens=55),
        ),
        TurnFinished(reason="answered", iterations=1),
    )
    assert screens.err.getvalue() == (
        "12,345 tokens in (10,000 cached) · 55 out · 12.4k tokens in context\n"
    )


MARKDOWN_ANSWER = """## Sandboxes

You have **2** sandboxes; `dev-box` is ready:

| name | phase |
|---|---|
| dev-box | Ready |
| gpu-trainer | Error |

```python
print("hello")
```

Done.
"""


def stream(renderer: TerminalRenderer, text: str) -> None:
    renderer.begin_turn()
    for index in range(0, len(text), 3):
        renderer(TextDelta(text=text[index : index + 3]))
    renderer(MessageComplete(message=AssistantMessage(content=text)))
    renderer.end_turn()


def test_render_markdown_on_a_terminal_draws_tables_and_code() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = TerminalRenderer(
        capture_console(out, terminal=True), capture_console(err), spinner=False
    )
    stream(renderer, MARKDOWN_ANSWER)
    shown = strip_ansi(out.getvalue())
    assert "|---|" not in shown and "```" not in shown and "**" not in shown
    assert "dev-box      Ready" in shown and 'print("hello")' in shown
    assert "Sandboxes" in shown and "## " not in shown


@pytest.mark.parametrize("markdown", [None, False])
def test_render_piped_or_no_markdown_writes_the_raw_text(markdown: bool | None) -> None:
    out, err = io.StringIO(), io.StringIO()
    terminal = markdown is False  # --no-markdown on a terminal, or a pipe
    renderer = TerminalRenderer(
        capture_console(out, terminal=terminal),
        capture_console(err),
        spinner=False,
        markdown=markdown,
    )
    stream(renderer, MARKDOWN_ANSWER)
    assert strip_ansi(out.getvalue()) == MARKDOWN_ANSWER + "\n"


def narrow_terminal(file: io.StringIO, columns: int) -> Console:
    return wrap_at_words(
        Console(file=file, force_terminal=True, width=columns, height=30, color_system=None)
    )


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_render_thinking_refusal_and_notes_wrap_at_words_on_a_terminal(columns: int) -> None:
    # Issue 20: every line but the answer was written unwrapped; the terminal cut words.
    out, err = io.StringIO(), io.StringIO()
    renderer = TerminalRenderer(
        narrow_terminal(out, columns), narrow_terminal(err, columns), spinner=False
    )
    thought = " ".join(f"reasoning{n:03d}" for n in range(40))
    refusal = " ".join(f"cannot{n:03d}" for n in range(40))
    renderer.begin_turn()
    for index in range(0, len(thought), 5):
        renderer(ThinkingDelta(text=thought[index : index + 5]))
    renderer(ToolStarted(index=0, call=call("c1", "sandbox_get", name="dev-box")))
    for index in range(0, len(refusal), 5):
        renderer(RefusalDelta(text=refusal[index : index + 5]))
    renderer(MessageComplete(message=AssistantMessage(refusal=refusal)))
    renderer(TurnFinished(reason="error", message="the gateway said " + refusal, iterations=1))
    renderer.end_turn()
    for file, expected in [(err, thought), (out, refusal)]:
        screen = ReflowScreen(columns, 30)
        pyte.Stream(screen).feed(file.getvalue())
        assert screen.autowraps == 0, screen.rows_autowrapped()
        assert expected in " ".join(" ".join(screen.all_lines).split())


@pytest.mark.parametrize("reason", ["error", "timeout"])
def test_render_marks_text_shown_before_a_failure_as_incomplete(reason: str) -> None:
    screens = Screens()
    screens.play(
        TextDelta(text="You have 3 sand"),
        StreamError(error=ChatError(message="the connection broke")),
        TurnFinished(reason=reason, message="the connection broke", partial=True),
    )
    err = screens.err.getvalue()
    assert err.startswith(PARTIAL_NOTE) and "error: the connection broke" in err
    clean = Screens()
    clean.play(TurnFinished(reason=reason, message="the connection broke"))
    assert PARTIAL_NOTE not in clean.err.getvalue()


# Issue 41: what a user types back is never folded by wrapping, at any width.
@pytest.mark.parametrize("width", [40, 80, 120])
def test_notes_and_tool_lines_never_fold_a_name(width: int) -> None:
    from rich.text import Text

    from navagent.cli.consoles import Hanging, whole_word_rows

    hint = "nvidia-nemotron-3-super-120b-reasoning-east-1-with-a-longer-tail"
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=True)
    renderer = TerminalRenderer(console, console)
    renderer.note(f"Routing hint: agent · the gateway has: agent, {hint}", whole_words=True)
    call = Text(f"  → sandbox_logs name={hint} lines=20")
    console.print(Hanging(call, 4, whole_words=True), crop=False)
    rows = out.getvalue().splitlines()
    assert sum(hint in row for row in rows) == 2, rows  # whole, in the note and the call
    assert all(len(row) <= width for row in rows if hint not in row), rows
    texts = [row.plain for row in whole_word_rows(Text("ab cd " + "x" * 50 + " ef"), 10)]
    assert texts == ["ab cd", "x" * 50, "ef"]
