"""Turning agent events into terminal output: the REPL's event sink.

`TerminalRenderer` is the `EventSink` the agent reports to. It follows llm's
split: the assistant's answer goes to stdout as it streams, everything else
(spinner, tool traces, thinking, usage, notices, errors) goes to stderr, dimmed,
so `nav agent -p ... > answer.txt` captures only the answer. `JsonLinesSink`
is the machine-readable alternative for `--json`.

On a terminal the answer is rendered as markdown while it streams
(`MarkdownStream`: settled blocks printed once, only the growing block live);
piped, or with `markdown=False` (`--no-markdown`), the text is written raw with
`Console.out` (no markup, no wrapping), exactly as the model sent it - except
that on a terminal every control character in it is shown visibly (`visible`),
as in everything else this module draws from model, tool or provider text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import IO, Literal

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from navagent.cli.consoles import Hanging
from navagent.cli.live_region import reflowing
from navagent.cli.markdown_stream import AnswerMarkdown, MarkdownStream
from navagent.core.agent_events import (
    AgentEvent,
    AgentNotice,
    ContextCompacted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from navagent.core.events import (
    MessageComplete,
    RefusalDelta,
    StreamError,
    TextDelta,
    ThinkingDelta,
    ToolCallStart,
    TurnEnd,
    Usage,
    format_usage,
)
from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.tools import ToolOutcome
from navagent.core.visible import visible

__all__ = [
    "CANCELLED_NOTE",
    "INTERRUPTED_NOTE",
    "JsonLinesSink",
    "TerminalRenderer",
    "format_arguments",
    "format_call",
    "format_messages",
    "compact_count",
    "format_outcome",
    "format_usage",
    "plural",
]

INTERRUPTED_NOTE = "[interrupted: the partial answer is kept]"
PARTIAL_NOTE = "[incomplete: the answer above broke off and is not kept in the conversation]"
"""After text streamed by a completion that then failed (`TurnFinished.partial`)."""
"""Shown when Ctrl-C cuts an answer short (the history keeps the text, marked)."""
CANCELLED_NOTE = "[turn cancelled]"
"""Shown when Ctrl-C cancels a turn while no answer text was streaming."""
_QUEUED = "  ↳ queued for the model: "
"""Before a line typed mid-turn; its further lines are indented to match."""
TOOL_LINE_INDENT = 4
"""A tool line (`  → name args`, `  ✓ name ...`) wraps under its name."""
_ARGUMENT_CHARS = 200
_RESULT_PREVIEW_CHARS = 100

_Stream = Literal["text", "refusal", "thinking"]
_STREAM_OF: dict[str, _Stream] = {
    "text_delta": "text",
    "refusal_delta": "refusal",
    "thinking_delta": "thinking",
}
REFUSAL_STYLE = "yellow"
"""A refusal goes to stdout like an answer, but never looks like one."""
_THINKING_STYLE = "dim italic"


def _write_answer(console: Console, text: str, style: str | None = None) -> None:
    """Raw answer text: made visible on a terminal; piped, written exactly as the model sent it.

    Piped, it bypasses rich, whose `Text` would drop CR, BS, BEL, VT and FF.
    """
    if console.is_terminal:
        console.out(visible(text), end="", style=style, highlight=False)
    else:
        console.file.write(text)
        console.file.flush()


def _can_draw(console: Console) -> bool:
    """`console` is a terminal that can move the cursor (redraw a live region)."""
    return console.is_terminal and not console.is_dumb_terminal


def format_arguments(call: ToolCall) -> str:
    """One line for a call's arguments: `name=dev-box lines=20`, or the raw JSON if unusual.

    Values that are not plain words are JSON-quoted, so spaces and quotes stay
    unambiguous. Arguments that are not a JSON object are shown as sent.
    Control characters are shown visibly (`visible`), as the model sent them.
    """
    parsed = call.parsed_arguments()
    if parsed is None:
        text = call.arguments
    else:
        parts = []
        for key, value in parsed.items():
            shown = (
                value
                if isinstance(value, str) and _is_plain(value)
                else json.dumps(value, ensure_ascii=False)
            )
            parts.append(f"{key}={shown}")
        text = " ".join(parts)
    text = visible(text)
    return text if len(text) <= _ARGUMENT_CHARS else text[: _ARGUMENT_CHARS - 1] + "…"


def format_call(call: ToolCall) -> str:
    """`sandbox_logs name=dev-box lines=20`: a call's name and arguments, visible, on one line."""
    return f"{visible(call.name)} {format_arguments(call)}".rstrip()


