"""Wire determinism, pacing, max_tokens and HTTP behaviour of the simulator."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.wire_formats import WireFormatId
from navagent.fixtures.provider import Plan, PlannedCall, SimulatedProvider, simulate
from navagent.fixtures.provider.wire._ids import sim_clock
from navagent.fixtures.provider.wire._script import build_script, split_arguments, split_pieces
from tests.provider import _helpers as h

HEADERS = {"authorization": "Bearer k", "x-api-key": "k", "anthropic-version": "2023-06-01"}


def test_same_request_gives_the_same_bytes_and_a_retry_gets_new_ids() -> None:
    body = h.anthropic_body([h.user("delete dev-box and py-worker")], model="m-thinking")
    first = simulate("anthropic", body, created=1)
    assert simulate("anthropic", body, created=1).frames == first.frames
    retry = simulate("anthropic", body, created=1, occurrence=2)
    assert retry.frames != first.frames
    assert retry.script.text == first.script.text
    assert [c.id for c in retry.script.calls] != [c.id for c in first.script.calls]
    ids = [c.id for c in first.script.calls]
    assert len(set(ids)) == 2 and all(i.startswith("toolu_01") and len(i) == 30 for i in ids)


def test_recording_twice_against_fresh_servers_gives_identical_bytes(monkeypatch) -> None:
    monkeypatch.setenv("NAV_SIM_CLOCK", "2026-03-04T17:00:00Z")
    captured = []
    for _ in range(2):
        with SimulatedProvider() as sim, httpx.Client(base_url=sim.base_url) as client:
            bodies = []
            for path, body in [
                ("/v1/chat/completions", h.openai_body([h.user("list my sandboxes")])),
                ("/v1/chat/completions", h.openai_body([h.user("list my sandboxes")])),
                ("/v1/messages", h.anthropic_body([h.user("show provider gh")])),
            ]:
                response = client.post(path, json=body, headers=HEADERS)
                bodies.append((dict(response.headers), response.content))
            captured.append(bodies)
    assert captured[0] == captured[1]
    assert captured[0][0][1] != captured[0][1][1]  # the identical second request got fresh ids
    assert b'"created":1772643600' in captured[0][0][1]


def test_sim_clock_reads_nav_sim_clock(monkeypatch) -> None:
    monkeypatch.setenv("NAV_SIM_CLOCK", "2026-03-04T17:00:00+00:00")
    assert sim_clock() == 1_772_643_600
    monkeypatch.setenv("NAV_SIM_CLOCK", "2026-03-04T18:00:00+01:00")
    with pytest.raises(ValueError, match="must be in UTC"):
        sim_clock()
    monkeypatch.setenv("NAV_SIM_CLOCK", "yesterday")
    with pytest.raises(ValueError, match="NAV_SIM_CLOCK='yesterday' is not an ISO-8601"):
        SimulatedProvider().start()
    monkeypatch.delenv("NAV_SIM_CLOCK")
    assert abs(sim_clock() - time.time()) < 5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_max_tokens_cuts_the_stream_and_reports_length(provider) -> None:
    make = h.openai_body if provider == "openai" else h.anthropic_body
    fold = h.fold_openai if provider == "openai" else h.fold_anthropic
    full = simulate(provider, make([h.user("hello")]))
    short = simulate(provider, make([h.user("hello")], max_tokens=5))
    folded = fold(b"".join(short.frames))
    assert folded["text"] == "".join(split_pieces(full.plan.text)[:5])
    if provider == "openai":
        assert folded["finish"] == "length" and folded["usage"]["completion_tokens"] == 5
    else:
        assert folded["stop"] == "max_tokens" and folded["usage"]["output_tokens"] == 5


def test_split_pieces_are_word_pieces_that_rebuild_the_text() -> None:
    pieces = split_pieces("You have 3 sandboxes:\n- dev-box")
    assert pieces == ["You", " have", " 3", " sandboxe", "s:", "\n-", " dev-box"]
    assert split_arguments('{"name": "dev-box"}') == ['{"na', 'me": ', '"de', 'v-box"', "}"]


TEXT = st.text(st.characters(codec="utf-8"), max_size=60)


@settings(max_examples=200, deadline=None)
@given(
    text=TEXT,
    thinking=TEXT,
    names=st.lists(st.sampled_from(["sandbox_get", "cluster_status"]), max_size=3),
    argument=TEXT,
    max_tokens=st.none() | st.integers(1, 40),
)
def test_script_respects_max_tokens_and_streams_prefixes(
    text, thinking, names, argument, max_tokens
) -> None:
    calls = tuple(PlannedCall(n, {"name": argument} if n == "sandbox_get" else {}) for n in names)
    plan = Plan(text=text, tool_calls=calls, thinking=thinking)
    script = build_script(
        plan, call_ids=[f"id{i}" for i in range(len(calls))], max_tokens=max_tokens, input_tokens=7
    )
    if max_tokens is not None:
        assert script.output_tokens <= max_tokens
    assert thinking.startswith(script.thinking_text) and text.startswith(script.text_content)
    complete = script.text_content == text and script.thinking_text == thinking
    complete = (
        complete and len(script.calls) == len(calls) and all(c.complete for c in script.calls)
    )
    assert (script.stop == "length") == (not complete)
    for scripted, planned in zip(script.calls, calls, strict=False):
        assert planned.arguments_json().startswith(scripted.arguments)


@settings(max_examples=100, deadline=None)
@given(
    request=st.sampled_from(
        ["hello", "list my sandboxes", "delete a-1 and b-2", "create a sandbox named é running ls"]
    ),
    max_tokens=st.none() | st.integers(1, 30),
)
def test_streams_fold_back_to_the_script(request, max_tokens) -> None:
    cases: list[tuple[WireFormatId, Any, Any]] = [
        ("openai", h.openai_body, h.fold_openai),
        ("anthropic", h.anthropic_body, h.fold_anthropic),
    ]
    for provider, make, fold in cases:
        extra = {"max_tokens": max_tokens} if max_tokens else {}
        reply = simulate(provider, make([h.user(request)], model="m-thinking", **extra))
        folded = fold(b"".join(reply.frames))
        script = reply.script
        assert folded["text"] == script.text_content
        assert [(c["id"], c["name"], c["arguments"] or "{}") for c in folded["calls"]] == [
            (c.id, c.name, c.arguments or "{}") for c in script.calls
        ]
        if provider == "anthropic":
            assert (
                folded["thinking"] == script.thinking_text
                and folded["signature"] == script.signature
            )


def test_events_are_streamed_incrementally_with_pacing(sim) -> None:
    sim.pacing_ms = 40
    body = h.anthropic_body([h.user("hello")])
    planned = len(simulate("anthropic", body).frames)
    arrivals = []
    with httpx.Client(base_url=sim.base_url) as client:
        start = time.monotonic()
        with client.stream("POST", "/v1/messages", json=body, headers=HEADERS) as response:
            for _ in response.iter_lines():
                arrivals.append(time.monotonic() - start)
    assert arrivals[0] < 0.2  # the first event does not wait for the rest
    assert arrivals[-1] >= (planned - 1) * 0.04 * 0.9
    sim.pacing_ms = 0
    start = time.monotonic()
    with httpx.Client(base_url=sim.base_url) as client:
        client.post("/v1/messages", json=body, headers=HEADERS)
    assert time.monotonic() - start < (planned - 1) * 0.04 / 2


def test_keep_alive_serves_several_requests_on_one_connection(sim) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    try:
        texts = []
        sockets = []
        for request in ("hello", "list my sandboxes"):
            payload = json.dumps(h.openai_body([h.user(request)]))
            connection.request(
                "POST",
                "/v1/chat/completions",
                payload,
                {**HEADERS, "content-type": "application/json"},
            )
            sockets.append(connection.sock)
            response = connection.getresponse()
            assert response.getheader("transfer-encoding") == "chunked"
            texts.append(h.fold_openai(response.read()))
        assert sockets[0] is sockets[1] is connection.sock  # one connection, kept alive
        assert texts[0]["finish"] == "stop" and texts[1]["calls"][0]["name"] == "sandbox_list"
    finally:
        connection.close()


def test_non_streaming_bodies_match_the_script(sim) -> None:
    with httpx.Client(base_url=sim.base_url) as client:
        body = h.anthropic_body([h.user("show sandbox dev-box")], stream=None)
        response = client.post("/v1/messages", json=body, headers=HEADERS)
    assert response.headers["content-type"] == "application/json"
    message = response.json()
    assert [block["type"] for block in message["content"]] == ["text", "tool_use"]
    assert message["content"][1]["input"] == {"name": "dev-box"}
    assert message["stop_reason"] == "tool_use"
