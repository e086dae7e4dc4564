"""The recorded Responses requests carry each encrypted reasoning item back, in place.

Reads `cassettes/openai-responses/reasoning-tool-loop.yaml` as committed: a
reasoning model lists the sandboxes, reads the logs of one, then answers (three
rounds), then a second turn. Every later request must hold every reasoning
item streamed so far, byte for byte, directly before the item that followed it
in its response.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from navagent.fixtures.harness.cassettes import _serializer

CASSETTE = (
    Path(__file__).resolve().parents[2]
    / "cassettes"
    / "openai-responses"
    / "reasoning-tool-loop.yaml"
)


def streamed_items(body: str) -> list[dict[str, Any]]:
    """The finished output items of one recorded response, in output order."""
    items = []
    for line in body.splitlines():
        if line.startswith("data: "):
            event = json.loads(line[len("data: ") :])
            if event["type"] == "response.output_item.done":
                items.append(event["item"])
    return items


def test_encrypted_reasoning_goes_back_in_place_on_every_later_request() -> None:
    interactions = _serializer.deserialize(CASSETTE.read_text(encoding="utf-8"))["interactions"]
    requests = [json.loads(i["request"]["body"]) for i in interactions]
    responses = [streamed_items(i["response"]["body"]["string"]) for i in interactions]
    assert len(requests) == 5  # turn 1: list, logs, answer; turn 2: status, answer
    # What followed each reasoning item in its response: a call (by call_id) or the text.
    followers: dict[str, tuple[dict[str, Any], str]] = {}
    for output in responses:
        for item, after in zip(output, output[1:], strict=False):
            if item["type"] == "reasoning":
                followers[item["id"]] = (item, after.get("call_id", "message"))
    assert len(followers) == 5  # every response reasoned
    for number, request in enumerate(requests):
        sent = request["input"]
        replayed = [entry for entry in sent if entry["type"] == "reasoning"]
        earlier = [item for output in responses[:number] for item in output]
        assert [r["id"] for r in replayed] == [i["id"] for i in earlier if i["type"] == "reasoning"]
        for position, entry in enumerate(sent):
            if entry["type"] != "reasoning":
                continue
            streamed, follower = followers[entry["id"]]
            assert entry["encrypted_content"] == streamed["encrypted_content"]
            assert entry["encrypted_content"].startswith("gAAAA")
            assert entry["summary"] == streamed["summary"] != []
            following = sent[position + 1]
            assert following.get("call_id", "message") == follower
            assert following["type"] in ("function_call", "message")
    assert request["store"] is False
    assert request["include"] == ["reasoning.encrypted_content"]
