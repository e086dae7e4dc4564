"""OpenAI Chat Completions SSE -> neutral stream events (pure).

Wire facts this encodes (each pinned by a transcript in fixtures/sse/openai):

- Every event is `data: {chunk}`; the stream ends with `data: [DONE]`. A
  body that ends without it is truncated and becomes a `StreamError`, unless
  a finish reason came first: some servers (TGI 2.0) close a finished stream
  without `[DONE]`, and a clean close after the finish reason is complete.
- Only choice index 0 is translated: with `n > 1` choices arrive interleaved
  and the neutral model has one message.
- Tool-call fragments are keyed by `index`; `id` and `function.name` come on
  the first fragment, `arguments` in pieces. Missing, null or empty arguments
  mean `{}`. Invalid JSON arguments are passed through unchanged, as the SDK
  does, so the agent can tell the model. Mistral (and Ollama's /v1 in 2024)
  send each call whole with no `index` (and no `type`): such a fragment is
  keyed by its id, a named one without id is a new call, and one with neither
  continues the last call.
- `delta.content` may be a list of typed blocks (Mistral's Magistral): `text`
  blocks are text, `thinking` blocks (a list of text chunks) are thinking;
  other block types are not modelled.
- Reasoning beside the content is thinking, whatever the field:
  `reasoning_content` (DeepSeek, Qwen, xAI, Z.ai, Kimi, llama.cpp, SGLang,
  vLLM) or `reasoning` (Groq, Cerebras, OpenRouter, newer vLLM). OpenRouter's
  `reasoning_details` items (text, summaries, `reasoning.encrypted`, with
  signatures) are merged by their `index` and kept whole in the thinking
  part's payload, to be sent back unchanged; their text is thinking only when
  the delta carries no `reasoning` string (which repeats it).
- `<think>...</think>` opening the content stays text, as the SDK leaves it,
  unless the route says `think_tags: split` (`ThinkTagSplitter`).
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
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

from navagent.core.events import ChatError, FinishReason, StreamEvent, Usage
from navagent.gateway._translator import BaseStreamTranslator
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions
from navagent.gateway.errors import error_from_payload
from navagent.gateway.errors import error_from_response as _error_from_response
from navagent.gateway.openai._think_tags import ThinkTagSplitter
from navagent.gateway.openai.wire import ReasoningPayload
from navagent.gateway.sse import SSEEvent

__all__ = ["OpenAIStreamTranslator", "error_from_response"]

_PROVIDER = "OpenAI"
_LEGACY_CALL = "function_call"
"""Accumulator key of a legacy `function_call` (tool calls are keyed by int index)."""
_REASONING = "reasoning"
"""Accumulator key of the message's one thinking part (every reasoning field joins it)."""
_JOINED_DETAIL_FIELDS = frozenset({"text", "summary"})
"""`reasoning_details` fields that stream in pieces; every other field arrives whole."""


