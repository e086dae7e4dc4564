"""Real recorded provider streams translate to what the official SDKs made of them.

The corpus lives outside the repository (third-party recordings, not copied
here): `NAV_CONFORMANCE_DIR`, else `<repo>/../shared/conformance/real`, else
the same path next to the main checkout when this is a git worktree. Each
file holds the raw SSE body and the SDK's accumulated result (`expected`);
see its README. The hand-made transcripts in fixtures/sse are run through the
same SDK oracle and comparison.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from navagent.core.events import StreamError, StreamEvent
from tests.gateway.sdk_oracle import anthropic_expected, openai_expected
from tests.gateway.streams import (
    ROOT,
    TRANSCRIPTS,
    final_message,
    random_chunks,
    stream_error,
    translate,
    turn_end,
)

PROVIDERS = ("openai", "anthropic")


def conformance_dir() -> tuple[Path | None, str]:
    """Return the corpus folder, or None and the reason it was not found."""
    if env := os.environ.get("NAV_CONFORMANCE_DIR"):
        path = Path(env)
        return (path, "") if path.is_dir() else (None, f"NAV_CONFORMANCE_DIR={env} is no folder")
    candidates = [ROOT.parent / "shared" / "conformance" / "real"]
    git = ROOT / ".git"
    if git.is_file():  # a worktree: .git says "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(git.read_text(encoding="utf-8").partition(":")[2].strip())
        common = gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()
        candidates.append(common.resolve().parent.parent / "shared" / "conformance" / "real")
    for path in candidates:
        if path.is_dir():
            return path, ""
    return None, f"conformance corpus not found (looked in {', '.join(map(str, candidates))})"


CORPUS, MISSING = conformance_dir()


def corpus_files(folder: str) -> list[Any]:
    if CORPUS is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=MISSING), id="no-corpus")]
    if not (CORPUS / folder).is_dir():
        reason = f"{CORPUS / folder} does not exist"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id=f"no-{folder}")]
    files = sorted((CORPUS / folder).rglob("*.json"))
    return [pytest.param(path, id=f"{path.parent.name}/{path.stem}") for path in files]


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _arguments(raw: str) -> Any:
    """Parsed arguments, or the raw text when it is not JSON; empty means {} (our rule)."""
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def assert_matches_sdk(provider: str, expected: dict[str, Any], events: list[StreamEvent]) -> None:
    """Compare text, tool calls, raw finish reason and usage with the SDK's result."""
    message, end = final_message(events).message, turn_end(events)
    calls = [(c.id, c.name, _arguments(c.arguments)) for c in message.tool_calls]
    usage = (end.usage.input_tokens, end.usage.output_tokens)
    if provider == "openai":
        choice = next(c for c in expected["choices"] if c["index"] == 0)
        # Refusals are carried as text (see gateway/openai/stream.py).
        assert message.content == (choice["content"] or "") + (choice["refusal"] or "")
        want_calls = [
            (
                t["id"] or calls[i][0],  # no id on the wire: ours is generated
                t["name"],
                _arguments(t["arguments"]),
            )
            for i, t in enumerate(choice["tool_calls"] or [])
        ]
        assert calls == want_calls
        assert end.provider_finish_reason == choice["finish_reason"]
        # The SDK keeps the LAST usage, so a trailing `usage: null` chunk erases
        # it there; we keep the last non-null one (the corpus records it).
        sdk_usage = expected.get("usage") or expected.get("usage_from_last_nonnull_usage_chunk")
        want_usage = (
            (sdk_usage["prompt_tokens"], sdk_usage["completion_tokens"]) if sdk_usage else (0, 0)
        )
        assert usage == want_usage
        return
    blocks = expected["content"]
    assert message.content == "".join(b["text"] for b in blocks if b["type"] == "text")
    assert calls == [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    assert [(p.text, p.signature, p.redacted_data) for p in message.thinking] == [
        (b.get("thinking", ""), b.get("signature", ""), b.get("data", ""))
        for b in blocks
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert end.provider_finish_reason == (expected["stop_reason"] or "")
    assert usage == (expected["usage"]["input_tokens"], expected["usage"]["output_tokens"])


@pytest.mark.parametrize("path", [p for f in PROVIDERS for p in corpus_files(f)])
def test_conformance_real_stream_matches_sdk(path: Path) -> None:
    record = load(path)
    body = record["sse"].encode("utf-8")
    events = translate(record["provider"], body)
    assert_matches_sdk(record["provider"], record["expected"], events)
    # Any split of the same bytes gives the same events.
    for seed in range(3):
        chunked = translate(record["provider"], random_chunks(body, seed=seed, max_size=64))
        assert chunked == events


@pytest.mark.parametrize("path", corpus_files("unparseable"))
def test_conformance_unparseable_stream_is_a_clear_error(path: Path) -> None:
    record = load(path)
    error = stream_error(translate(record["provider"], record["sse"].encode("utf-8"))).error
    assert error.message.startswith(("OpenAI stream", "Anthropic stream")), error.message


def test_conformance_corpus_is_not_copied_into_the_repository() -> None:
    names = {path.name for top in ("fixtures", "tests") for path in (ROOT / top).rglob("*.json")}
    if CORPUS is not None:
        assert not names & {path.name for path in CORPUS.rglob("*.json")}


# Transcripts whose whole point is a failure: the SDKs mostly accept them
# (a missing [DONE] is a silent success there), we must not.
ERROR_TRANSCRIPTS = {
    "openai/missing_done",
    "openai/invalid_json_event",
    "openai/error_payload",
    "anthropic/error_event_mid_stream",
    "anthropic/missing_message_stop",
    "anthropic/invalid_tool_input_json",
    "anthropic/invalid_json_event",
}


# Transcripts the SDK itself cannot read. The openai SDK dispatches a block
# holding only `retry:` as an event (WHATWG: no data, no event) and then
# json-decodes its empty data. The oracle is then the same bytes without it.
SDK_CANNOT_READ = {"openai/crlf_and_comments": b"retry: 5000\r\n\r\n"}


@pytest.mark.parametrize(
    "path",
    # Responses transcripts: tests/gateway/test_responses_conformance.py.
    sorted(p for f in PROVIDERS for p in (TRANSCRIPTS / f).glob("*.sse")),
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_transcript_matches_sdk_unless_it_pins_a_failure(path: Path) -> None:
    provider, name = path.parent.name, f"{path.parent.name}/{path.stem}"
    body = path.read_bytes()
    events = translate(provider, body)
    if isinstance(events[-1], StreamError):
        assert name in ERROR_TRANSCRIPTS, events[-1]
        return
    assert name not in ERROR_TRANSCRIPTS
    oracle = openai_expected if provider == "openai" else anthropic_expected
    if name in SDK_CANNOT_READ:
        with pytest.raises(json.JSONDecodeError):
            oracle(body)
        body = body.replace(SDK_CANNOT_READ[name], b"")
    assert_matches_sdk(provider, oracle(body), events)
