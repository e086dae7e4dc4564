"""Splitting a streamed answer into settled markdown blocks and the growing one."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from navagent.cli.markdown_stream import MarkdownStream, split_settled, table_preview
from navagent.core.nav_cli import strip_ansi
from tests.cli.harness import capture_console, scrollback

lines = st.sampled_from(
    [
        "# Title",
        "text",
        "more text",
        "",
        "- item",
        "1. one",
        "| a | b |",
        "|---|---|",
        "```",
        "x = 1",
    ]
)


@given(st.lists(lines, max_size=12), st.booleans())
def test_split_settled_loses_nothing_and_cuts_at_line_ends(parts: list[str], tail: bool) -> None:
    text = "\n".join(parts) + ("\n" if tail else "")
    settled, rest = split_settled(text)
    assert settled + rest == text
    assert not settled or settled.endswith("\n")


def test_split_settled_keeps_the_last_block_growing() -> None:
    assert split_settled("para one\n\npara tw") == ("para one\n\n", "para tw")
    assert split_settled("just one para\nstill it") == ("", "just one para\nstill it")
    # A table or an unclosed fence stays one growing block.
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert split_settled(table) == ("", table)
    fence = "```py\nx = 1\n\ny = 2\n"
    assert split_settled(fence) == ("", fence)
    assert split_settled("# Head\ntext") == ("# Head\n", "text")


def test_stream_prints_each_settled_block_once_in_order() -> None:
    out = io.StringIO()
    console = capture_console(out, terminal=False)
    stream = MarkdownStream(console, clock=lambda: 0.0)
    text = "# Title\n\nFirst **bold** para.\n\n- a\n- b\n\nLast."
    for index in range(0, len(text), 4):
        stream.feed(text[index : index + 4])
    stream.finish()
    shown = strip_ansi(out.getvalue())
    assert [line.strip() for line in shown.splitlines() if line.strip()] == [
        "Title",
        "First bold para.",
        "• a",
        "• b",
        "Last.",
    ]
    assert stream.pending == ""


def test_footer_is_live_only_and_never_reaches_the_scrollback() -> None:
    out = io.StringIO()
    footer = ""
    stream = MarkdownStream(
        capture_console(out, terminal=True), clock=lambda: 0.0, footer=lambda: footer
    )
    stream.feed("First para.\n\nSecond")
    footer = "› typed by the user"
    stream.refresh()
    stream.feed(" para.\n\nThird.")
    stream.finish()
    raw = out.getvalue()
    assert "typed by the user" in raw, "the footer was drawn"
    screen = [line.strip() for line in scrollback(raw.encode(), 120, 30) if line.strip()]
    assert screen == ["First para.", "Second para.", "Third."]


def test_table_preview_aligns_a_growing_table_without_its_syntax() -> None:
    preview = table_preview(
        "| name | phase |\n|---|:---:|\n| dev-box | Ready |\n| gpu-trainer | Err"
    )
    assert preview.plain.splitlines() == [
        " name         phase",
        " ──────────────────",
        " dev-box      Ready",
        " gpu-trainer  Err",
    ]
