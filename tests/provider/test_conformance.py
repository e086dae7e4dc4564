"""The simulator's streams have the structure of real provider streams.

Compared with the real recordings in ../shared/conformance/real (found above
the repository, or at $NAV_CONFORMANCE_DIR; skipped when absent, never copied
here): the same event order pattern, and per event kind the same keys: keys
every real event has are required, keys no real event has are forbidden,
keys only some have (OpenAI `obfuscation`/`service_tier`, Anthropic
`stop_details`/`inference_geo`/`caller`) are optional. The simulator sends
`service_tier` and not `obfuscation` (see `_openai_wire`).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from navagent.fixtures.provider import simulate
from tests.provider import _helpers as h

CLOCK = 1_772_643_600


# -- structure compared with the real recordings ------------------------------------


@cache
def corpus() -> Path:
    found = h.conformance_dir()
    if found is None:
        pytest.skip(
            "real recordings not found: set NAV_CONFORMANCE_DIR or provide "
            "../shared/conformance/real"
        )
    return found


def recordings(provider: str) -> dict[str, dict[str, Any]]:
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((corpus() / provider).glob("*.json"))
    }


def sim_body(provider: str, messages: list[dict[str, Any]], **extra: Any) -> bytes:
    body = (h.openai_body if provider == "openai" else h.anthropic_body)(messages, **extra)
    return b"".join(simulate(provider, body, created=CLOCK).frames)


def tool_round(provider: str, request: str, output: str, **extra: Any) -> list[dict[str, Any]]:
    """A conversation ending with the result of the call the simulator makes for `request`."""
    body = (h.openai_body if provider == "openai" else h.anthropic_body)([h.user(request)], **extra)
    reply = simulate(provider, body)
    (call,) = reply.script.calls
    if provider == "openai":
        return [
            h.user(request),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": output},
        ]
    content: list[dict[str, Any]] = []
    if reply.script.signature:
        content.append(
            {
                "type": "thinking",
                "thinking": reply.script.thinking_text,
                "signature": reply.script.signature,
            }
        )
    content.append({"type": "text", "text": reply.script.text_content})
    content.append(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": json.loads(call.arguments)}
    )
    return [
        h.user(request),
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": output}],
        },
    ]


def anthropic_shape(body: bytes, *, pings: bool = False) -> list[str]:
    """Event types in order, runs of deltas collapsed to one `delta+`, block types named."""
    shape: list[str] = []
    for event, data in h.sse_events(body):
        payload = json.loads(data)
        if event == "ping" and not pings:
            continue
        if event == "content_block_start":
            name = f"start:{payload['content_block']['type']}"
        elif event == "content_block_delta":
            name = f"delta+:{payload['delta']['type']}"
        else:
            name = str(event)
        if not (shape and shape[-1] == name and name.startswith("delta+")):
            shape.append(name)
    # a thinking block's signature arrives as one extra delta after its thinking deltas
    return [
        s
        for i, s in enumerate(shape)
        if not (s == "delta+:signature_delta" and i and shape[i - 1] == "delta+:thinking_delta")
    ]


def openai_kind(chunk: dict[str, Any]) -> str:
    if not chunk["choices"]:
        return "usage"
    choice = chunk["choices"][0]
    delta = choice["delta"]
    if choice["finish_reason"]:
        return "finish"
    if "role" in delta:
        return "role+tool" if delta.get("tool_calls") else "role"
    if delta.get("tool_calls"):
        return "tool_start" if "id" in delta["tool_calls"][0] else "tool_args"
    if "content" in delta:
        return "content"
    return "other"


def openai_shape(body: bytes) -> list[str]:
    shape: list[str] = []
    for _, data in h.sse_events(body):
        kind = "done" if data == "[DONE]" else openai_kind(json.loads(data))
        if kind in ("content", "tool_args") and shape and shape[-1] == kind + "+":
            continue
        shape.append(kind + "+" if kind in ("content", "tool_args") else kind)
    return shape


def sim_anthropic_streams() -> dict[str, bytes]:
    return {
        "text": sim_body("anthropic", [h.user("hello")]),
        "text+2tools": sim_body("anthropic", [h.user("list my sandboxes and list providers")]),
        "thinking+text": sim_body(
            "anthropic",
            tool_round("anthropic", "list my sandboxes", h.SANDBOX_LIST, model="x-thinking"),
            model="x-thinking",
        ),
        "thinking+text+tool": sim_body(
            "anthropic", [h.user("list my sandboxes")], model="x-thinking"
        ),
        "max_tokens": sim_body("anthropic", [h.user("hello")], max_tokens=8),
    }


@pytest.mark.parametrize(
    ("kind", "real"),
    [
        ("text", "sonnet46-text"),
        ("text+2tools", "sonnet46-text-plus-two-tools"),
        ("thinking+text", "sonnet45-thinking-via-litellm"),
        ("max_tokens", "sonnet4-max-tokens"),
    ],
)
def test_anthropic_event_order_matches_real_recording(kind, real) -> None:
    recording = recordings("anthropic")[real]
    assert anthropic_shape(sim_anthropic_streams()[kind]) == anthropic_shape(
        recording["sse"].encode()
    )


def test_anthropic_ping_sits_where_most_real_streams_put_it() -> None:
    def ping_after_first_start(body: bytes) -> bool:
        events = [event for event, _ in h.sse_events(body)]
        return events.count("ping") == 1 and events[:3] == [
            "message_start",
            "content_block_start",
            "ping",
        ]

    real = [
        r["sse"].encode() for r in recordings("anthropic").values() if "event: ping" in r["sse"]
    ]
    assert sum(map(ping_after_first_start, real)) > len(real) / 2
    assert all(ping_after_first_start(body) for body in sim_anthropic_streams().values())


def test_anthropic_streams_follow_the_real_event_grammar() -> None:
    grammar = re.compile(
        r"message_start (start:\w+ (delta\+:\w+ )*content_block_stop )+message_delta message_stop"
    )
    plain = {
        name: r for name, r in recordings("anthropic").items() if "server_tool_use" not in r["sse"]
    }
    for body in [r["sse"].encode() for r in plain.values()] + list(
        sim_anthropic_streams().values()
    ):
        shape = " ".join(anthropic_shape(body))
        assert grammar.fullmatch(shape), shape


def sim_openai_streams(include_usage: bool = True) -> dict[str, bytes]:
    extra = {} if include_usage else {"stream_options": None}
    return {
        "text": sim_body(
            "openai", tool_round("openai", "list my sandboxes", h.SANDBOX_LIST), **extra
        ),
        "tool": sim_body("openai", [h.user("list my sandboxes")], **extra),
        "parallel": sim_body("openai", [h.user("list my sandboxes and list providers")], **extra),
        "length": sim_body("openai", [h.user("hello")], max_tokens=6, **extra),
    }


@pytest.mark.parametrize(
    ("kind", "real", "include_usage"),
    [
        ("text", "gpt4o-text-after-two-tool-results", True),
        ("tool", "gpt4o-mini-tool-call", True),
        ("parallel", "gpt4o-parallel-tools-with-usage", True),
        ("length", "gpt4o-length-truncated-text", True),
        ("parallel", "gpt35-parallel-tools-no-usage", False),
    ],
)
def test_openai_chunk_order_matches_real_recording(kind, real, include_usage) -> None:
    recording = recordings("openai")[real]
    assert openai_shape(sim_openai_streams(include_usage)[kind]) == openai_shape(
        recording["sse"].encode()
    )


def key_paths(value: Any, prefix: str = "") -> dict[str, str]:
    """Every key path of a JSON value (list items merged as `[]`), with its leaf type."""
    if isinstance(value, dict) and value:
        paths: dict[str, str] = {}
        for key, item in value.items():
            paths.update(key_paths(item, f"{prefix}.{key}" if prefix else key))
        return paths
    if isinstance(value, list) and value:
        paths = {}
        for item in value:
            paths.update(key_paths(item, prefix + "[]"))
        return paths
    return {prefix: type(value).__name__}


def anthropic_kind(payload: dict[str, Any]) -> str:
    kind = payload["type"]
    if kind == "content_block_start":
        return f"{kind}:{payload['content_block']['type']}"
    if kind == "content_block_delta":
        return f"{kind}:{payload['delta']['type']}"
    return str(kind)


def payloads(provider: str, body: bytes) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for _, data in h.sse_events(body):
        if data != "[DONE]":
            payload = json.loads(data)
            found.append(
                (openai_kind(payload) if provider == "openai" else anthropic_kind(payload), payload)
            )
    return found


def kinds_to_paths(provider: str, bodies: list[bytes]) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for body in bodies:
        for kind, payload in payloads(provider, body):
            found.setdefault(kind, []).append(key_paths(payload))
    return found


def assert_same_keys(
    provider: str,
    real_bodies: list[bytes],
    sim_bodies: list[bytes],
    *,
    allowed_from: list[bytes] | None = None,
) -> None:
    """Keys in every real event of a kind are required; keys in none are forbidden.

    Keys only some real events have (OpenAI `obfuscation`, `service_tier`;
    Anthropic `stop_details`, `inference_geo`, `caller`) are optional: the
    simulator may send them or not. Leaf value types must match a real one.
    `allowed_from` widens the optional keys to another set of recordings.
    """
    real = kinds_to_paths(provider, real_bodies)
    wider = kinds_to_paths(provider, allowed_from or real_bodies)
    checked = set()
    for body in sim_bodies:
        for kind, payload in payloads(provider, body):
            reference = real.get(kind) or wider.get(kind)
            assert reference, f"{provider} {kind}: no real event of this kind to compare with"
            required = set.intersection(*(set(paths) for paths in reference))
            allowed: dict[str, set[str]] = {}
            for paths in reference + wider.get(kind, []):
                for path, leaf in paths.items():
                    allowed.setdefault(path, set()).add(leaf)
            mine = key_paths(payload)
            assert required <= set(mine), f"{kind}: missing {required - set(mine)}"
            assert set(mine) <= set(allowed), f"{kind}: unknown keys {set(mine) - set(allowed)}"
            for path, leaf in mine.items():
                assert leaf in allowed[path], f"{kind} {path}: {leaf} not in {allowed[path]}"
            checked.add(kind)
    return None if checked else pytest.fail("nothing compared")


def test_openai_chunks_have_the_real_keys() -> None:
    real = recordings("openai")
    with_usage = [
        r["sse"].encode()
        for r in real.values()
        if (r["request"].get("stream_options") or {}).get("include_usage")
    ]
    without = [r["sse"].encode() for r in real.values() if not r["request"].get("stream_options")]
    assert_same_keys("openai", with_usage, list(sim_openai_streams(True).values()))
    # The recordings without stream_options are all from 2024: they fix which keys are
    # required without usage, the newer ones which later keys may appear (minus usage).
    newer = [body.replace(b',"usage":null', b"") for body in with_usage]
    sim_without = list(sim_openai_streams(False).values())
    assert_same_keys("openai", without, sim_without, allowed_from=newer)
    assert all(b'"usage"' not in body for body in sim_without)


def test_openai_optional_keys_decision_is_backed_by_the_recordings() -> None:
    real = [r["sse"] for r in recordings("openai").values()]
    assert 0 < sum('"obfuscation"' in sse for sse in real) < len(real)  # optional in reality
    assert 0 < sum('"service_tier"' in sse for sse in real) < len(real)
    body = sim_openai_streams()["text"].decode()
    assert '"obfuscation"' not in body and '"service_tier":"default"' in body


def test_anthropic_events_have_the_real_keys() -> None:
    real = [r["sse"].encode() for r in recordings("anthropic").values()]
    assert_same_keys("anthropic", real, list(sim_anthropic_streams().values()))


def test_byte_level_framing_matches_the_recordings() -> None:
    anthropic_real = [r["sse"] for r in recordings("anthropic").values()]
    padded = re.compile(r'^data: \{"type":"content_block_stop","index":\d+ +\}$', re.M)
    any_padded = re.compile(r"^data: \{.*[^ ] +\}$", re.M)
    assert all(sse.endswith("\n\n") for sse in anthropic_real)
    assert sum(bool(padded.search(sse)) for sse in anthropic_real) > len(anthropic_real) / 2
    for body in sim_anthropic_streams().values():
        text = body.decode()
        assert text.endswith("\n\n") and "\r" not in text
        assert any_padded.search(text) and 'data: {"type": "ping"}\n' in text
    for body in sim_openai_streams().values():
        assert body.decode().endswith("data: [DONE]\n\n")
