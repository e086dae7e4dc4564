"""A text cut inside a credential loses the credential's first part too.

A cancelled answer, or a body whose stream stalled or broke, stops wherever
it was cut. When that is inside a credential, what is left is its first
part, which no credential shape matches (its length or its end is missing):
`redact(..., cut=True)` and `redact_cut_end` mask what such a text ends with
when it starts like a credential. Every kind in the corpus is cut at half and
three quarters of each of its long parts.
"""

from __future__ import annotations

import random

import pytest

from navagent.core.redaction import (
    CUT_TAIL_BYTES,
    REDACTED,
    redact,
    redact_cut_end,
    redact_pieces,
    register_secret,
)
from navagent.fixtures.harness.cassettes._body_redaction import redact_body_bytes
from tests.scenarios.secret_kinds import Planted, planted_secrets

NO_START_OF_ITS_OWN = {
    "a Mailchimp key": "32 hex digits, then `-us<n>`: cut before the suffix, it is any hash",
    "a Discord bot token": "three base64url runs joined by dots: no prefix names it",
    "an Azure AD client secret": "its `Q~` comes after four characters of the secret",
    "a secret inside base64": "the base64 of a text: its first part decodes to nothing yet",
}
"""Kinds whose first part cannot be told from any other token: each one's reason."""
SHOWN = 8
"""The last characters written before the cut: they must not survive."""


def _cuts(rng: random.Random) -> list[tuple[Planted, str, str]]:
    """(kind, the text up to the cut, the part's characters just before the cut)."""
    cuts = []
    for planted in planted_secrets(rng):
        if planted.multiline:
            continue  # a key block is masked from its header to the end of a text
        for part in planted.parts:
            where = planted.text.find(part)
            if len(part) < 24 or where < 0:
                continue
            for fraction in (0.5, 0.75):
                size = int(len(part) * fraction)
                cuts.append((planted, planted.text[: where + size], part[size - SHOWN : size]))
    return cuts


ALL_CUTS = _cuts(random.Random(42))
CUTS = [cut for cut in ALL_CUTS if cut[0].kind not in NO_START_OF_ITS_OWN]


def _left(text: str, before_cut: str) -> list[str]:
    """Where the characters before the cut survive: redacted as cut, and as saved."""
    written = "the sandbox printed " + text
    saved = redact(redact_cut_end(written) + "\n\n[interrupted by the user]")
    return [
        name
        for name, out in (("cut", redact(written, cut=True)), ("saved", saved))
        if before_cut in out
    ]


@pytest.mark.parametrize(
    ("planted", "text", "before_cut"), CUTS, ids=[f"{c[0].kind}:{len(c[1])}" for c in CUTS]
)
def test_a_credential_cut_in_the_middle_is_masked_from_its_start(
    planted: Planted, text: str, before_cut: str
) -> None:
    assert _left(text, before_cut) == []


def test_the_kinds_a_cut_still_leaves_are_those_with_no_start_of_their_own() -> None:
    left = {planted.kind for planted, text, before in ALL_CUTS if _left(text, before)}
    assert left == set(NO_START_OF_ITS_OWN)


def test_without_the_cut_most_first_parts_are_left() -> None:
    """What `cut` adds: whole-credential shapes alone miss most first parts."""
    left = [before for _, text, before in CUTS if before in redact("printed " + text)]
    assert len(left) > len(CUTS) // 2


@pytest.mark.parametrize(
    "text",
    [
        "the sandbox py-worker is running",
        "logs are under path/to/file",
        "3 sandboxes: ACME",
        "see ghp_abc",  # too little after the prefix to give anything away
        "the key is in the vault",
        "created scratch (echo hello)",
    ],
)
def test_an_ordinary_end_is_left(text: str) -> None:
    assert redact(text, cut=True) == text
    assert redact_cut_end(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("export DB_PASSWORD=hunter2x", "export DB_PASSWORD="),
        ('"api_key": "AbCdEf12', '"api_key": "'),
        ("Authorization: Bearer eyJhbGciOi", "Authorization: Bearer "),
        ("token sk-proj-AbCdEf123", "token "),
        ("bot 123456789:AA9-seB1qRmU", "bot 123456789"),
    ],
)
def test_a_value_cut_after_its_name_or_scheme_is_masked(text: str, kept: str) -> None:
    assert redact_cut_end(text) == kept + REDACTED


def test_a_configured_key_cut_after_six_characters_is_masked() -> None:
    key = "zq-route-key-7f3a9c2e41d8b605"
    register_secret(key)
    assert redact_cut_end("the key is " + key[:6]) == "the key is " + REDACTED
    assert redact_cut_end("the key is " + key[:5]) == "the key is " + key[:5]


def test_only_the_end_is_searched() -> None:
    head = "sk-" + "ant-api03-" + "AbCdEfGhIj"  # built here: this file holds no key-shaped string
    far = head + " " + "x" * CUT_TAIL_BYTES
    assert redact_cut_end(far) == far
    assert redact_cut_end("x" * CUT_TAIL_BYTES + " " + head).endswith(REDACTED)


def test_a_credential_split_across_pieces_and_cut_loses_every_piece_of_it() -> None:
    pieces = ["Your key: ghp_", "AbCd12", "EfGh34"]
    redacted = redact_pieces(pieces, cut=True)
    assert redacted == ["Your key: " + REDACTED, "", ""]
    assert redact_pieces(pieces) == pieces


def test_a_recorded_body_that_did_not_end_keeps_no_first_part() -> None:
    deltas = ["Use ", "ghp_" + "Ab12", "CdEfGh34Ij"]
    body = "".join(
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        f'"delta":{{"type":"text_delta","text":"{text}"}}}}\n\n'
        for text in deltas
    ).encode()
    assert b"CdEfGh34Ij" not in redact_body_bytes(body, cut=True)
    assert b"CdEfGh34Ij" in redact_body_bytes(body)
    broken = body + b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":'
    broken += b'{"type":"text_delta","text":"and xoxb-' + b"1234567-AbCd"
    assert b"AbCd" not in redact_body_bytes(broken, cut=True)
