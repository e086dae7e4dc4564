"""Nothing that looks like a key is in a cassette, and a planted one is caught."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from navagent.core.redaction import distinct_secrets, redact
from navagent.fixtures.harness import (
    SimulatedCluster,
    load_scenario,
    replay_scenario,
    scan_files,
    scan_text,
)
from tests.scenarios.conftest import CASSETTES, CopyCase

# Shapes only: none of these is, or was, a real credential.
PLANTED = {
    "an Anthropic API key (sk-ant-...)": "sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8t",
    "an OpenAI-style secret key (sk-...)": "sk-proj-" + "Zy9xWv8uTs7rQp6oNm5lKj4i",
    "a bearer token": "Bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
    "a GitHub token": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "an AWS access key id": "AKIA" + "IOSFODNN7EXAMPLE",
}


def test_committed_cassettes_hold_nothing_that_looks_like_a_key() -> None:
    cassettes = sorted(CASSETTES.glob("*/*.yaml"))
    assert len(cassettes) >= 24
    assert scan_files(cassettes) == []


@pytest.mark.parametrize(("kind", "value"), PLANTED.items(), ids=list(PLANTED))
def test_a_planted_key_is_found_without_being_repeated(kind: str, value: str) -> None:
    text = f"interactions:\n- request:\n    parsed_body:\n      note: here is {value} inside\n"
    (finding,) = scan_text(text, source="c.yaml")
    assert (finding.source, finding.line, finding.kind) == ("c.yaml", 4, kind)
    assert value not in str(finding)
    secret = value.removeprefix("Bearer ")  # the token is the secret, not the scheme
    digest = hashlib.sha256(secret.encode()).hexdigest()[:8]
    assert str(finding) == f"c.yaml:4: looks like {kind}: {len(secret)} characters, sha256 {digest}"
    # Issue 39: not even its head (7 of 8 characters of a short key were shown).
    shown = str(finding).split(": ", 2)[2]
    assert not any(secret[i : i + 4] in shown for i in range(len(secret) - 3))


@pytest.mark.parametrize("header", ["authorization", "x-api-key", "Cookie", "set-cookie"])
def test_a_credential_header_in_a_cassette_is_found(header: str) -> None:
    text = f"    headers:\n      {header}:\n      - whatever\n"
    assert [finding.kind for finding in scan_text(text)] == ["a credential header"]


# Issue 9: the scan and the gateway share one matcher, so a short test-style key
# the gateway would mask is a finding here too.
def test_a_short_sk_key_is_found_as_the_gateway_masks_it() -> None:
    (finding,) = scan_text("note: sk-test-SECRET123 recorded\n")
    assert finding.kind == "an OpenAI-style secret key (sk-...)"


def test_the_recording_key_is_found_verbatim_whatever_its_shape() -> None:
    findings = scan_text("body: my-odd-key-123 echoed\n", secrets=["my-odd-key-123", ""])
    assert [finding.kind for finding in findings] == ["the API key used to record"]


def test_ordinary_text_and_simulator_ids_are_not_keys() -> None:
    text = (
        "ANTHROPIC_API_KEY and sk-short are names, not keys\n"
        "id: toolu_01wyeQX9qFNoN6e1EVbBKNqW call_sdBDXURBiWbwSX5tBJHGIcvS\n"
        "signature: SimFk2lVN9q4nn1JfV5aG3JY2YdthDCm/hjFOxUUy017uvVlSQ5BQhsPtzgVzpVLg2zBXfhouOzL\n"
        "the bearer of bad news\n"
    )
    assert scan_text(text) == []


def test_look_alikes_of_prefixed_tokens_flags_and_auth_values_are_not_keys() -> None:
    text = (
        "docker login --password-stdin; terraform init --token-file creds.txt\n"
        "auth: required, cookie: none\n"
        "at 12:34:56 job 12345678:AAbb failed; key-value pairs; dapi is a word\n"
        "xai-grok-2 and gsk_short and secret_name are names\n"
    )
    assert scan_text(text) == []


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Authorization: Basic dXNlcjpodW50ZXIyaHVudGVyMg==", "Authorization: Basic [redacted]"),
        ("Authorization: token 0123456789abcdef0123", "Authorization: token [redacted]"),
        ("Cookie: theme=dark; sid=0123456789abcdef", "Cookie: [redacted]"),
        ('"text":"Cookie: "}', '"text":"Cookie: "}'),  # a header cut between stream events
        ("nav login --token 0123456789abcdef done", "nav login --token [redacted] done"),
    ],
)
def test_a_header_keeps_its_scheme_and_loses_every_credential(text: str, kept: str) -> None:
    assert redact(text) == kept
    assert redact(kept) == kept


async def test_a_replay_fails_when_its_cassette_holds_a_key(
    copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("providers", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "providers.yaml"
    text = cassette.read_text(encoding="utf-8")
    key = PLANTED["an OpenAI-style secret key (sk-...)"]
    cassette.write_text(
        text.replace("accept:\n", f"authorization:\n      - Bearer {key}\n      accept:\n", 1),
        encoding="utf-8",
    )

    result = await replay_scenario(
        load_scenario(folder / "providers.yaml"), "openai", cluster=cluster
    )

    assert not result.passed and result.transcript is None  # refused before replaying
    kinds = {problem.split("looks like ")[1].split(":")[0] for problem in result.problems}
    # One finding per secret: the bearer token is the sk- key, named once.
    assert kinds == {"a credential header", "an OpenAI-style secret key (sk-...)"}
    assert all(key not in problem for problem in result.problems)
    assert all(problem.startswith(f"{cassette}:") for problem in result.problems)


# The scan searches the whole file at once (a key block or a keyword's value
# may span lines); that must never hide a finding a line-by-line scan makes.
_FRAGMENTS = st.sampled_from(
    [
        *PLANTED.values(),
        "authorization:",
        "  - whatever",
        "x-api-key: abcd1234",
        "bearer",
        "Bearer\t" + "tok" * 4,
        "sk-",
        "sk-ant-",
        "AKIA",
        "-----BEGIN RSA PRIVATE KEY-----",
        "my-odd-key-123",
        "ı",
        "\u212a",
        " ",
        ":",
        "'",
        "plain words",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.lists(_FRAGMENTS, max_size=4).map("".join), max_size=6),
    separator=st.sampled_from(["\n", "\r\n", "\r"]),
)
@example(lines=["", "authorization:"], separator="\r")  # a header key after a lone CR
@example(lines=["authorization:", "authorization:"], separator="\r")  # one CR ends and starts
@example(lines=["authorization:", "  secret-value"], separator="\r\n")
def test_the_whole_text_check_skips_nothing_the_line_scan_finds(
    lines: list[str], separator: str
) -> None:
    text = separator.join(lines)
    key = ["my-odd-key-123"]
    whole = distinct_secrets(text, extra=key, extra_kind="the key")
    offset = 0
    for line in text.splitlines(keepends=True):
        for match in distinct_secrets(line, extra=key, extra_kind="the key"):
            start, end = offset + match.start, offset + match.end
            # found on its own, or inside a larger finding (a key block running on)
            assert any(w.start < end and start < w.end for w in whole), (line, match)
        offset += len(line)
    found = scan_text(text, secrets=key, secrets_kind="the key")
    assert len(found) == len(whole)