# The C scanner `json.loads` uses; typeshed does not declare the attribute.
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _parse_json(data: str) -> Any:
    """`json.loads(data)`, a quarter faster on the usual compact chunk.

    The scanner alone parses one value from the start and skips the checks
    for surrounding whitespace; anything else (whitespace, trailing data,
    invalid JSON) goes to `json.loads`, which decides and words the error.
    """
    try:
        value, end = _scan_json(data, 0)
    except (StopIteration, ValueError):
        return json.loads(data)
    return value if end == len(data) else json.loads(data)


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

    __slots__ = ("_details", "_details_by_index", "_last_call", "_response_id", "_think_tags")

    def __init__(self, *, origin: str = "", options: RouteOptions = DEFAULT_ROUTE_OPTIONS) -> None:
        super().__init__(origin=origin, options=options)
        self._response_id = ""
        """The chunks' `id`, kept only to name a legacy function call."""
        self._details: list[_DetailItem] = []
        """OpenRouter `reasoning_details` items, in order of first appearance."""
        self._details_by_index: dict[Hashable, _DetailItem] = {}
        self._last_call: Hashable | None = None
        """Key of the latest tool call, which an index-less fragment without id continues."""
        self._think_tags = ThinkTagSplitter() if options.think_tags == "split" else None

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        """Translate one SSE event; never raises."""
        if self._done:
            return []
        data = event.data
        if data.startswith("[DONE]"):
            return self._complete()
        try:
            chunk = _parse_json(data)
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
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta:
                if type(delta) is not dict:
                    return "choices[0].delta is not an object"
                problem = self._delta(delta, events)
                if problem:
                    return problem
            finish_reason = choice.get("finish_reason")
            if finish_reason:
                if type(finish_reason) is not str:
                    return "choices[0].finish_reason is not a string"
                self._finish_reason = finish_reason
        return ""

    def _delta(self, delta: dict[str, Any], events: list[StreamEvent]) -> str:
        """Apply one choice-0 delta; return a problem description or "".

        Plain text and reasoning, one per delta on long streams, take the short
        way; the rest is in helpers.
        """
        content = delta.get("content")
        if content:
            if type(content) is str and self._think_tags is None:
                events.append(self._parts.text(content))
            else:
                problem = self._content(content, events)
                if problem:
                    return problem
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            if type(reasoning) is not str:
                field = "reasoning_content" if delta.get("reasoning_content") else "reasoning"
                return f"choices[0].delta.{field} is not a string"
            event = self._parts.thinking(_REASONING, reasoning)
            if event is not None:
                events.append(event)
        refusal = delta.get("refusal")
        if refusal:
            if type(refusal) is not str:
                return "choices[0].delta.refusal is not a string"
            events.append(self._parts.refusal(refusal))
        details = delta.get("reasoning_details")
        if details:
            problem = self._reasoning_details(details, events, text_elsewhere=bool(reasoning))
            if problem:
                return problem
        tool_calls, function_call = delta.get("tool_calls"), delta.get("function_call")
        if tool_calls or function_call:
            return self._calls(tool_calls, function_call, events)
        return ""

    def _content(self, content: Any, events: list[StreamEvent]) -> str:
        """Content that is not plain text kept as text: split at think tags, or typed blocks."""
        if type(content) is list:
            return self._content_blocks(content, events)
        if type(content) is not str:
            return "choices[0].delta.content is not a string or a list of content blocks"
        if self._think_tags is None:
            events.append(self._parts.text(content))
            return ""
        for thinking, piece in self._think_tags.feed(content):
            if thinking:
                self._thinking(piece, events)
            else:
                events.append(self._parts.text(piece))
        return ""

    def _thinking(self, text: str, events: list[StreamEvent]) -> None:
        event = self._parts.thinking(_REASONING, text)
        if event is not None:
            events.append(event)

    def _content_blocks(self, blocks: list[Any], events: list[StreamEvent]) -> str:
        """Apply Mistral's typed content blocks: text is text, thinking is thinking."""
        for block in blocks:
            if type(block) is not dict:
                return "choices[0].delta.content[] entry is not an object"
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if type(text) is not str:
                    return "choices[0].delta.content[] text block has no text string"
                if text:
                    self._content(text, events)
            elif kind == "thinking":
                thinking = block.get("thinking")
                chunks = [thinking] if type(thinking) is str else thinking
                if type(chunks) is not list:
                    return "choices[0].delta.content[] thinking block has no thinking list"
                for chunk in chunks:
                    text = chunk.get("text") if type(chunk) is dict else chunk
                    if type(text) is not str:
                        return "choices[0].delta.content[] thinking block has a chunk without text"
                    self._thinking(text, events)
        return ""

    def _reasoning_details(
        self, details: Any, events: list[StreamEvent], *, text_elsewhere: bool
    ) -> str:
        """Merge `reasoning_details` items by `index`; their text is thinking unless repeated."""
        if type(details) is not list:
            return "choices[0].delta.reasoning_details is not a list"
        for fragment in details:
            if type(fragment) is not dict:
                return "choices[0].delta.reasoning_details[] entry is not an object"
            kind = fragment.get("type")
            field = "text" if kind == "reasoning.text" else "summary"
            text = fragment.get(field) if kind in ("reasoning.text", "reasoning.summary") else None
            if text is not None and type(text) is not str:
                # Echoed back as it came, it would be refused on the next request.
                return f"choices[0].delta.reasoning_details[] {kind} {field} is not a string"
            index = fragment.get("index")
            item = self._details_by_index.get(index) if type(index) is int else None
            if item is None:
                item = _DetailItem()
                self._details.append(item)
                if type(index) is int:
                    self._details_by_index[index] = item
            item.merge(fragment)
            if text and not text_elsewhere:
                self._thinking(text, events)
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
            function = fragment.get("function") or {}
            call_id, index = fragment.get("id"), fragment.get("index")
            if type(function) is not dict:
                return f"{_call_name(index)}: function is not an object"
            name, arguments = function.get("name"), function.get("arguments")
            for field, value in (("id", call_id), ("name", name), ("arguments", arguments)):
                if value is not None and type(value) is not str:
                    return f"{_call_name(index)}: {field} is not a string"
            if index is None:
                key = self._unindexed_key(call_id, name)
            elif type(index) is int:
                key = index
            else:
                return "choices[0].delta.tool_calls[] entry has an index that is not an integer"
            self._last_call = key
            start = self._parts.tool_call(key, id=call_id, name=name, arguments=arguments)
            if start is not None:
                events.append(start)
        return ""

    def _unindexed_key(self, call_id: str | None, name: str | None) -> Hashable:
        """Key a fragment that has no `index`: by its id, else as a new or the last call."""
        if call_id:
            return ("id", call_id)
        if name or self._last_call is None:
            return ("position", self._parts.tool_call_count)
        return self._last_call

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

    def finish(self) -> list[StreamEvent]:
        """End of the body: complete once a finish reason came, else truncated."""
        if not self._done and self._finish_reason:
            return self._complete()
        return super().finish()

    def _complete(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self._think_tags is not None:
            for thinking, piece in self._think_tags.flush():
                if thinking:
                    self._thinking(piece, events)
                else:
                    events.append(self._parts.text(piece))
        if self._details:
            payload: ReasoningPayload = {
                "reasoning_details": [item.whole() for item in self._details]
            }
            self._parts.thinking_payload(_REASONING, payload)
        return [*events, *super()._complete()]

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


def _call_name(index: Any) -> str:
    """How an error text names a tool call fragment."""
    return "tool call without index" if index is None else f"tool call {index}"


class _DetailItem:
    """One `reasoning_details` item as its fragments arrive: text joined, the rest whole."""

    __slots__ = ("fields", "pieces")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.pieces: dict[str, list[str]] = {}

    def merge(self, fragment: dict[str, Any]) -> None:
        """Add one fragment: text fields are appended, others set when not empty."""
        fields = self.fields
        for key, value in fragment.items():
            if key in _JOINED_DETAIL_FIELDS and type(value) is str:
                pieces = self.pieces.get(key)
                if pieces is None:
                    self.pieces[key] = [value]
                    fields.setdefault(key, value)
                else:
                    pieces.append(value)
            elif key not in fields or (value is not None and value != ""):
                fields[key] = value

    def whole(self) -> dict[str, Any]:
        """The item as a non-streamed response would hold it, keys in arrival order."""
        item = dict(self.fields)
        for key, pieces in self.pieces.items():
            item[key] = "".join(pieces)
        return item


def _detail(usage: dict[str, Any], details: str, name: str) -> Any:
    """`usage[details][name]`, 0 when absent or null (not every server sends details)."""
    found = usage.get(details)
    return (found.get(name) or 0) if type(found) is dict else 0
