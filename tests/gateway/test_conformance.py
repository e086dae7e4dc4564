"""Real recorded provider streams translate to what the official SDKs made of them.

Two corpora (see tests/gateway/corpus.py): `real` and `peer` (recordings by
other public projects). Every stream is fed through `SSEDecoder` and the
protocol translator whole, one byte at a time and in random chunks of 1..97
and 1..4096 bytes; each chunking must agree with the SDK's accumulation. What
a stream carries that the neutral model does not is listed per stream in
`NOT_MODELLED`. The hand-made transcripts in fixtures/sse are run through the
same SDK oracle and comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from navagent.core.events import FinishReason, StreamError, StreamEvent, Usage
from tests.gateway.corpus import (
    CHUNKINGS,
    PEER,
    PROVIDERS,
    REAL,
    chunked,
    corpus_files,
    load,
)
from tests.gateway.not_modelled import not_modelled
from tests.gateway.sdk_oracle import anthropic_expected, openai_expected
from tests.gateway.streams import (
    ROOT,
    TRANSCRIPTS,
    final_message,
    stream_error,
    translate,
    turn_end,
)
from tests.gateway.thinking_parts import payload_of

SERVER_TOOL = "usage.server_tool_use"
NOT_MODELLED: dict[str, set[str]] = {
    # real
    "anthropic/haiku45-thinking-then-tool-use": {"tool_use.caller"},
    "anthropic/haiku45-two-tool-use-empty-input": {"tool_use.caller"},
    "anthropic/sonnet4-web-search-citations-no-ping": {
        "block server_tool_use",
        "block web_search_tool_result",
        "delta citations_delta",
        SERVER_TOOL,
    },
    "anthropic/sonnet46-code-execution-server-tool": {
        "block bash_code_execution_tool_result",
        "block server_tool_use",
        "message_delta.container",
        SERVER_TOOL,
    },
    "anthropic/sonnet46-text-plus-two-tools": {"tool_use.caller"},
    "anthropic/sonnet46-tool-search-then-tool-use": {
        "block server_tool_use",
        "block tool_search_tool_result",
        "tool_use.caller",
        SERVER_TOOL,
    },
    "openai/gpt4o-mini-n2-multiple-choices": {"choices n>1"},
    "openai/gpt5-text-usage-then-moderation-chunk": {"chunk.moderation"},
    # peer
    "anthropic/haiku45-tool-use-only": {"tool_use.caller"},
    "anthropic/opus46-compaction-block": {
        "block compaction",
        "delta compaction_delta",
        "usage.iterations",
        SERVER_TOOL,
    },
    "anthropic/sonnet4-web-fetch": {
        "block server_tool_use",
        "block web_fetch_tool_result",
        SERVER_TOOL,
    },
    "anthropic/sonnet4-web-search-beta-22-blocks": {
        "block server_tool_use",
        "block web_search_tool_result",
        "delta citations_delta",
        SERVER_TOOL,
    },
    "anthropic/sonnet4-web-search-citations": {
        "block server_tool_use",
        "block web_search_tool_result",
        "delta citations_delta",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-code-execution-bash": {
        "block bash_code_execution_tool_result",
        "block server_tool_use",
        "block text_editor_code_execution_tool_result",
        "message_delta.container",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-mcp-tool-use-and-result": {
        "block mcp_tool_result",
        "block mcp_tool_use",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-pause-turn-web-search": {
        "block server_tool_use",
        "block web_search_tool_result",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-programmatic-tool-calling-1": {
        "block server_tool_use",
        "message_delta.container",
        "tool_use.caller",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-programmatic-tool-calling-15": {
        "block code_execution_tool_result",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-programmatic-tool-calling-2-prepopulated": {
        "message.container",
        "tool_use.caller",
        SERVER_TOOL,
    },
    "anthropic/sonnet45-tool-search-then-tool-use": {
        "block server_tool_use",
        "block tool_search_tool_result",
        "tool_use.caller",
        SERVER_TOOL,
    },
    "anthropic/sonnet46-advisor-tool": {
        "block advisor_tool_result",
        "block server_tool_use",
        "usage.iterations",
        SERVER_TOOL,
    },
    "anthropic/sonnet46-web-fetch-via-code-execution": {
        "block code_execution_tool_result",
        "block server_tool_use",
        "block web_fetch_tool_result",
        "message_delta.container",
        SERVER_TOOL,
    },
    "anthropic/sonnet5-code-execution-prompt-cache": {
        "block bash_code_execution_tool_result",
        "block server_tool_use",
        "message_delta.container",
        SERVER_TOOL,
    },
    "openai/azure-gpt4o-mini-long-text": {
        "choice.content_filter_results",
        "chunk.prompt_filter_results",
    },
    "openai/azure-gpt4o-mini-tool-call": {"chunk.prompt_filter_results"},
    "openai/azure-gpt5-nano-model-router": {
        "choice.content_filter_results",
        "chunk.prompt_filter_results",
    },
    "openai/gpt4o-2409-content-logprobs": {"logprobs"},
    "openai/gpt4o-2409-n3-choices": {"choices n>1"},
    "openai/gpt4o-2409-refusal-logprobs": {"logprobs"},
}
"""Parts of each stream the neutral model drops on purpose (see not_modelled.py).

