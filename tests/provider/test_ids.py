"""Simulated ids come from where they sit and a seed, not from what the request says (issue 40 §1).

A re-record after a change to the requests (a new system prompt) then keeps
every id, signature and sealed payload the change did not touch, while ids
stay unique, in their providers' shapes, the same in every process, and a
tampered signature is still refused.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from typing import Any

import pytest

from navagent.core.wire_formats import FORMAT_IDS, WireFormatId
from navagent.fixtures.provider import SimHTTPError, plugin_for, simulate
from navagent.fixtures.provider.wire._ids import (
    IdSource,
    request_position,
    sign_thinking,
    thinking_signature_valid,
)
from tests.provider import _helpers as h

SHAPES: dict[WireFormatId, tuple[str, str, str]] = {
    # response id, call id, request id: prefix, length and alphabet of the real ones
    "openai": (r"chatcmpl-[0-9A-Za-z]{29}", r"call_[0-9A-Za-z]{24}", r"req_[0-9a-f]{32}"),
    "openai-responses": (r"resp_[0-9a-f]{50}", r"call_[0-9A-Za-z]{24}", r"req_[0-9a-f]{32}"),
    "anthropic": (
        r"msg_01[1-9A-HJ-NP-Za-km-z]{22}",
        r"toolu_01[1-9A-HJ-NP-Za-km-z]{22}",
        r"req_011C[1-9A-HJ-NP-Za-km-z]{20}",
    ),
    "gemini": (r"[0-9A-Za-z]{22}", r"fc_[0-9A-Za-z]{16}", r"[0-9a-f]{16}"),
}
THINKING = {"model": "claude-sonnet-4-5-thinking"}
PROMPT = "You are nav agent. Answer briefly and in plain text."
CHANGED = "You are nav agent. Answer briefly, in plain text."


def _ids(provider: WireFormatId, ids: IdSource, calls: int = 3) -> list[str]:
    plugin = plugin_for(provider)
    drawn = [plugin.response_id(ids), *(plugin.call_id(ids) for _ in range(calls))]
    return [*drawn, plugin.request_id(ids)]


def _anthropic(system: str, *, rounds: int = 0) -> dict[str, Any]:
    """A request of the first turn, after `rounds` rounds of tool calls."""
    messages: list[dict[str, Any]] = [h.user("delete dev-box and py-worker")]
    for number in range(rounds):
        use = {"type": "tool_use", "id": f"toolu_{number}", "name": "sandbox_list", "input": {}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": "none"}
        messages += [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    return h.anthropic_body(messages, system=system)


def test_the_same_position_gives_the_same_ids_whatever_the_request_says() -> None:
    first = simulate("anthropic", _anthropic(PROMPT), created=1)
    changed = simulate("anthropic", _anthropic(CHANGED), created=1)

    assert first.request.body != changed.request.body
    assert changed.response_id == first.response_id
    assert changed.request_id == first.request_id
    assert [c.id for c in changed.script.calls] == [c.id for c in first.script.calls]
    assert len(first.script.calls) == 2


def test_a_thinking_signature_and_a_sealed_item_keep_their_bytes_under_a_new_prompt() -> None:
    signed = simulate("anthropic", _anthropic(PROMPT) | THINKING, created=1)
    again = simulate("anthropic", _anthropic(CHANGED) | THINKING, created=1)
    assert signed.script.thinking_text == again.script.thinking_text
    assert again.script.signature == signed.script.signature != ""

    def responses(instructions: str) -> bytes:
        body = {
            "model": "gpt-5-mini",
            "instructions": instructions,
            "input": [{"role": "user", "content": "list my sandboxes"}],
            "tools": [{"type": "function", **tool["function"]} for tool in h.openai_tools()],
            "include": ["reasoning.encrypted_content"],
            "store": False,
            "stream": True,
        }
        return b"".join(simulate("openai-responses", body, created=1).frames)

    sealed, resealed = responses(PROMPT), responses(CHANGED)
    assert b'"encrypted_content":"gAAAAAB' in sealed
    assert resealed == sealed


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_every_other_position_seed_or_occurrence_gives_other_ids(provider: WireFormatId) -> None:
    places = [
        (seed, request_position(fmt, turn, step), occurrence)
        for seed in ("", "providers", "diagnose-failing")
        for fmt in FORMAT_IDS
        for turn in range(4)
        for step in range(1, 5)
        for occurrence in (1, 2)
    ]
    drawn = [
        _ids(provider, IdSource(where, occurrence, seed=seed)) for seed, where, occurrence in places
    ]

    every = [value for ids in drawn for value in ids]
    assert len(set(every)) == len(every) == len(places) * 5
    for ids in drawn:
        response, *calls, request = ids
        shapes = SHAPES[provider]
        assert re.fullmatch(shapes[0], response), response
        assert all(re.fullmatch(shapes[1], call) for call in calls), calls
        assert re.fullmatch(shapes[2], request), request


def test_the_next_request_of_a_conversation_and_a_retry_get_other_ids() -> None:
    first = simulate("anthropic", _anthropic(PROMPT), created=1)
    retry = simulate("anthropic", _anthropic(PROMPT), created=1, occurrence=2)
    after_tools = simulate("anthropic", _anthropic(PROMPT, rounds=1), created=1)
    other_seed = simulate("anthropic", _anthropic(PROMPT), created=1, seed="another-scenario")

    assert first.request.position != after_tools.request.position
    ids = {first.response_id, retry.response_id, after_tools.response_id, other_seed.response_id}
    assert len(ids) == 4
    assert first.request_id not in {retry.request_id, after_tools.request_id}


def test_a_call_keeps_its_id_when_the_answer_gains_other_ids() -> None:
    # Each kind of id counts on its own: the first call is the first call, however
    # many other ids the answer drew before it.
    plain, busy = IdSource("p"), IdSource("p")
    for label in ("resp", "msg", "rs"):
        busy.hex(label, 50)
    first = plain.base62("call", 24)
    assert busy.base62("call", 24) == first
    assert plain.base62("call", 24) != first  # the second call has its own


def test_ids_are_the_same_in_another_process() -> None:
    script = (
        "from navagent.fixtures.provider.wire._ids import IdSource\n"
        "ids = IdSource('anthropic turn 2 request 3', 2, seed='providers')\n"
        "print(ids.base58('toolu', 22), ids.hex('req', 32), ids.nonce('thinking').hex())\n"
    )
    here = IdSource("anthropic turn 2 request 3", 2, seed="providers")
    expected = f"{here.base58('toolu', 22)} {here.hex('req', 32)} {here.nonce('thinking').hex()}"
    for hash_seed in ("0", "12345"):
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": hash_seed, "PATH": ""},
        )
        assert done.stdout.strip() == expected


def test_a_tampered_moved_or_foreign_thinking_signature_is_refused() -> None:
    nonce = IdSource("anthropic turn 1 request 1").nonce("thinking")
    signature = sign_thinking("I will list the sandboxes.", nonce)
    assert thinking_signature_valid(signature, "I will list the sandboxes.")
    assert len(signature) == 3 + 172 and signature.startswith("Sim")

    assert not thinking_signature_valid(signature, "I will delete the sandboxes.")
    other = sign_thinking("Something else.", IdSource("elsewhere").nonce("thinking"))
    assert not thinking_signature_valid(other, "I will list the sandboxes.")
    flipped = signature[:50] + ("A" if signature[50] != "A" else "B") + signature[51:]
    assert not thinking_signature_valid(flipped, "I will list the sandboxes.")
    for foreign in ("", "SimAAAA", "EqQBCkYIBxgCKkBz" * 10, None, 42, "Sim" + "=" * 172):
        assert not thinking_signature_valid(foreign, "I will list the sandboxes.")


def test_the_simulator_refuses_a_thinking_block_sent_back_altered() -> None:
    answer = simulate("anthropic", _anthropic(PROMPT) | THINKING, created=1)
    use = [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        for call in answer.script.calls
    ]
    thinking = {
        "type": "thinking",
        "thinking": answer.script.thinking_text,
        "signature": answer.script.signature,
    }
    results = [{"type": "tool_result", "tool_use_id": u["id"], "content": "ok"} for u in use]
    messages = [
        h.user("delete dev-box and py-worker"),
        {"role": "assistant", "content": [thinking, *use]},
        {"role": "user", "content": results},
    ]
    body = h.anthropic_body(messages, system=PROMPT, **THINKING)
    assert simulate("anthropic", body, created=1).script.signature  # sent back as issued

    altered = copy.deepcopy(body)
    altered["messages"][1]["content"][0]["thinking"] += " And then some."
    with pytest.raises(SimHTTPError, match=r"messages\.1\.content\.0: Invalid `signature`"):
        simulate("anthropic", altered, created=1)
