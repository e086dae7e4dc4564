"""The cassette format: readable, exact, filtered, and diffs that name the change."""

from __future__ import annotations

import json
from typing import Any

import pytest
from vcr.request import Request

from navagent.core.wire_formats import FORMAT_IDS, WIRE_FORMATS, WireFormat, wire_format
from navagent.fixtures.harness import RequestShape, compare_requests, load_cassette
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.cassettes._cassette import _keep_response_headers, _request_filter
from navagent.fixtures.harness.cassettes._matching import (
    json_body_matcher,
    json_changes,
    unified_json_diff,
)
from navagent.fixtures.provider.wire._kit import kit_for
from navagent.gateway.protocols import PROTOCOLS
from tests.scenarios.conftest import CASSETTES


def cassette_dict(body: str, *, content_type: str = "text/event-stream") -> dict[str, Any]:
    return {
        "version": 1,
        "metadata": {"source": {"kind": "simulated"}},
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "http://h/v1/messages",
                    "body": '{"model":"m","messages":[{"role":"user","content":"héllo"}]}',
                    "headers": {"content-type": ["application/json"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": [content_type]},
                    "body": {"string": body},
                },
            }
        ],
    }


def test_committed_cassettes_are_stable_under_a_reload() -> None:
    for path in sorted(CASSETTES.glob("*/*.yaml"))[:6]:
        text = path.read_text(encoding="utf-8")
        assert _serializer.serialize(_serializer.deserialize(text)) == text, path


def test_json_bodies_are_stored_parsed_and_sse_as_literal_text() -> None:
    sse = 'event: ping\ndata: {"type": "ping"}\n\n'
    text = _serializer.serialize(cassette_dict(sse))
    assert text.startswith("metadata:\n  source:\n    kind: simulated\nversion: 1\n")
    assert "    parsed_body:\n      model: m\n" in text
    assert "content: héllo" in text  # UTF-8, not \u escapes
    assert '      string: |+\n        event: ping\n        data: {"type": "ping"}\n' in text


@pytest.mark.parametrize(
    "sse",
    [
        "data: a\r\n\r\n",  # CRLF framing
        "data: \x85 next-line\n\n",  # NEL is a YAML line break
        "data: \u2028 \u2029\n\n",
        "data: trailing space \n\n",
        "data: no final newline",
    ],
)
def test_sse_bodies_come_back_byte_for_byte(sse: str) -> None:
    loaded = _serializer.deserialize(_serializer.serialize(cassette_dict(sse)))
    assert loaded["interactions"][0]["response"]["body"]["string"] == sse


def test_a_json_response_is_parsed_and_restored_as_equal_json() -> None:
    error = '{"error": {"type": "overloaded_error", "message": "Overloaded"}}'
    text = _serializer.serialize(cassette_dict(error, content_type="application/json"))
    assert "parsed_body:\n      error:\n        type: overloaded_error" in text
    restored = _serializer.deserialize(text)["interactions"][0]["response"]["body"]["string"]
    assert json.loads(restored) == json.loads(error)


def test_only_allowed_headers_are_recorded_and_the_host_can_be_renamed() -> None:
    request = Request(
        "POST",
        "http://127.0.0.1:40123/v1/chat/completions?x=1",
        b"{}",
        {
            "Authorization": "Bearer secret",
            "x-api-key": "secret",
            "cookie": "a=b",
            "user-agent": "python-httpx/0.28",
            "content-type": "application/json",
            "anthropic-version": "2023-06-01",
        },
    )
    kept = _request_filter("http://simulated-provider.invalid", redacting=True)(request)
    assert set(kept.headers) == {"content-type", "anthropic-version"}
    assert kept.uri == "http://simulated-provider.invalid/v1/chat/completions?x=1"
    assert "Authorization" in request.headers  # the live request is untouched
    response = {
        "headers": {"Set-Cookie": ["s=1"], "openai-organization": ["org"], "x-request-id": ["r"]}
    }
    assert _keep_response_headers(response)["headers"] == {"x-request-id": ["r"]}


def test_load_cassette_reads_source_and_requests() -> None:
    loaded = load_cassette(CASSETTES / "anthropic" / "thinking-round-trip.yaml")
    assert loaded.source.kind == "simulated" and "NOT from a real API" in loaded.source.note
    assert loaded.source.model == "claude-sonnet-4-5-thinking"
    assert [request.path for request in loaded.requests] == ["/v1/messages"] * 4
    # The second request sends the signed thinking block back.
    first_assistant = loaded.requests[1].body["messages"][1]["content"][0]
    assert first_assistant["type"] == "thinking" and first_assistant["signature"].startswith("Sim")


