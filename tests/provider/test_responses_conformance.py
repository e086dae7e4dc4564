"""The simulator's Responses streams have the structure of the real ones.

Compared with the real recordings in ../shared/conformance/responses (found
beside the Chat Completions corpus; skipped when absent): for every event type
the simulator sends, and every output item type in `output_item.added`/
`.done`, the keys every real one has are present, and the simulator sends no
key no real one has. `obfuscation` (random padding) is left out on purpose.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from navagent.core.messages import ChatRequest, UserMessage
from navagent.core.tools import TOOLS
from navagent.fixtures.provider import simulate
from navagent.gateway.protocols import PROTOCOLS
from tests.provider import _helpers as h

OPTIONAL_EVERYWHERE = {"obfuscation", "logprobs", "content_filters"}


@cache
def corpus() -> Path:
    found = h.conformance_dir()
    folder = found.parent / "responses" if found is not None else None
    if folder is None or not folder.is_dir():
        pytest.skip("Responses recordings not found beside ../shared/conformance/real")
    return folder


def events(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[len(b"data: ") :])
        for line in body.split(b"\n")
        if line.startswith(b"data: ")
    ]


def shapes(all_events: list[dict[str, Any]]) -> dict[str, list[set[str]]]:
    """Key sets by event type, and by `item:<type>` for the items of output_item events."""
    found: dict[str, list[set[str]]] = defaultdict(list)
    for event in all_events:
        found[event["type"]].append(set(event))
        if event["type"] in ("response.output_item.added", "response.output_item.done"):
            found[f"item:{event['item']['type']}:{event['type'][-5:]}"].append(set(event["item"]))
    return found


def real_shapes() -> dict[str, list[set[str]]]:
    merged: dict[str, list[set[str]]] = defaultdict(list)
    for path in sorted(corpus().glob("*.sse")):
        for kind, keys in shapes(events(path.read_bytes())).items():
            merged[kind] += keys
    return merged


def sim_stream(text: str, model: str) -> bytes:
    request = ChatRequest(messages=(UserMessage(content=text),), tools=TOOLS)
    body = (
        PROTOCOLS["openai_responses"]
        .build_request(request, endpoint="http://sim.test", model=model, api_key="k")
        .body
    )
    return b"".join(simulate("openai-responses", body).frames)


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("hello there", "gpt-4.1-mini"),
        ("list my sandboxes and list providers", "gpt-5-mini"),
        ("show me the logs of dev-box", "gpt-5-mini"),
    ],
)
def test_simulated_responses_events_have_the_real_keys(text: str, model: str) -> None:
    real = real_shapes()
    sim = shapes(events(sim_stream(text, model)))
    for kind, sim_keys in sim.items():
        assert kind in real, f"the simulator sends {kind}, which no real stream has"
        required = set.intersection(*real[kind]) - OPTIONAL_EVERYWHERE - {"sequence_number"}
        known = set.union(*real[kind])
        for keys in sim_keys:
            assert required <= keys, f"{kind}: missing {required - keys}"
            assert keys <= known, f"{kind}: unknown {keys - known}"
