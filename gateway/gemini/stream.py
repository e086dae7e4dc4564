"""Gemini `streamGenerateContent?alt=sse` -> neutral stream events (pure).

Wire facts this encodes (each pinned by a transcript in the test kit):

- Every event is one `data:` line holding a whole `GenerateContentResponse`
  (lines end with CRLF); there is no event name and no terminator: the last
  event carries `finishReason`, and the stream then ends. So a body that ends
  after a finish reason is a finished message, one that ends before is
  truncated.
- `candidates[0].content.parts[]` holds text, `thought: true` text
  (reasoning), or a `functionCall` that arrives whole, arguments as a JSON
  object (`args`); the API sends no call ids, so they are derived from the
  `responseId` and the call's position.
- `thoughtSignature` (base64) may sit on any part, even an empty text part;
  every one is kept, with the part it sat on, as the thinking part's payload
  (`ThinkingPayload`), sent back by the request builder on the same part.
- `usageMetadata` is cumulative; each event's counts overwrite.
  `promptTokenCount` includes `cachedContentTokenCount`; output is
  `candidatesTokenCount` plus `thoughtsTokenCount` (candidates exclude them).
- `finishReason` STOP also ends a turn with calls (then the neutral reason is
  `tool_calls`); SAFETY and its siblings are `content_filter`; MAX_TOKENS is
  `length`. A prompt blocked before any candidate (`promptFeedback.blockReason`)
  is a `content_filter` finish with no content.
- An `{"error": {...}}` event is a `StreamError`, named by its `status`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from navagent.core.events import ChatError, FinishReason, StreamEvent, Usage
from navagent.core.wire_formats import wire_format
from navagent.gateway._translator import BaseStreamTranslator
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions
from navagent.gateway.errors import error_from_payload
from navagent.gateway.errors import error_from_response as _error_from_response
from navagent.gateway.gemini.wire import SignedPart
from navagent.gateway.sse import SSEEvent

__all__ = ["GeminiStreamTranslator", "error_from_response"]

_ROW = wire_format("gemini")
_PROVIDER = "Gemini"
_THOUGHT = "thought"
"""The one thinking part a Gemini response has (its thought summaries, joined)."""
_FILTERED: FinishReason = "content_filter"


def error_from_response(status: int, body: bytes) -> ChatError:
    """Classify a failed Gemini HTTP response (any body, even HTML or empty)."""
    return _error_from_response(status, body, provider=_PROVIDER, fields=_ROW.error_fields)


class GeminiStreamTranslator(BaseStreamTranslator):
    """Translate one Gemini stream; `handle` each SSE event, then `finish`."""

    provider: ClassVar[str] = _PROVIDER
    terminator: ClassVar[str] = "an event with a finishReason"
    finish_reasons: ClassVar[dict[str, FinishReason]] = {
        "STOP": "stop",
        "MAX_TOKENS": "length",
        "SAFETY": _FILTERED,
        "RECITATION": _FILTERED,
        "BLOCKLIST": _FILTERED,
        "PROHIBITED_CONTENT": _FILTERED,
        "SPII": _FILTERED,
        "IMAGE_SAFETY": _FILTERED,
        "OTHER": "other",
    }

    __slots__ = ("_calls", "_signatures")

    def __init__(self, *, origin: str = "", options: RouteOptions = DEFAULT_ROUTE_OPTIONS) -> None:
        super().__init__(origin=origin, options=options)
        self._calls = 0
        """Function calls so far: the key of the next one."""
        self._signatures: list[SignedPart] = []

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        """Translate one SSE event; never raises."""
        if self._done or not event.data.strip():
            return []
        try:
            payload = json.loads(event.data)
        except ValueError as exc:
            return self._invalid_json("event data", event.data, exc)
        if type(payload) is not dict:
            return self._malformed("event data is not a JSON object")
        if "error" in payload:
            return self._fail(
                error_from_payload(payload["error"], provider=_PROVIDER, fields=_ROW.error_fields)
            )
        response_id = payload.get("responseId")
        if not self._parts.id_seed and type(response_id) is str:
            self._parts.id_seed = response_id
        events: list[StreamEvent] = []
        candidates = payload.get("candidates")
        if type(candidates) is list and candidates and type(candidates[0]) is dict:
            events = self._candidate(candidates[0])
            if self.done:
                return events
        elif candidates is not None and type(candidates) is not list:
            return self._malformed("candidates is not a list")
        feedback = payload.get("promptFeedback")
        if type(feedback) is dict and type(feedback.get("blockReason")) is str:
            self._finish_reason = feedback["blockReason"]
        usage = payload.get("usageMetadata")
        if usage is not None:
            events += self._usage(usage)
        return events

    def finish(self) -> list[StreamEvent]:
        """The body ended: a finished message after a finish reason, else truncated."""
        if self._done or not self._finish_reason:
            return super().finish()
        if self._signatures:
            self._parts.thinking_payload(_THOUGHT, {"signatures": self._signatures})
        return self._complete()

    def _neutral_finish_reason(self, raw: str) -> FinishReason:
        if raw == "STOP" and self._parts.tool_call_count:
            return "tool_calls"
        if raw not in self.finish_reasons and raw.endswith(("SAFETY", "CONTENT")):
            return _FILTERED
        return super()._neutral_finish_reason(raw)

    def _candidate(self, candidate: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if parts is not None and type(parts) is not list:
            return self._malformed("candidates[0].content.parts is not a list")
        for position, part in enumerate(parts or ()):
            if type(part) is not dict:
                return self._malformed(f"part {position} is not an object")
            events += self._part(part, position)
            if self._done:
                return events
        reason = candidate.get("finishReason")
        if reason and type(reason) is str:
            self._finish_reason = reason
        return events

    def _part(self, part: dict[str, Any], position: int) -> list[StreamEvent]:
        """One part: a whole call, thought text or text; its signature is kept with its place."""
        call, text = part.get("functionCall"), part.get("text")
        if call is not None:
            events, where = self._call(call, position)
        elif text is not None:
            if type(text) is not str:
                return self._malformed(f"text in part {position} is not a string")
            thought = part.get("thought") is True
            delta = self._parts.thinking(_THOUGHT, text) if thought else None
            events = [delta] if delta else []
            if text and not thought:
                events.append(self._parts.text(text))
            where = {"on": "thought" if thought else "text"}
        else:
            events, where = [], None
        signature = part.get("thoughtSignature")
        if where is not None and signature and type(signature) is str and not self._done:
            self._signatures.append({**where, "signature": signature})
        return events

    def _call(self, call: Any, position: int) -> tuple[list[StreamEvent], SignedPart | None]:
        if type(call) is not dict or not call.get("name") or type(call["name"]) is not str:
            return self._malformed(f"functionCall in part {position} has no name"), None
        args = call.get("args")
        if args is None:
            args = {}
        if type(args) is not dict:
            return self._malformed(f"functionCall {call['name']} args is not a JSON object"), None
        call_id = call.get("id")
        key = self._calls
        self._calls += 1
        start = self._parts.tool_call(
            key,
            id=call_id if type(call_id) is str and call_id else None,
            name=call["name"],
            arguments=json.dumps(args, ensure_ascii=False, separators=(",", ":")),
        )
        if start is None:  # pragma: no cover - a fresh key with a name always starts
            return [], None
        return [start], {"on": "call", "call_id": start.id}

    def _usage(self, usage: Any) -> list[StreamEvent]:
        if type(usage) is not dict:
            return self._malformed("usageMetadata is not an object")
        counts: dict[str, int] = {}
        for name in _USAGE_COUNTS:
            value = usage.get(name, 0)
            if type(value) is not int:
                return self._malformed(f"usageMetadata.{name} is not an integer")
            counts[name] = value
        thoughts = counts["thoughtsTokenCount"]
        self._token_usage = Usage(
            input_tokens=counts["promptTokenCount"] + counts["toolUsePromptTokenCount"],
            cache_read_tokens=counts["cachedContentTokenCount"],
            output_tokens=counts["candidatesTokenCount"] + thoughts,
            reasoning_tokens=thoughts,
        )
        return []


_USAGE_COUNTS = (
    "promptTokenCount",
    "cachedContentTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
)
"""The `usageMetadata` counts read; a missing one is 0."""