# --- what changed ----------------------------------------------------------------


def test_json_changes_name_each_changed_path() -> None:
    before = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"a": 1}]}
    after = {
        "model": "m",
        "messages": [{"role": "user", "content": "ho"}, {"role": "x"}],
        "stream": True,
    }
    assert json_changes(before, after) == [
        'messages[0].content: "hi" -> "ho"',
        "messages: the cassette has 1 items, the replay 2",
        'tools: missing in the replay (cassette has [{"a": 1}])',
        "stream: added in the replay (true)",
    ]


def test_a_change_deep_in_a_long_string_is_shown_in_context() -> None:
    before = "x" * 300 + " the sandboxes are ready " + "y" * 300
    after = before.replace("sandboxes", "sandboxen")
    (change,) = json_changes({"text": before}, {"text": after})
    assert change.startswith('text: "...')
    assert "the sandboxes are" in change.split(" -> ")[0]
    assert "the sandboxen are" in change.split(" -> ")[1]
    assert len(change) < 200


def test_type_changes_are_differences() -> None:
    assert json_changes({"n": 1}, {"n": "1"}) == ['n: 1 -> "1"']
    assert json_changes([1, True], [1, 1]) == ["[1]: true -> 1"]


def test_the_unified_diff_is_of_sorted_indented_json() -> None:
    diff = unified_json_diff({"b": 1, "a": "x"}, {"a": "y", "b": 1}).splitlines()
    assert diff[:2] == ["--- cassette", "+++ replay"]
    assert '-  "a": "x",' in diff and '+  "a": "y",' in diff


def test_the_vcr_matcher_raises_with_the_changes() -> None:
    recorded = Request("POST", "http://h/v1/x", b'{"a": 1}', {})
    json_body_matcher(Request("POST", "http://h/v1/x", b'{ "a" : 1 }', {}), recorded)
    with pytest.raises(AssertionError, match=r"a: 1 -> 2"):
        json_body_matcher(Request("POST", "http://h/v1/x", b'{"a": 2}', {}), recorded)


def test_requests_are_compared_by_position() -> None:
    a, b, c = (RequestShape("POST", "/v1/messages", {"n": n}) for n in range(3))
    assert compare_requests([a, b], [a, b]) is None
    changed = compare_requests([a, b], [a, c])
    assert changed is not None and changed.index == 1
    assert changed.summary == "request 2 (POST /v1/messages) differs from the cassette: n: 1 -> 2"
    extra = compare_requests([a], [a, b])
    assert extra is not None and "is not in the cassette" in extra.summary
    missing = compare_requests([a, b], [a])
    assert (
        missing is not None
        and missing.summary == "request 2 in the cassette was never sent by the replay"
    )
    moved = compare_requests([a], [RequestShape("POST", "/v1/chat/completions", {"n": 0})])
    assert moved is not None and moved.changes == ["POST /v1/messages -> POST /v1/chat/completions"]


# A format may take its key in a header of its own or in the URL's query (the
# row's `auth_header`, `auth_query`: Gemini's `x-goog-api-key`, `?key=`): a
# cassette keeps neither, whatever the key looks like.
@pytest.mark.parametrize("row", list(WIRE_FORMATS.values()), ids=FORMAT_IDS)
def test_a_key_in_the_query_or_the_key_header_is_never_recorded(row: WireFormat) -> None:
    secret = "PlainKey0123456789"
    path = row.request_path("m")
    query = "&".join(
        part for part in (row.stream_query, row.auth_query and f"{row.auth_query}={secret}") if part
    )
    request = Request(
        "POST",
        f"http://127.0.0.1:40123{path}?{query}",
        b"{}",
        {row.auth_header: secret, "content-type": "application/json"},
    )
    kept = _request_filter("http://simulated-provider.invalid", redacting=True)(request)
    assert set(kept.headers) == {"content-type"}
    expected = f"http://simulated-provider.invalid{path}"
    assert kept.uri == (f"{expected}?{row.stream_query}" if row.stream_query else expected)
    assert secret in request.uri or not row.auth_query  # the live request is untouched


@pytest.mark.parametrize("format_id", FORMAT_IDS)
def test_a_key_echoed_in_a_url_is_redacted_from_errors(format_id: str) -> None:
    secret = "PlainKey0123456789"
    message = f"Bad request to /v1/models/m:generateContent?key={secret}"
    body = kit_for(format_id).error_body(400, message)
    error = PROTOCOLS[wire_format(format_id).protocol].error_from_response(400, body)
    assert secret not in error.message and "key=[redacted]" in error.message
