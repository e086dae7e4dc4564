"""OpenAI Chat Completions SSE -> neutral stream events (pure).

Wire facts this encodes (each pinned by a transcript in fixtures/sse/openai):

- Every event is `data: {chunk}`; the stream ends with `data: [DONE]`. A
  body that ends without it is truncated and becomes a `StreamError`.
- Only choice index 0 is translated: with `n > 1` choices arrive interleaved
  and the neutral model has one message.
- Tool-call fragments are keyed by `index`; `id` and `function.name` come on
  the first fragment, `arguments` in pieces. Missing, null or empty arguments
  mean `{}`. Invalid JSON arguments are passed through unchanged, as the SDK
  does, so the agent can tell the model.
- `refusal` deltas are a refusal, never text: `RefusalDelta` events and the
  message's `refusal`, as the SDK keeps them in `message.refusal`. A turn
  that refused and then stopped has the neutral finish reason `refusal`.
- The legacy `functions` API streams `delta.function_call` fragments (name,
  then arguments) and ends with `function_call`; that is carried as a tool
  call with an id derived from the response id (`derived_call_id`), so it is stable
  however the body is chunked and the message never claims a call it lacks.
- Usage comes in a chunk with `choices: []`. A later chunk with `usage: null`
  (seen on real streams after a `moderation` chunk) does not erase it.
  `prompt_tokens` already include `prompt_tokens_details.cached_tokens`, and
  `completion_tokens` include `completion_tokens_details.reasoning_tokens`:
  exactly the neutral meaning. OpenAI reports no cache writes.
- A data line `{"error": {...}}` is an upstream failure mid-stream.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from navagent.core.events import ChatError, FinishReason, StreamEvent, Usage
from navagent.gateway._translator import BaseStreamTranslator
from navagent.gateway.errors import error_from_payload
from navagent.gateway.errors import error_from_response as _error_from_response
from navagent.gateway.sse import SSEEvent

__all__ = ["OpenAIStreamTranslator", "error_from_response"]

_PROVIDER = "OpenAI"
_LEGACY_CALL = "function_call"
"""Accumulator key of a legacy `function_call` (tool calls are keyed by int index)."""


def error_from_response(status: int, body: bytes) -> ChatError:
    """Classify a failed Chat Completions HTTP response (any body, even HTML or empty)."""
    return _error_from_response(status, body, provider=_PROVIDER)


class OpenAIStreamTranslator(BaseStreamTranslator):
    """Translate one Chat Completions stream; `handle` each SSE event, then `finish`."""

    provider: ClassVar[str] = _PROVIDER
    terminator: ClassVar[str] = "[DONE]"
    finish_reasons: ClassVar[dict[str, FinishReason]] = {
        "stop": "stop",
        "tool_calls": "tool_calls",
        "function_call": "tool_calls",
        "length": "length",
        "content_filter": "content_filter",
    }

    __slots__ = ("_response_id",)

    def __init__(self, *, origin: str = "") -> None:
        super().__init__(origin=origin)
        self._response_id = ""
        """The chunks' `id`, kept only to name a legacy function call."""

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        """Translate one SSE event; never raises."""
        if self._done:
            return []
        data = event.data
        if data.startswith("[DONE]"):
            return self._complete()
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            return self._invalid_json("event data", data, exc)
        if type(chunk) is not dict:
            return self._malformed(f"event data is not a JSON object: {data[:60]!r}")
        if chunk.get("error") is not None:
            return self._fail(error_from_payload(chunk["error"], provider=_PROVIDER))
        events: list[StreamEvent] = []
        if not self._response_id:
            response_id = chunk.get("id")
            self._response_id = response_id if type(response_id) is str else ""
            self._parts.id_seed = self._response_id
        choices = chunk.get("choices")
        problem = self._choices(choices, events) if choices else ""
        if not problem:
            usage = chunk.get("usage")
            problem = self._usage(usage) if usage else ""
        return [*events, *self._malformed(problem)] if problem else events

    def _choices(self, choices: Any, events: list[StreamEvent]) -> str:
        """Apply the choice-0 entries of a chunk; return a problem description or ""."""
        if type(choices) is not list:
            return "chunk.choices is not a list"
        for choice in choices:
            if type(choice) is not dict:
                return "chunk.choices[] entry is not an object"
            if choice.get("index", 0) == 0:
                problem = self._choice(choice, events)
                if problem:
                    return problem
        return ""

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> str:
        """Apply one choice-0 entry; return a problem description or ""."""
        delta = choice.get("delta")
        if delta:
            if type(delta) is not dict:
                return "choices[0].delta is not an object"
            content = delta.get("content")
            if content:
                if type(content) is not str:
                    return "choices[0].delta.content is not a string"
                events.append(self._parts.text(content))
            refusal = delta.get("refusal")
            if refusal:
                if type(refusal) is not str:
                    return "choices[0].delta.refusal is not a string"
                events.append(self._parts.refusal(refusal))
            tool_calls, function_call = delta.get("tool_calls"), delta.get("function_call")
            if tool_calls or function_call:
                problem = self._calls(tool_calls, function_call, events)
                if problem:
                    return problem
        finish_reason = choice.get("finish_reason")
        if finish_reason:
            if type(finish_reason) is not str:
                return "choices[0].finish_reason is not a string"
            self._finish_reason = finish_reason
        return ""

    def _calls(self, tool_calls: Any, function_call: Any, events: list[StreamEvent]) -> str:
        problem = self._tool_calls(tool_calls, events) if tool_calls else ""
        if function_call and not problem:
            problem = self._function_call(function_call, events)
        return problem

    def _tool_calls(self, tool_calls: Any, events: list[StreamEvent]) -> str:
        if type(tool_calls) is not list:
            return "choices[0].delta.tool_calls is not a list"
        for fragment in tool_calls:
            if type(fragment) is not dict:
                return "choices[0].delta.tool_calls[] entry is not an object"
            index = fragment.get("index")
            if type(index) is not int:
                return "choices[0].delta.tool_calls[] entry has no integer index"
            function = fragment.get("function") or {}
            if type(function) is not dict:
                return f"tool call {index}: function is not an object"
            call_id = fragment.get("id")
            name, arguments = function.get("name"), function.get("arguments")
            for field, value in (("id", call_id), ("name", name), ("arguments", arguments)):
                if value is not None and type(value) is not str:
                    return f"tool call {index}: {field} is not a string"
            start = self._parts.tool_call(index, id=call_id, name=name, arguments=arguments)
            if start is not None:
                events.append(start)
        return ""

    def _function_call(self, function_call: Any, events: list[StreamEvent]) -> str:
        """Apply a legacy `delta.function_call` fragment as the message's one tool call."""
        if type(function_call) is not dict:
            return "choices[0].delta.function_call is not an object"
        name, arguments = function_call.get("name"), function_call.get("arguments")
        for field, value in (("name", name), ("arguments", arguments)):
            if value is not None and type(value) is not str:
                return f"function_call: {field} is not a string"
        # No id on the wire: the accumulator derives one (`derived_call_id`).
        start = self._parts.tool_call(_LEGACY_CALL, id=None, name=name, arguments=arguments)
        if start is not None:
            events.append(start)
        return ""

    def _neutral_finish_reason(self, raw: str) -> FinishReason:
        reason = super()._neutral_finish_reason(raw)
        return "refusal" if reason == "stop" and self._parts.has_refusal else reason

    def _usage(self, usage: Any) -> str:
        if type(usage) is not dict:
            return "chunk.usage is not an object"
        prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
        cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
        reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
        if not all(type(count) is int for count in (prompt, completion, cached, reasoning)):
            return "chunk.usage token counts are not integers"
        self._token_usage = Usage(
            input_tokens=prompt,
            cache_read_tokens=cached,
            output_tokens=completion,
            reasoning_tokens=reasoning,
        )
        return ""


def _detail(usage: dict[str, Any], details: str, name: str) -> Any:
    """`usage[details][name]`, 0 when absent or null (not every server sends details)."""
    found = usage.get(details)
    return (found.get(name) or 0) if type(found) is dict else 0
