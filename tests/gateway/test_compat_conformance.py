"""Real streams from OpenAI-compatible servers translate to what the openai SDK made of them.

The corpus is `shared/conformance/compat` (36 streams from 20 services; its
README says what is compared). Every stream is fed through `SSEDecoder` and
the Chat Completions translator whole, one byte at a time, in random pieces
of 1..97 and 1..4096 bytes and one SSE line at a time; each chunking must
give the same events, and they must agree with the SDK's accumulation (or,
where the SDK crashes on a valid stream, its accumulation after the one
stated change, `expected.normalised`): text, tool calls, raw finish reason,
usage, and the reasoning the server sent beside the content as thinking.
An error event must end the turn in a `StreamError`. Issue 23.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from navagent.core.events import StreamError, StreamEvent
from navagent.gateway._types import RouteOptions
from navagent.gateway.openai import OpenAIStreamTranslator
from navagent.gateway.sse import SSEDecoder
from tests.gateway.corpus import CHUNKINGS, MISSING, ROOT_DIR, chunked
from tests.gateway.streams import ROOT, check_contract, final_message, turn_end
from tests.gateway.test_conformance import OPENAI_FINISH, _openai_usage

COMPAT = ROOT_DIR / "compat" if ROOT_DIR is not None else None
ORIGIN = "openai_chat_completions:compat"
COMPAT_CHUNKINGS = (*CHUNKINGS, "per-line")


def corpus() -> list[Any]:
    if COMPAT is None or not COMPAT.is_dir():
        reason = MISSING or f"{COMPAT} does not exist"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-corpus")]
    return [
        pytest.param(path, id=f"{path.parent.name}/{path.stem}")
        for path in sorted(COMPAT.glob("*/*.sse"))
    ]


def sidecar(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def cut(body: bytes, chunking: str) -> list[bytes]:
    if chunking == "per-line":
        return body.splitlines(keepends=True)
    return chunked(body, chunking)


def run(chunks: list[bytes], options: RouteOptions | None = None) -> list[StreamEvent]:
    """Decode and translate like the gateway, and check the stream contract."""
    decoder = SSEDecoder()
    translator = OpenAIStreamTranslator(origin=ORIGIN, options=options or RouteOptions())
    events: list[StreamEvent] = []
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            events += translator.handle(sse)
    for sse in decoder.finish():
        events += translator.handle(sse)
    events += translator.finish()
    assert translator.done and translator.finish() == []
    check_contract(events)
    return events


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def expected_reasoning(record: dict[str, Any]) -> str:
    """The reasoning sent beside the content, by the README's order of fields."""
    wire = record["expected"]["wire"]["reasoning"]
    for field in (
        "reasoning_content",
        "reasoning",
        "reasoning_details_text",
        "content_thinking_blocks_text",
    ):
        if wire.get(field):
            return str(wire[field])
    return ""


def assert_matches(record: dict[str, Any], events: list[StreamEvent]) -> None:
    expected = record["expected"]
    raised = expected.get("stream_error")
    if raised and raised["type"] == "APIError":
        assert isinstance(events[-1], StreamError), events[-1]
        return
    reference = expected.get("normalised") or expected
    choice = next(c for c in reference["choices"] if c["index"] == 0)
    message, end = final_message(events).message, turn_end(events)
    assert message.content == (choice["content"] or "")
    assert message.refusal == (choice["refusal"] or "")
    want = [(t["id"], t["name"], _arguments(t["arguments"])) for t in choice["tool_calls"] or []]
    assert [(c.id, c.name, _arguments(c.arguments)) for c in message.tool_calls] == want
    raw = choice["finish_reason"] or ""
    assert end.provider_finish_reason == raw
    assert end.finish_reason == OPENAI_FINISH.get(raw, "other")
    usage = reference.get("usage") or reference.get("usage_from_last_nonnull_usage_chunk")
    assert end.usage == _openai_usage(usage or {})
    assert "".join(part.text for part in message.thinking) == expected_reasoning(record)
    assert all(part.origin == ORIGIN for part in message.thinking)


@pytest.mark.parametrize("path", corpus())
def test_compat_stream_matches_sdk_in_every_chunking(path: Path) -> None:
    record, body = sidecar(path), path.read_bytes()
    whole = run([body])
    assert_matches(record, whole)
    for chunking in COMPAT_CHUNKINGS[1:]:
        assert run(cut(body, chunking)) == whole, chunking


def _details(path: Path) -> list[dict[str, Any]]:
    """The `reasoning_details` the server streamed, merged the way a client must send them back."""
    items: dict[int, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("data:") or "reasoning_details" not in line:
            continue
        chunk = json.loads(line.removeprefix("data:"))
        for choice in chunk.get("choices") or []:
            for fragment in (choice.get("delta") or {}).get("reasoning_details") or []:
                item = items.setdefault(fragment["index"], {})
                for key, value in fragment.items():
                    if key in ("text", "summary") and key in item:
                        item[key] += value
                    elif key not in item or value not in (None, ""):
                        item[key] = value
    return [items[index] for index in sorted(items)]


@pytest.mark.parametrize(
    ("name", "kind", "opaque"),
    [
        ("openrouter/o3-encrypted-reasoning", "reasoning.encrypted", "data"),
        ("openrouter/gemini31-two-tools", "reasoning.encrypted", "data"),
        ("openrouter/claude45-reasoning-details", "reasoning.text", "signature"),
    ],
)
def test_compat_reasoning_details_are_kept_whole_for_sending_back(
    name: str, kind: str, opaque: str
) -> None:
    if COMPAT is None or not COMPAT.is_dir():
        pytest.skip(MISSING or "compat corpus not found")
    path = COMPAT / f"{name}.sse"
    for chunking in COMPAT_CHUNKINGS:
        message = final_message(run(cut(path.read_bytes(), chunking))).message
        (part,) = message.thinking
        details = json.loads(part.payload)["reasoning_details"]
        assert details == _details(path)
        assert details[0]["type"] == kind and len(details[0][opaque]) > 40


THINK_TAGS = [
    "fireworks/deepseek-r1-think-tags",
    "groq/r1-distill-think-tags",
    "huggingface/router-r1-think-tags",
]


@pytest.mark.parametrize("name", THINK_TAGS)
def test_compat_think_tags_split_into_thinking_when_the_route_says_so(name: str) -> None:
    if COMPAT is None or not COMPAT.is_dir():
        pytest.skip(MISSING or "compat corpus not found")
    path = COMPAT / f"{name}.sse"
    record, body = sidecar(path), path.read_bytes()
    content = record["expected"]["choices"][0]["content"]
    thinking = record["expected"]["wire"]["reasoning"]["think_tag_text"]
    rest = content.split("</think>", 1)[1].lstrip()
    split = RouteOptions(think_tags="split")
    whole = run([body], split)
    message = final_message(whole).message
    assert (message.thinking[0].text, message.content) == (thinking, rest)
    for chunking in COMPAT_CHUNKINGS[1:]:
        assert run(cut(body, chunking), split) == whole, chunking


def test_compat_corpus_is_complete_and_not_copied_here() -> None:
    if COMPAT is None or not COMPAT.is_dir():
        pytest.skip(MISSING or "compat corpus not found")
    streams = sorted(COMPAT.glob("*/*.sse"))
    assert len(streams) == 36
    assert len({path.parent.name for path in streams}) == 20
    assert all(path.with_suffix(".json").is_file() for path in streams)
    ours = {path.name for top in ("fixtures", "tests") for path in (ROOT / top).rglob("*.sse")}
    assert not ours & {path.name for path in streams}
