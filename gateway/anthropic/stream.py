"""Anthropic Messages SSE -> neutral stream events (pure).

Wire facts this encodes (each pinned by a transcript in fixtures/sse/anthropic):

- Events are dispatched on the JSON `type` (the `event:` name repeats it);
  `ping` and event types we do not know are ignored.
- Content blocks are keyed by `index`. `content_block_start` opens text,
  `tool_use` (id and name known: `ToolCallStart` at once), `thinking`, and
  `redacted_thinking` (which arrives whole, no deltas). Block types the
  neutral model does not carry (server tools and their results) are skipped
  with all their deltas, never fatal.
- `input_json_delta.partial_json` fragments are concatenated and parsed at
  `content_block_stop`; no or empty fragments give `{}`; JSON that is not an
  object is a `StreamError`, as it makes the official SDK raise.
- `signature_delta` sets the thinking block's signature (it arrives whole).
  Signatures and redacted blocks are the part's payload (`ThinkingPayload`),
  sent back only to the route that produced them.
- `message_start.message` is the start of the message, as the SDK treats it:
  with programmatic tool calling it can already hold content blocks (a whole
  `tool_use`) and a `stop_reason`, followed directly by `message_stop`.
- Usage is split: `message_start` has the input tokens, `message_delta` the
  (cumulative) output tokens and sometimes updated input tokens; each count
  present overwrites. Anthropic's `input_tokens` EXCLUDE cache reads and
  writes, so the neutral total is `input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens`; `output_tokens_details.thinking_tokens`, when
  sent, is the reasoning part of the output.
- Stop reasons `refusal` (the model declined; the text so far is kept) and
  `pause_turn` (a server-tool turn paused) have neutral names of their own.
- `message_stop` ends the stream: `TurnEnd` then `MessageComplete`. An `error`
  event (e.g. `overloaded_error`) can arrive mid-stream and is a `StreamError`
  with the provider's message and a classified code.
- Several text blocks become one `content`, concatenated in order.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from navagent.core.events import ChatError, FinishReason, StreamEvent, Usage
from navagent.gateway._translator import BaseStreamTranslator
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions
from navagent.gateway.errors import error_from_payload
from navagent.gateway.errors import error_from_response as _error_from_response
from navagent.gateway.sse import SSEEvent

__all__ = ["AnthropicStreamTranslator", "error_from_response"]

_PROVIDER = "Anthropic"
_TEXT, _TOOL_USE, _THINKING, _OTHER = "text", "tool_use", "thinking", "other"


def error_from_response(status: int, body: bytes) -> ChatError:
    """Classify a failed Messages HTTP response (any body, even HTML or empty)."""
    return _error_from_response(status, body, provider=_PROVIDER)


class AnthropicStreamTranslator(BaseStreamTranslator):
    """Translate one Messages stream; `handle` each SSE event, then `finish`."""

    provider: ClassVar[str] = _PROVIDER
    terminator: ClassVar[str] = "message_stop"
    finish_reasons: ClassVar[dict[str, FinishReason]] = {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "tool_calls",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "refusal",
        "pause_turn": "pause_turn",
    }

    __slots__ = ("_blocks", "_counts", "_start_inputs")

    def __init__(self, *, origin: str = "", options: RouteOptions = DEFAULT_ROUTE_OPTIONS) -> None:
        super().__init__(origin=origin, options=options)
        self._counts: dict[str, int] = {}
        """The provider's own usage counts so far, by wire name."""
        self._blocks: dict[int, str] = {}
        """Vendor block index -> the kind we track it as."""
        self._start_inputs: dict[int, Any] = {}
        """tool_use `input` given in content_block_start, used only if no fragments follow."""

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        """Translate one SSE event; never raises."""
        if self._done or event.event == "ping":
            return []
        try:
            payload = json.loads(event.data)
        except ValueError as exc:
            return self._invalid_json(f"{event.event} event data", event.data, exc)
        if type(payload) is not dict:
            return self._malformed(f"{event.event} event data is not a JSON object")
        kind = payload.get("type")
        if kind == "content_block_delta":
            return self._block_delta(payload)
        if kind == "content_block_start":
            return self._block_start(payload)
        if kind == "content_block_stop":
            return self._block_stop(payload)
        if kind == "message_start":
            return self._message_start(payload)
        if kind == "message_delta":
            return self._message_delta(payload)
        if kind == "message_stop":
            return self._complete()
        if kind == "error":
            return self._fail(error_from_payload(payload.get("error"), provider=_PROVIDER))
        return []

    def _message_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        """Seed the message: usage, and any content and stop reason it already has."""
        message = payload.get("message")
        if type(message) is not dict:
            return []
        usage = message.get("usage")
        events = self._usage(usage, "message_start.message.usage") if usage else []
        content = message.get("content")
        if content and type(content) is list:
            for index, block in enumerate(content):
                events += self._block_start({"index": index, "content_block": block})
                events += self._block_stop({"index": index})
                if self._done:
                    return events
        stop_reason = message.get("stop_reason")
        if stop_reason and type(stop_reason) is str:
            self._finish_reason = stop_reason
        return events

    def _block_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index, delta = payload.get("index"), payload.get("delta")
        if type(index) is not int or type(delta) is not dict:
            return self._malformed("content_block_delta needs an integer index and a delta object")
        block = self._blocks.get(index)
        if block is None:
            return self._malformed(f"content_block_delta for block {index}, which never started")
        delta_type = delta.get("type")
        if delta_type == "text_delta":
            text = delta.get("text")
            if type(text) is not str:
                return self._malformed(f"text_delta in block {index} has no text string")
            return [self._parts.text(text)] if text and block == _TEXT else []
        if delta_type == "input_json_delta":
            fragment = delta.get("partial_json")
            if type(fragment) is not str:
                return self._malformed(f"input_json_delta in block {index} has no partial_json")
            if block == _TOOL_USE:
                self._parts.tool_call(index, arguments=fragment)
            return []
        if block == _THINKING:
            return self._thinking_delta(index, delta_type, delta)
        return []

    def _thinking_delta(
        self, index: int, delta_type: Any, delta: dict[str, Any]
    ) -> list[StreamEvent]:
        if delta_type == "thinking_delta":
            thinking = delta.get("thinking")
            if type(thinking) is not str:
                return self._malformed(f"thinking_delta in block {index} has no thinking string")
            event = self._parts.thinking(index, thinking)
            return [event] if event else []
        if delta_type == "signature_delta":
            signature = delta.get("signature")
            if type(signature) is not str:
                return self._malformed(f"signature_delta in block {index} has no signature")
            self._parts.thinking_payload(index, {"signature": signature})
        return []

    def _block_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index, block = payload.get("index"), payload.get("content_block")
        if type(index) is not int or type(block) is not dict:
            return self._malformed(
                "content_block_start needs an integer index and a content_block object"
            )
        block_type = block.get("type")
        if block_type == "text":
            self._blocks[index] = _TEXT
            text = block.get("text")
            return [self._parts.text(text)] if text and type(text) is str else []
        if block_type == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if type(call_id) is not str or not call_id or type(name) is not str or not name:
                return self._malformed(f"tool_use block {index} has no id or no name")
            self._blocks[index] = _TOOL_USE
            self._start_inputs[index] = block.get("input")
            start = self._parts.tool_call(index, id=call_id, name=name)
            return [start] if start else []
        if block_type == "thinking":
            self._blocks[index] = _THINKING
            text, signature = block.get("thinking"), block.get("signature")
            event = self._parts.thinking(index, text if type(text) is str else "")
            if signature and type(signature) is str:
                self._parts.thinking_payload(index, {"signature": signature})
            return [event] if event else []
        if block_type == "redacted_thinking":
            self._blocks[index] = _OTHER
            data = block.get("data")
            if type(data) is not str:
                return self._malformed(f"redacted_thinking block {index} has no data string")
            self._parts.thinking_payload(index, {"redacted_data": data})
            return []
        self._blocks[index] = _OTHER
        return []

    def _block_stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = payload.get("index")
        if type(index) is not int or self._blocks.get(index) != _TOOL_USE:
            return []
        arguments = self._parts.tool_call_arguments(index).strip()
        if not arguments:
            start_input = self._start_inputs.get(index)
            arguments = json.dumps(start_input) if isinstance(start_input, dict) else "{}"
            self._parts.set_tool_call_arguments(index, arguments)
            return []
        try:
            parsed = json.loads(arguments)
        except ValueError as exc:
            return self._invalid_json(f"tool_use block {index} input", arguments, exc)
        if type(parsed) is not dict:
            return self._malformed(f"tool_use block {index} input is not a JSON object")
        return []

    def _message_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta")
        if type(delta) is dict:
            stop_reason = delta.get("stop_reason")
            if stop_reason and type(stop_reason) is str:
                self._finish_reason = stop_reason
        usage = payload.get("usage")
        return self._usage(usage, "message_delta.usage") if usage else []

    def _usage(self, usage: Any, where: str) -> list[StreamEvent]:
        if type(usage) is not dict:
            return self._malformed(f"{where} is not an object")
        counts = self._counts
        for name in _USAGE_COUNTS:
            value = usage.get(name)
            if value is None:
                continue
            if type(value) is not int:
                return self._malformed(f"{where}.{name} is not an integer")
            counts[name] = value
        details = usage.get("output_tokens_details")
        thinking = details.get("thinking_tokens") if type(details) is dict else None
        if type(thinking) is int:
            counts["thinking_tokens"] = thinking
        read = counts.get("cache_read_input_tokens", 0)
        write = counts.get("cache_creation_input_tokens", 0)
        self._token_usage = Usage(
            input_tokens=counts.get("input_tokens", 0) + read + write,
            cache_read_tokens=read,
            cache_write_tokens=write,
            output_tokens=counts.get("output_tokens", 0),
            reasoning_tokens=counts.get("thinking_tokens", 0),
        )
        return []


_USAGE_COUNTS = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)
"""Top-level `usage` counts; each one sent overwrites the last (they are cumulative)."""
