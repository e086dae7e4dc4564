"""What a recorded stream carries that the neutral model deliberately does not.

`not_modelled(provider, body)` lists, by name, every part of a stream outside
what the translators carry (text, refusal, tool calls, thinking, finish
reason, usage) and outside the per-response metadata dropped on purpose (ids,
model, fingerprints). The conformance tests compare it with a table per stream,
so a new kind of content in a recording shows up as a failing test, not as
silently lost output.
"""

from __future__ import annotations

import json
from typing import Any

from navagent.gateway.sse import SSEDecoder

# --- OpenAI ------------------------------------------------------------------

_OPENAI_CHUNK_KEYS = {"id", "object", "created", "model", "choices", "usage", "error"}
_OPENAI_METADATA = {"system_fingerprint", "service_tier", "obfuscation"}
_OPENAI_CHOICE_KEYS = {"index", "delta", "finish_reason"}
_OPENAI_DELTA_KEYS = {"role", "content", "refusal", "tool_calls", "function_call"}
_OPENAI_USAGE_KEYS = {
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
}
_OPENAI_USAGE_DETAILS = {"cached_tokens", "reasoning_tokens"}

# --- Anthropic ---------------------------------------------------------------

_ANTHROPIC_BLOCKS = {"text", "tool_use", "thinking", "redacted_thinking"}
_ANTHROPIC_DELTAS = {"text_delta", "input_json_delta", "thinking_delta", "signature_delta"}
_ANTHROPIC_BLOCK_KEYS = {"type", "text", "id", "name", "input", "thinking", "signature", "data"}
_ANTHROPIC_MESSAGE_KEYS = {"id", "type", "role", "model", "content", "stop_reason", "usage"}
_ANTHROPIC_MESSAGE_DELTA_KEYS = {"stop_reason", "stop_sequence"}
_ANTHROPIC_USAGE_KEYS = {
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
    "output_tokens_details",
}
_ANTHROPIC_METADATA = {"service_tier", "inference_geo", "cache_creation", "stop_sequence"}
_ANTHROPIC_EVENTS = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
}


def _payloads(body: bytes) -> list[Any]:
    decoder = SSEDecoder()
    events = [*decoder.feed(body), *decoder.finish()]
    return [json.loads(e.data) for e in events if e.data and not e.data.startswith("[DONE]")]


def _present(value: Any) -> bool:
    return value not in (None, {}, [], "")


def not_modelled(provider: str, body: bytes) -> set[str]:
    """Names of the parts of `body` the neutral model does not carry."""
    found: set[str] = set()
    for payload in _payloads(body):
        if provider == "openai":
            _openai(payload, found)
        else:
            _anthropic(payload, found)
    return found


def _openai(chunk: dict[str, Any], found: set[str]) -> None:
    for key, value in chunk.items():
        if key not in _OPENAI_CHUNK_KEYS | _OPENAI_METADATA and _present(value):
            found.add(f"chunk.{key}")
    for choice in chunk.get("choices") or []:
        if choice.get("index", 0) != 0:
            found.add("choices n>1")
            continue
        for key, value in choice.items():
            if key == "logprobs" and _present(value):
                found.add("logprobs")
            elif key not in _OPENAI_CHOICE_KEYS | {"logprobs"} and _present(value):
                found.add(f"choice.{key}")
        for key, value in (choice.get("delta") or {}).items():
            if key not in _OPENAI_DELTA_KEYS and _present(value):
                found.add(f"delta.{key}")
    _openai_usage(chunk.get("usage") or {}, found)


def _openai_usage(usage: dict[str, Any], found: set[str]) -> None:
    for key, value in usage.items():
        if key not in _OPENAI_USAGE_KEYS and _present(value):
            found.add(f"usage.{key}")
        elif key.endswith("_details") and isinstance(value, dict):
            for detail, count in value.items():
                if detail not in _OPENAI_USAGE_DETAILS and count:
                    found.add(f"usage.{key}.{detail}")


def _anthropic(payload: dict[str, Any], found: set[str]) -> None:
    kind = payload.get("type")
    if kind not in _ANTHROPIC_EVENTS:
        found.add(f"event {kind}")
    if kind == "message_start":
        message = payload.get("message") or {}
        for key, value in message.items():
            if key not in _ANTHROPIC_MESSAGE_KEYS | _ANTHROPIC_METADATA and _present(value):
                found.add(f"message.{key}")
        for block in message.get("content") or []:
            _anthropic_block(block, found)
        _anthropic_usage(message.get("usage") or {}, found)
    elif kind == "content_block_start":
        _anthropic_block(payload.get("content_block") or {}, found)
    elif kind == "content_block_delta":
        delta_type = (payload.get("delta") or {}).get("type")
        if delta_type not in _ANTHROPIC_DELTAS:
            found.add(f"delta {delta_type}")
    elif kind == "message_delta":
        for key, value in (payload.get("delta") or {}).items():
            if key not in _ANTHROPIC_MESSAGE_DELTA_KEYS and _present(value):
                found.add(f"message_delta.{key}")
        _anthropic_usage(payload.get("usage") or {}, found)


def _anthropic_block(block: dict[str, Any], found: set[str]) -> None:
    block_type = block.get("type")
    if block_type not in _ANTHROPIC_BLOCKS:
        found.add(f"block {block_type}")
        return
    for key, value in block.items():
        if key not in _ANTHROPIC_BLOCK_KEYS and _present(value):
            found.add(f"{block_type}.{key}")


def _anthropic_usage(usage: dict[str, Any], found: set[str]) -> None:
    for key, value in usage.items():
        if key not in _ANTHROPIC_USAGE_KEYS | _ANTHROPIC_METADATA and _present(value):
            found.add(f"usage.{key}")