def compact_count(count: int) -> str:
    """`950`, `12.3k`, `1.2M`: a token count at a glance."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def plural(count: int, noun: str) -> str:
    """`1 model call`, `2 model calls`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _is_plain(value: str) -> bool:
    return bool(value) and all(char.isalnum() or char in "-_.:/@" for char in value)


def format_outcome(outcome: ToolOutcome) -> Text:
    """The line shown when a tool call ends: status, duration, exit code."""
    name = visible(outcome.call.name)
    took = f" · {outcome.duration_s:.2f} s" if outcome.duration_s else ""
    match outcome.status:
        case "ok":
            return Text(f"  ✓ {name}{took} · exit 0", style="dim")
        case "failed":
            code = outcome.exit_code
            status = f"exit {code}" if code is not None else _first_line(outcome.content)
            return Text(f"  ✗ {name}{took} · {status}", style="dim red")
        case "timeout":
            return Text(f"  ✗ {name}{took} · timed out, killed", style="dim red")
        case "declined":
            return Text(f"  ✗ {name} · declined, not run", style="dim yellow")
        case "cancelled":
            return Text(f"  ✗ {name} · cancelled", style="dim yellow")
        case "invalid" | "unknown_tool":
            return Text(f"  ✗ {name} · refused: {_first_line(outcome.content)}", style="dim red")


def _first_line(text: str, limit: int = _RESULT_PREVIEW_CHARS) -> str:
    """The first line of `text` (tool output, a provider's error), visible and cut to `limit`."""
    lines = visible(text).strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def format_messages(messages: Sequence[Message], *, markdown: bool = True) -> Group:
    """A conversation as readable lines: what was said, called and returned.

    Used by `/history` and when a resumed session is replayed. Answers are
    rendered as markdown the way they streamed (`markdown=False`: raw text,
    as `--no-markdown` showed them), under a hanging label. Tool results are
    cut to their first line; the full text is in the session database.
    """
    parts: list[RenderableType] = []
    for message in messages:
        match message:
            case UserMessage():
                said = Text(visible(message.content))
                parts.append(_Labeled(Text("you: ", style="bold cyan"), said))
            case AssistantMessage():
                if message.content:
                    body = (
                        AnswerMarkdown(message.content)
                        if markdown
                        else Text(visible(message.content))
                    )
                    parts.append(_Labeled(Text("agent: ", style="bold green"), body))
                if message.refusal:
                    label = Text("agent (refused): ", style=f"bold {REFUSAL_STYLE}")
                    parts.append(
                        _Labeled(label, Text(visible(message.refusal), style=REFUSAL_STYLE))
                    )
                for call in message.tool_calls:
                    line = Text(f"  → {format_call(call)}", style="dim")
                    parts.append(Hanging(line, TOOL_LINE_INDENT))
            case ToolResultMessage():
                lines = message.content.strip().splitlines() or [""]
                more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
                parts.append(Text(f"    {_first_line(message.content)}{more}", style="dim"))
            case SystemMessage():
                text = f"[system] {_first_line(message.content)}"
                parts.append(Text(text, style="dim italic"))
    return Group(*parts)


class _Labeled:
    """`label` then `body`, every line of the body indented under the first (a hanging label)."""

    def __init__(self, label: Text, body: RenderableType) -> None:
        self._label = label
        self._body = body

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        indent = self._label.cell_len
        width = max(options.max_width - indent, 10)
        lines = console.render_lines(self._body, options.update_width(width), pad=False)
        label = list(self._label.render(console))
        for number, line in enumerate(lines or [[]]):
            if number == 0:
                yield from label
            elif line:
                yield Segment(" " * indent)
            yield from line
            yield Segment.line()


