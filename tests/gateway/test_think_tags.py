"""`<think>...</think>` split out of streamed content, whatever the chunking (issue 23)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from navagent.gateway.openai._think_tags import ThinkTagSplitter


def split(pieces: list[str]) -> tuple[str, str]:
    """(thinking, text) after feeding `pieces` and flushing."""
    splitter = ThinkTagSplitter()
    out = [part for piece in pieces for part in splitter.feed(piece)] + splitter.flush()
    assert all(text for _, text in out), "no empty pieces"
    return "".join(t for thinking, t in out if thinking), "".join(
        t for thinking, t in out if not thinking
    )


@pytest.mark.parametrize(
    ("content", "thinking", "text"),
    [
        ("<think>\nplan\n</think>\n\nAnswer.", "\nplan\n", "Answer."),
        ("  \n<think>plan</think>Answer.", "plan", "Answer."),
        ("<think></think>Answer.", "", "Answer."),
        ("<think>cut off by max_tokens", "cut off by max_tokens", ""),
        ("<think>a</think>", "a", ""),
        ("Answer about <think> tags.", "", "Answer about <think> tags."),
        ("<thin", "", "<thin"),
        ("<think>x</thinking> y </think> z", "x</thinking> y ", "z"),
        ("", "", ""),
        ("plain", "", "plain"),
        ("<think>a</think>b <think>c</think>", "a", "b <think>c</think>"),
    ],
)
def test_think_tags_split_only_a_leading_block(content: str, thinking: str, text: str) -> None:
    assert split([content]) == (thinking, text)


@given(
    content=st.sampled_from(
        [
            "<think>\nplan\n</think>\n\nAnswer.",
            "  <think>x</think></think>",
            "<think>a<b</thi</think>c",
            "no tags <think>here</think>",
            "<think>never closed </thin",
        ]
    ),
    cuts=st.lists(st.integers(0, 40), max_size=8),
)
def test_think_tags_same_result_for_any_chunking(content: str, cuts: list[int]) -> None:
    points = sorted({min(cut, len(content)) for cut in cuts})
    pieces = [content[a:b] for a, b in zip([0, *points], [*points, len(content)], strict=True)]
    assert split(pieces) == split([content])