Server-tool blocks and their results, citations, `caller` on tool_use blocks,
compaction, `container`, OpenAI choices other than 0, logprobs and Azure
filter results. A stream missing here carries nothing the model drops.
"""

# The oracle's own mapping, written out independently of the translators.
OPENAI_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
ANTHROPIC_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}
ALL_FILES = [p for corpus in (REAL, PEER) for f in PROVIDERS for p in corpus_files(corpus, f)]


def _arguments(raw: str) -> Any:
    """Parsed arguments, or the raw text when it is not JSON; empty means {} (our rule)."""
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def assert_matches_sdk(provider: str, expected: dict[str, Any], events: list[StreamEvent]) -> None:
    """Compare text, refusal, tool calls, finish reasons and usage with the SDK's result."""
    message, end = final_message(events).message, turn_end(events)
    calls = [(c.id, c.name, _arguments(c.arguments)) for c in message.tool_calls]
    if provider == "openai":
        choice = next(c for c in expected["choices"] if c["index"] == 0)
        assert message.content == (choice["content"] or "")
        assert message.refusal == (choice["refusal"] or "")
        sdk_calls = list(choice["tool_calls"] or [])
        if choice.get("function_call"):  # legacy API: one call, no id on the wire
            sdk_calls.append({"id": None, **choice["function_call"]})
        want_calls = [
            (
                t["id"] or calls[i][0],  # no id on the wire: ours is generated
                t["name"],
                _arguments(t["arguments"]),
            )
            for i, t in enumerate(sdk_calls)
        ]
        assert calls == want_calls
        raw = choice["finish_reason"]
        assert end.provider_finish_reason == raw
        neutral = OPENAI_FINISH.get(raw, "other")
        refused = neutral == "stop" and choice["refusal"]
        assert end.finish_reason == ("refusal" if refused else neutral)
        # The SDK keeps the LAST usage, so a trailing `usage: null` chunk erases
        # it there; we keep the last non-null one (the corpus records it).
        sdk_usage = expected.get("usage") or expected.get("usage_from_last_nonnull_usage_chunk")
        assert end.usage == _openai_usage(sdk_usage or {})
        return
    blocks = expected["content"]
    assert message.content == "".join(b["text"] for b in blocks if b["type"] == "text")
    assert message.refusal == ""
    want = [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    if expected["stop_reason"] == "max_tokens" and calls and isinstance(calls[-1][2], str):
        # Accepted difference: a tool_use cut off by max_tokens. The SDK parses
        # the unfinished JSON leniently, we pass the raw fragments on; the stop
        # reason says the call is incomplete either way.
        assert want[-1][:2] == calls[-1][:2]
        calls, want = calls[:-1], want[:-1]
    assert calls == want
    payloads = [payload_of(p) for p in message.thinking]
    assert [
        (p.text, d.get("signature", ""), d.get("redacted_data", ""))
        for p, d in zip(message.thinking, payloads, strict=True)
    ] == [
        (b.get("thinking", ""), b.get("signature", ""), b.get("data", ""))
        for b in blocks
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    raw = expected["stop_reason"] or ""
    assert (end.provider_finish_reason, end.finish_reason) == (
        raw,
        ANTHROPIC_FINISH.get(raw, "other"),
    )
    assert end.usage == _anthropic_usage(expected["usage"])


def _openai_usage(usage: dict[str, Any]) -> Usage:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens", 0),
        cache_read_tokens=prompt_details.get("cached_tokens") or 0,
        output_tokens=usage.get("completion_tokens", 0),
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


def _anthropic_usage(usage: dict[str, Any]) -> Usage:
    read = usage.get("cache_read_input_tokens") or 0
    write = usage.get("cache_creation_input_tokens") or 0
    return Usage(
        input_tokens=(usage.get("input_tokens") or 0) + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=usage.get("output_tokens") or 0,
        reasoning_tokens=(usage.get("output_tokens_details") or {}).get("thinking_tokens") or 0,
    )


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("path", ALL_FILES)
def test_conformance_stream_matches_sdk_in_every_chunking(path: Path, chunking: str) -> None:
    record = load(path)
    events = translate(record.provider, chunked(record.body, chunking))
    assert_matches_sdk(record.provider, record.expected, events)
    if chunking != "whole":
        assert events == translate(record.provider, record.body)


@pytest.mark.parametrize("path", ALL_FILES)
def test_conformance_not_modelled_parts_are_the_listed_ones(path: Path) -> None:
    record = load(path)
    assert not_modelled(record.provider, record.body) == NOT_MODELLED.get(record.name, set())


def test_conformance_not_modelled_table_names_only_existing_streams() -> None:
    if REAL is None or PEER is None:
        pytest.skip("conformance corpus not found")
    names = {load(p).name for corpus in (REAL, PEER) for p in corpus.rglob("*.json")}
    assert set(NOT_MODELLED) <= names


def test_conformance_peer_corpus_is_complete() -> None:
    if PEER is None or not PEER.is_dir():
        pytest.skip("peer corpus not found")
    counts = {f: len(list((PEER / f).glob("*.sse"))) for f in PROVIDERS}
    assert counts == {"openai": 26, "anthropic": 32}
    assert all(p.with_suffix(".json").is_file() for p in PEER.rglob("*.sse"))


@pytest.mark.parametrize("path", corpus_files(REAL, "unparseable"))
def test_conformance_unparseable_stream_is_a_clear_error(path: Path) -> None:
    record = load(path)
    error = stream_error(translate(record.provider, record.body)).error
    assert error.message.startswith(("OpenAI stream", "Anthropic stream")), error.message


def test_conformance_corpus_is_not_copied_into_the_repository() -> None:
    names = {path.name for top in ("fixtures", "tests") for path in (ROOT / top).rglob("*.json")}
    for corpus in (REAL, PEER):
        if corpus is not None:
            assert not names & {path.name for path in corpus.rglob("*.json")}


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