class TerminalRenderer:
    """An `EventSink` that draws a turn on a terminal (or on plain pipes).

    The REPL calls `begin_turn()` before sending a message and `end_turn()`
    after the turn, whatever its outcome, and `pause()` before asking the
    user anything mid-turn. Between those, every agent event goes through
    `__call__`.
    """

    def __init__(
        self,
        out: Console,
        err: Console,
        *,
        spinner: bool | None = None,
        markdown: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Draw on `out` (the answer) and `err` (everything else).

        Args:
            out: Receives the assistant's text only.
            err: Receives spinner, tool lines, thinking, usage and notices.
            spinner: Show a spinner while waiting; default: when `err` is a
                terminal that can move the cursor.
            markdown: Render the answer as markdown; default: when `out` is a
                terminal that can move the cursor. False writes the raw text.
            clock: Seconds, monotonic: how long the turn has run (tests pace it).
        """
        self.out = out
        self.err = err
        self._spinner_enabled = (
            err.is_terminal and not err.is_dumb_terminal if spinner is None else spinner
        )
        markdown = _can_draw(out) if markdown is None else markdown
        self._streams: dict[_Stream, MarkdownStream | None] = {
            "text": MarkdownStream(out, footer=self._footer) if markdown else None,
            "refusal": (
                MarkdownStream(out, footer=self._footer, plain_style=REFUSAL_STYLE)
                if markdown
                else None
            ),
            # Not the answer: wrapped at words on any terminal that can redraw.
            "thinking": (
                MarkdownStream(err, footer=self._footer, plain_style=_THINKING_STYLE)
                if _can_draw(err)
                else None
            ),
        }
        """How each kind of streamed text is drawn; None: written raw (piped, --no-markdown)."""
        self._clock = clock
        self._turn_started = clock()
        self._cut = False
        """Answer text was streaming when the turn was cancelled."""
        self.decline_hint: str | None = None
        """Printed (with `{tool}` filled in) when a call is declined: no one could be asked."""
        self._queued: list[str] = []
        """Lines typed mid-turn, not shown yet."""
        self._typing = ""
        self._label = ""
        self._live: Live | None = None
        self._suspended_spinner = False
        self._open: _Stream | None = None
        self._usage = Usage()
        self._context_tokens = 0
        self._running_tools = 0
        self.interrupt_hint = ""
        """Shown beside the spinner, e.g. `esc to interrupt` (the REPL sets it)."""
        self.leaving: Callable[[], bool] = lambda: False
        """True once the user asked to leave after this turn (Ctrl-D mid-turn; the REPL sets it)."""

    @property
    def markdown(self) -> bool:
        """Answers are rendered as markdown (not written raw)."""
        return self._streams["text"] is not None

    # --- turn lifecycle -----------------------------------------------------

    def begin_turn(self) -> None:
        """Reset the per-turn counters and show the spinner until the first token."""
        self._usage = Usage()
        self._context_tokens = 0
        self._running_tools = 0
        self._open = None
        self._cut = False
        self._turn_started = self._clock()
        self._spin("thinking…")

    def pause(self) -> None:
        """Stop the spinner and end any open line, e.g. before a confirmation prompt."""
        self._stop_spinner()
        self._close_stream()
        queued, self._queued = self._queued, []
        for line in queued:
            shown = visible(line).replace("\n", "\n" + " " * len(_QUEUED))
            self.err.print(Text(_QUEUED + shown, "cyan"))

    def release(self) -> None:
        """Erase what is drawn live (spinner, growing block) and show the cursor: a stop comes."""
        live = self._live
        self._stop_spinner()
        self._suspended_spinner = live is not None
        stream = self._streams[self._open] if self._open is not None else None
        if stream is not None:
            stream.erase()

    def retake(self) -> None:
        """Draw again what `release` erased: the process was continued."""
        if self._suspended_spinner:
            self._suspended_spinner = False
            self._spin(self._label)
        stream = self._streams[self._open] if self._open is not None else None
        if stream is not None:
            stream.refresh()

    def queued(self, line: str) -> None:
        """Show that `line`, typed mid-turn, waits for the model's next call.

        Printed at once unless the answer is streaming, which it would cut
        in two; then at the next pause (a tool line, the end of the turn).
        """
        self._typing = ""
        if self._taller_than_the_window(line):
            # Shown whole once: when the model takes it (`taken`), or under
            # the prompt as the next message; not here and then there too.
            self.typing("")
            return
        self._show_queued(line)

    def taken(self, lines: Sequence[str]) -> None:
        """The model takes `lines` (typed mid-turn): show the blocks `queued` left unshown."""
        for line in lines:
            if self._taller_than_the_window(line):
                self._show_queued(line)

    def _taller_than_the_window(self, line: str) -> bool:
        return line.count("\n") + 1 >= self.err.height

    def _show_queued(self, line: str) -> None:
        self._queued.append(line)
        if self._open != "text":
            live = self._live
            self.pause()
            if live is not None:
                self._spin(self._label)
        else:
            self._refresh_spinner()

    def unqueue(self) -> None:
        """Forget the queued lines not shown yet: a cancel sent them back to the prompt."""
        self._queued = []

    def typing(self, line: str) -> None:
        """Show the line being typed mid-turn: next to the spinner, or under the answer."""
        self._typing = line
        self._refresh_spinner()
        stream = self._streams[self._open] if self._open is not None else None
        if stream is not None:
            stream.refresh()

    def end_turn(self) -> None:
        """Stop the spinner and end the answer's line; safe to call twice."""
        self.pause()

    def error(self, message: str) -> None:
        """Print a failure in one red line on stderr (it may quote a provider: made visible)."""
        self.pause()
        self.err.print(Text(f"error: {visible(message)}", style="bold red"))

    def note(self, message: str, *, style: str = "dim", whole_words: bool = False) -> None:
        """Print a one-line remark on stderr (start-up notices, hints), made visible.

        `whole_words`: it names things the user types back (routing hints),
        which wrapping must never fold (`Hanging`).
        """
        self.pause()
        text = Text(visible(message), style=style)
        if whole_words:
            self.err.print(Hanging(text, 0, whole_words=True), crop=False)
        else:
            self.err.print(text)

    @property
    def spinning(self) -> bool:
        """True while the spinner is on screen."""
        return self._live is not None

    # --- the sink -----------------------------------------------------------

    def __call__(self, event: AgentEvent) -> None:
        """Draw one event; called by the agent loop, in order."""
        match event:
            case TextDelta() | RefusalDelta() | ThinkingDelta():
                self._write(_STREAM_OF[event.kind], event.text)
            case ToolCallStart():
                self._spin(f"preparing {event.name}…")
            case TurnEnd():
                self._usage += event.usage
                # What the last call read plus what it wrote: the next call's context.
                self._context_tokens = event.usage.input_tokens + event.usage.output_tokens
            case MessageComplete():
                self._close_stream()
            case StreamError():
                pass  # the TurnFinished that follows says it once
            case ToolStarted():
                self._tool_started(event)
            case ToolFinished():
                self._tool_finished(event)
            case ContextCompacted():
                saved = max(event.tokens_before - event.tokens_after, 0)
                share = saved * 100 // event.tokens_before if event.tokens_before else 0
                self.note(
                    f"compacted {plural(event.summarized_messages, 'older message')} into a summary"
                    f" (~{event.tokens_before:,} → ~{event.tokens_after:,} tokens,"
                    f" saved ~{saved:,}, {share}%)"
                )
            case AgentNotice():
                style = {"info": "dim", "warning": "yellow", "error": "red"}[event.level]
                self.note(event.text, style=style)
            case TurnFinished():
                self._turn_finished(event)

    def _tool_started(self, event: ToolStarted) -> None:
        self.pause()
        call = event.call
        line = Text(f"  → {format_call(call)}", style="dim")
        # The arguments hold what the user types back (a sandbox name): never folded.
        self.err.print(Hanging(line, TOOL_LINE_INDENT, whole_words=True), crop=False)
        self._running_tools += 1
        self._spin(f"running {visible(call.name)}…")

    def _tool_finished(self, event: ToolFinished) -> None:
        self.pause()
        self.err.print(Hanging(format_outcome(event.outcome), TOOL_LINE_INDENT))
        if event.outcome.status == "declined" and self.decline_hint:
            self.err.print(
                Text(self.decline_hint.format(tool=visible(event.outcome.call.name)), "yellow")
            )
        self._running_tools = max(self._running_tools - 1, 0)
        # With every tool done, the loop asks the model again.
        self._spin("running tools…" if self._running_tools else "thinking…")

    def _turn_finished(self, event: TurnFinished) -> None:
        self._cut = self._open == "text" and event.reason == "cancelled"
        self.pause()
        match event.reason:
            case "error" | "timeout":
                if event.partial:
                    self.err.print(Text(PARTIAL_NOTE, style="yellow"))
                self.err.print(Text(f"error: {visible(event.message)}", style="bold red"))
            case "iteration_limit" | "refused" | "paused":
                self.err.print(Text(visible(event.message), style="yellow"))
            case "cancelled":
                self.err.print(Text(INTERRUPTED_NOTE if self._cut else CANCELLED_NOTE, "yellow"))
            case "answered":
                if event.message:
                    self.err.print(Text(visible(event.message), style="yellow"))
        if self._usage.input_tokens or self._usage.output_tokens:
            self.err.print(Text(self._usage_line(event.iterations), style="dim"))

    def _usage_line(self, iterations: int) -> str:
        parts = [plural(iterations, "model call")] if iterations > 1 else []
        parts.append(format_usage(self._usage))
        if self._context_tokens:
            parts.append(f"{compact_count(self._context_tokens)} tokens in context")
        return " · ".join(parts)

    # --- drawing ------------------------------------------------------------

    def _write(self, stream: _Stream, text: str) -> None:
        if not text:
            return
        self._stop_spinner()
        if self._open != stream:
            self._close_stream()
            self._open = stream
        drawn = self._streams[stream]
        if drawn is not None:
            drawn.feed(text)  # made visible where it renders (`block_lines`)
        elif stream == "text":
            _write_answer(self.out, text)
        elif stream == "refusal":
            _write_answer(self.out, text, REFUSAL_STYLE)
        else:
            self.err.out(visible(text), end="", style=_THINKING_STYLE, highlight=False)

    def _close_stream(self) -> None:
        open_, self._open = self._open, None
        if open_ is None:
            return
        drawn = self._streams[open_]
        if drawn is not None:
            drawn.finish()
        elif open_ in ("text", "refusal"):
            self.out.out("", highlight=False)
        else:
            self.err.out("", highlight=False)

    def _status(self) -> Text:
        """The words beside the spinner, as of now: what runs, for how long, which keys matter."""
        text = Text(self._label, style="dim")
        hints = [_elapsed(self._clock() - self._turn_started)]
        if self.interrupt_hint:
            hints.append(self.interrupt_hint)
        text.append(f" ({' · '.join(hints)}", style="dim")
        if self.leaving():
            text.append(" · ", style="dim").append(_LEAVING_NOTE, style="yellow")
        text.append(")", style="dim")
        if self._typing:
            text.append(f"   › {_typed_preview(self._typing)}", style="cyan")
        return text

    def _footer(self) -> str:
        """What shows under a streaming answer: the line being typed, the leaving note."""
        parts = [f"› {_typed_preview(self._typing)}"] if self._typing else []
        if self.leaving():
            parts.append(_LEAVING_NOTE)
        return "   ".join(parts)

    def _refresh_spinner(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def _spin(self, label: str) -> None:
        self._label = label
        if not self._spinner_enabled:
            return
        if self._live is not None:
            self._live.refresh()
            return
        self._close_stream()
        # rich's Status is this Live; built directly to turn off its stdout
        # redirection, which would send the answer's text to stderr.
        self._live = reflowing(
            Live(
                _Spinning(self._status),
                console=self.err,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                refresh_per_second=12.5,
            )
        )
        self._live.start(refresh=True)

    def _stop_spinner(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()


_LEAVING_NOTE = "leaving after this turn"
"""Said while a turn runs once Ctrl-D asked to leave."""


def _typed_preview(text: str) -> str:
    """What is typed mid-turn as shown live: a pasted block by its size and its last line.

    The live region is redrawn many times a second; a 200-line paste drawn
    there whole would be taller than the window, and every redraw would push
    a screenful into the scrollback. The whole block is printed once: when
    the model takes it, or under the prompt as the next message.
    """
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return f"[{len(lines)} lines] {lines[-1]}"


def _elapsed(seconds: float) -> str:
    """`7s`, `1m 05s`: how long a turn has run."""
    whole = max(int(seconds), 0)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m {whole % 60:02d}s"


class _Spinning:
    """A spinner whose words are asked for on every frame (the elapsed time moves)."""

    def __init__(self, status: Callable[[], Text]) -> None:
        self._status = status
        self._spinner = Spinner("dots")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self._spinner.update(text=self._status())
        yield self._spinner


class JsonLinesSink:
    """An `EventSink` for `--json`: one JSON object per event on `stream`.

    Each line is the event's own JSON (`kind` says which); lines are flushed
    at once so a reading script sees text deltas as they arrive. Every
    character outside ASCII is a JSON unicode escape, so the line holds no control
    character (C1, bidi) a terminal would obey, and parses to the same value.
    """

    def __init__(self, stream: IO[str]) -> None:
        """Write to `stream` (usually stdout)."""
        self._stream = stream

    def __call__(self, event: AgentEvent) -> None:
        """Write one event as one line."""
        self._stream.write(json.dumps(event.model_dump(mode="json"), separators=(",", ":")) + "\n")
        self._stream.flush()
