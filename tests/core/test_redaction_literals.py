"""A credential shape is only run on text holding one of its literals: that skips no match."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.redaction import (
    SECRET_SHAPES,
    SHAPE_LITERALS,
    find_secrets,
    fold,
    may_hold_secrets,
)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "shape"), SECRET_SHAPES, ids=[k for k, _ in SECRET_SHAPES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_match_of_a_shape_holds_one_of_its_literals(
    kind: str, shape: re.Pattern[str], data: st.DataObject
) -> None:
    text = data.draw(st.from_regex(shape, fullmatch=False))
    for match in shape.finditer(text):
        assert any(literal in fold(match.group()) for literal in SHAPE_LITERALS[shape]), kind
        assert may_hold_secrets(text)
        assert find_secrets(text), kind  # not skipped


def test_every_shape_has_lowercase_literals() -> None:
    assert set(SHAPE_LITERALS) == {shape for _, shape in SECRET_SHAPES}
    for literals in SHAPE_LITERALS.values():
        assert literals and all(literal == literal.lower() for literal in literals)


@pytest.mark.slow
def test_fold_maps_every_character_ignorecase_takes_for_an_ascii_letter() -> None:
    letter = re.compile("(?i)[a-z]")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if letter.fullmatch(char):
            folded = fold(char)
            assert len(folded) == 1 and "a" <= folded <= "z", hex(code)
            assert re.fullmatch(f"(?i){folded}", char), hex(code)


@pytest.mark.parametrize(
    "text",
    [
        "Authorızation: Bearer abcdefgh12345",  # dotless i
        "AUTHORİZATION: abcdefgh12345",  # dotted capital I
        "x-api-\u212aey: abcdefgh12345",  # Kelvin sign
        "\u017fet-cookie: session=abcdefgh",  # long s
        "BEARER abcdefgh12345",
    ],
)
def test_lookalike_letters_do_not_hide_a_case_insensitive_shape(text: str) -> None:
    assert find_secrets(text)
    assert may_hold_secrets(text)


def test_text_without_literals_or_known_secrets_may_hold_none() -> None:
    assert not may_hold_secrets("kind: simulated\nmodel: gpt-4.1-mini\n")
    assert may_hold_secrets("body: my-odd-key-123", extra=["my-odd-key-123"])
    assert not may_hold_secrets("body: nothing here", extra=["", "my-odd-key-123"])
