"""Redaction takes time linear in its input, for every shape (issue 39 §1).

On a backtracking engine a text made of one short prefix repeated (`eyJ`,
`sk-`, `//`, `xoxb-1-`, `://a:`) made each search start again at every
position: 1 MB took seconds, and four times the text took sixteen times as
long. Here every prefix the shape table declares (`shape_prefixes`, so a new
shape is covered when it is added), and the head of a real-looking secret of
every kind in the corpus, is repeated to 1x and 4x a size, and the time may
grow about four times, never the sixteen a quadratic search gives. The
figures themselves are measured by `bench/redaction.py`, not here.
"""

from __future__ import annotations

import random
import time

import pytest
import re2

from navagent.core.redaction import SECRET_SHAPES, redact, shape_prefixes
from tests.scenarios.secret_kinds import planted_secrets

SIZE = 25_000
RATIO = 12.0
"""4x the input in at most 12x the time: a quadratic search takes 16x; the margin
absorbs a loaded machine (and caches: 4x the text may no longer fit in one)."""
FLOOR_S = 0.005
"""Below this the 4x run is too short to tell growth from noise: it passes."""
ATTEMPTS = 3
"""A busy machine can stall one measurement; quadratic growth fails every attempt."""
PROBES = ("eyJ", "sk-", "//", "xoxb-1-", "://a:")
HEADS = sorted({p.text[:8] for p in planted_secrets(random.Random(39))} - {""})


def _repeated(prefix: str, size: int) -> str:
    return (prefix * (size // len(prefix) + 1))[:size]


def _seconds(text: str, *, cut: bool = False) -> float:
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        redact(text, cut=cut)
        best = min(best, time.perf_counter() - started)
    return best


def _assert_linear(prefix: str, *, cut: bool = False) -> None:
    small_text, large_text = _repeated(prefix, SIZE), _repeated(prefix, 4 * SIZE)
    for _ in range(ATTEMPTS):
        small, large = _seconds(small_text, cut=cut), _seconds(large_text, cut=cut)
        if large < FLOOR_S or large < RATIO * max(small, FLOOR_S / RATIO):
            return
    raise AssertionError(
        f"{prefix!r}: {small * 1000:.1f} ms for {SIZE} characters, "
        f"{large * 1000:.1f} ms for {4 * SIZE}"
    )


def test_every_shape_declares_what_it_starts_with_and_runs_on_re2() -> None:
    prefixes = set(shape_prefixes())
    for shape in SECRET_SHAPES:
        assert shape.prefixes, shape.kind
        assert set(shape.prefixes) <= prefixes
        assert isinstance(shape.pattern, re2._Regexp), shape.kind
    assert set(PROBES) <= prefixes | {"xoxb-1-", "://a:"}


@pytest.mark.parametrize("prefix", sorted({*PROBES, *shape_prefixes()}))
def test_a_repeated_prefix_of_every_shape_takes_linear_time(prefix: str) -> None:
    _assert_linear(prefix)


@pytest.mark.parametrize("head", HEADS)
def test_the_repeated_head_of_every_kind_in_the_corpus_takes_linear_time(head: str) -> None:
    _assert_linear(head)


@pytest.mark.parametrize("prefix", [*PROBES, "password=", "Bearer ", "AKIA"])
def test_a_cut_texts_end_is_searched_in_linear_time(prefix: str) -> None:
    _assert_linear(prefix, cut=True)
