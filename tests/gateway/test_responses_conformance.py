"""Real OpenAI Responses streams translate to what the openai SDK made of them.

The corpus is `shared/conformance/responses` (35 streams, see its README),
found next to the Chat Completions/Anthropic corpus. Every stream is fed
whole, one byte at a time, and in random pieces of 1..97 and 1..4096 bytes;
all four must give the same events, and they must agree with the SDK's final
response: text, refusal, calls (`call_id`, name, arguments), reasoning items
(id, summary parts, encrypted content), status, usage, the error of a failed
stream, and the item types we do not model. Two streams the SDK refuses are
compared with the terminal event on the wire instead (see the README).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from navagent.core.events import MessageComplete, StreamError, StreamEvent
from navagent.fixtures.provider.wire._kit import kit_for
from navagent.gateway.errors import clean_message
from navagent.gateway.openai_responses import ResponsesStreamTranslator
from navagent.gateway.sse import SSEDecoder
from tests.gateway.corpus import CHUNKINGS, MISSING, ROOT_DIR, chunked
from tests.gateway.sdk_oracle import responses_expected
from tests.gateway.streams import TRANSCRIPTS, check_contract, random_chunks, turn_end
from tests.gateway.thinking_parts import payload_of

RESPONSES = ROOT_DIR / "responses" if ROOT_DIR is not None else None


def corpus() -> list[Any]:
    if RESPONSES is None or not RESPONSES.is_dir():
        reason = MISSING or f"{RESPONSES} does not exist"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-corpus")]
    return [pytest.param(path, id=path.stem) for path in sorted(RESPONSES.glob("*.sse"))]


def run(chunks: list[bytes]) -> tuple[list[StreamEvent], list[str]]:
    """Decode and translate like the gateway; the events and the unmodelled item types."""
    decoder, translator = SSEDecoder(), ResponsesStreamTranslator(origin="o")
    events: list[StreamEvent] = []
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            events += translator.handle(sse)
    for sse in decoder.finish():
        events += translator.handle(sse)
    events += translator.finish()
    assert translator.done and translator.finish() == []
    check_contract(events)
    return events, translator.unmodelled


def chunkings(body: bytes) -> dict[str, list[bytes]]:
    return {name: chunked(body, name) for name in CHUNKINGS}


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def assert_matches(expected: dict[str, Any], events: list[StreamEvent]) -> None:
    """Compare our events with the SDK's final response (or its error)."""
    raised = expected["sdk"].get("raised")
    if raised and raised["type"] == "APIError":
        final = events[-1]
        assert isinstance(final, StreamError), final
        assert final.error.message == clean_message(raised["message"])
        assert (final.error.code, final.error.retryable) == ("rate_limited", False)
        return
    reference = expected["terminal_event_response"] if raised else expected
    final = events[-1]
    assert isinstance(final, MessageComplete), final
    message, end = final.message, turn_end(events)
    output = reference["output"]
    assert message.content == reference["output_text"]
    refusals = [
        part["refusal"]
        for item in output
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "refusal"
    ]
    assert message.refusal == "".join(refusals)
    assert [(c.id, c.name, _arguments(c.arguments)) for c in message.tool_calls] == [
        (item["call_id"], item["name"], _arguments(item["arguments"]))
        for item in output
        if item["type"] == "function_call"
    ]
    reasoning = [item for item in output if item["type"] == "reasoning"]
    payloads = [payload_of(p) for p in message.thinking]
    assert [
        (
            d["item_id"],
            d["summary"],
            _sha(d["encrypted_content"]) if d["encrypted_content"] else None,
        )
        for d in payloads
    ] == [
        (
            item["id"],
            item["summary"],
            item["encrypted_content"]["sha256"] if item["encrypted_content"] else None,
        )
        for item in reasoning
    ]
    assert all(
        part.text == "\n\n".join(d["summary"])
        for part, d in zip(message.thinking, payloads, strict=True)
    )
    if reference["status"] == "completed":
        assert end.provider_finish_reason == "completed"
        wanted = "tool_calls" if message.tool_calls else ("refusal" if refusals else "stop")
        assert end.finish_reason == wanted
    else:
        assert end.provider_finish_reason == reference["incomplete_details"]["reason"]
        assert end.finish_reason == "length"
    usage = reference["usage"] or {}
    assert end.usage.input_tokens == usage.get("input_tokens", 0)
    assert end.usage.output_tokens == usage.get("output_tokens", 0)
    details_in = usage.get("input_tokens_details") or {}
    details_out = usage.get("output_tokens_details") or {}
    assert end.usage.cache_read_tokens == details_in.get("cached_tokens", 0)
    assert end.usage.cache_write_tokens == details_in.get("cache_write_tokens", 0)
    assert end.usage.reasoning_tokens == details_out.get("reasoning_tokens", 0)


@pytest.mark.parametrize("path", corpus())
def test_responses_stream_matches_sdk_in_every_chunking(path: Path) -> None:
    record = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    body = path.read_bytes()
    results = {name: run(chunks) for name, chunks in chunkings(body).items()}
    events, unmodelled = results["whole"]
    for name, result in results.items():
        assert result == results["whole"], f"{path.stem}: {name} chunking differs"
    assert_matches(record["expected"], events)
    final = events[-1]
    if isinstance(final, MessageComplete):
        assert all(part.origin == "o" for part in final.message.thinking)
    assert sorted(unmodelled) == record.get("other_item_types", [])


def test_responses_corpus_has_all_35_streams() -> None:
    if RESPONSES is None or not RESPONSES.is_dir():
        pytest.skip(MISSING or "no Responses corpus")
    assert len(list(RESPONSES.glob("*.sse"))) == 35


@pytest.mark.parametrize(
    "path",
    sorted((TRANSCRIPTS / "openai-responses").glob("*.sse")),
    ids=lambda path: path.stem,
)
def test_responses_transcript_matches_sdk(path: Path) -> None:
    body = path.read_bytes()
    events, _ = run(random_chunks(body, seed=1, max_size=13))
    assert events == run([body])[0]
    if path.stem == kit_for("openai-responses").samples["error"]:
        # A failed stream: the SDK raises (no response.completed), we end in a StreamError.
        with pytest.raises(RuntimeError, match="response.completed"):
            responses_expected(body)
        assert isinstance(events[-1], StreamError)
        return
    assert_matches(responses_expected(body), events)
