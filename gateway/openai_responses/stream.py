"""OpenAI Responses SSE -> neutral stream events (pure).

Wire facts this encodes (each pinned by a stream in shared/conformance/responses):

- Events are dispatched on the JSON `type`; `sequence_number` may be absent
  (early 2025) or anywhere in the object, and is not needed: SSE keeps order.
- Output items are keyed by `item_id` (the `output_index` where a server
  sends no id). `output_item.added` opens them: `function_call` has its
  `call_id` (the tool-call id, not the `fc_` item id) and name, so
  `ToolCallStart` goes out at once; `reasoning` opens a thinking part.
- Parallel calls are separate items, one after the other. Arguments arrive
  as `function_call_arguments.delta`; `.done` and `output_item.done` carry the
  whole string, which wins. Empty arguments come as the single delta `{}`.
- `output_text.delta` is text, and only of a message item (or one never
  announced); for another item it is malformed, as the SDK's stream state
  asserts (so are arguments for an item that is not a function call);
  `refusal.delta` is a `RefusalDelta` and the
  message's `refusal` (its own part type, never `output_text`); a completed
  turn that refused finishes with `refusal`. Several message items are
  concatenated.
- `reasoning_summary_text.delta` is thinking text; summary parts are joined by
  a blank line. The reasoning item's `encrypted_content` is the one of
  `output_item.done`, replaced by the final response's where that has one
  (the three can all differ when built-in tool calls follow the reasoning).
  Item id, encrypted content, summary parts and the item's place among the
  tool calls are the thinking part's payload (`ReasoningPayload`), which only
  this route's request builder reads back.
- Item types the neutral model does not carry (web_search_call, mcp_call,
  compaction, ...) and their events are ignored; `unmodelled` lists them.
- Usage: `input_tokens` already include the cached ones
  (`input_tokens_details.cached_tokens`, and `cache_write_tokens` on newer
  responses); `output_tokens` include `reasoning_tokens`.
- `response.completed` ends the stream; `response.incomplete` ends it too,
  with finish `length` (or `content_filter`) and whatever was produced, cut
  arguments included. `error` and `response.failed` end it with one
  `StreamError` (the first of them wins; the second is never read).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from navagent.core.events import (
    ChatError,
    FinishReason,
    MessageComplete,
    StreamEvent,
    TurnEnd,
    Usage,
)
from navagent.gateway._parts import IncompleteToolCallError
from navagent.gateway._translator import BaseStreamTranslator
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions
from navagent.gateway.errors import error_from_payload
from navagent.gateway.errors import error_from_response as _error_from_response
from navagent.gateway.openai_responses.wire import ReasoningPayload
from navagent.gateway.sse import SSEEvent

__all__ = ["ResponsesStreamTranslator", "error_from_response"]

_PROVIDER = "OpenAI"
_loads = json.loads


def error_from_response(status: int, body: bytes) -> ChatError:
    """Classify a failed Responses HTTP response (any body, even HTML or empty)."""
    return _error_from_response(status, body, provider=_PROVIDER)


class ResponsesStreamTranslator(BaseStreamTranslator):
    """Translate one Responses stream; `handle` each SSE event, then `finish`."""

    provider: ClassVar[str] = _PROVIDER
    terminator: ClassVar[str] = "response.completed"
    finish_reasons: ClassVar[dict[str, FinishReason]] = {
        "max_output_tokens": "length",
        "content_filter": "content_filter",
    }

    __slots__ = ("_items", "_reasoning", "_summaries", "unmodelled")

    def __init__(self, *, origin: str = "", options: RouteOptions = DEFAULT_ROUTE_OPTIONS) -> None:
        super().__init__(origin=origin, options=options)
        self._items: dict[Any, str] = {}
        """Item key -> item type, for the items that are open or done."""
        self._reasoning: dict[Any, ReasoningPayload] = {}
        """Reasoning item key -> its payload so far (the part's payload, updated in place)."""
        self._summaries: dict[Any, list[list[str]]] = {}
        """Reasoning item key -> the pieces of each summary part received as deltas."""
        self.unmodelled: list[str] = []
        """Output item types seen and not carried, in order of first appearance."""

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        """Translate one SSE event; never raises."""
        if self._done:
            return []
        data = event.data
        try:
            payload = _loads(data)
        except ValueError as exc:
            return self._invalid_json(f"{event.event or 'event'} data", data, exc)
        if type(payload) is not dict:
            return self._malformed(f"{event.event or 'event'} data is not a JSON object")
        kind = payload.get("type")
        if kind == "response.output_text.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                return self._malformed("response.output_text.delta has no delta string")
            item = self._items.get(self._key(payload), "message")
            if item != "message":  # the SDK's stream asserts it, as for arguments below
                return self._malformed(f"response.output_text.delta for a {item} item")
            return [self._parts.text(delta)] if delta else []
        if kind == "response.function_call_arguments.delta":
            return self._arguments_delta(payload)
        if kind == "response.reasoning_summary_text.delta":
            return self._summary_delta(payload)
        return self._less_frequent(kind, payload)

    def _less_frequent(self, kind: Any, payload: dict[str, Any]) -> list[StreamEvent]:
        """The events that come once per item or per response; the rest are ignored."""
        if kind == "response.output_item.added":
            return self._item_added(payload)
        if kind == "response.output_item.done":
            return self._item_done(payload)
        if kind == "response.refusal.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                return self._malformed("response.refusal.delta has no delta string")
            return [self._parts.refusal(delta)] if delta else []
        if kind == "response.reasoning_text.delta":
            return self._reasoning_text_delta(payload)
        if kind == "response.completed" or kind == "response.incomplete":
            return self._end(payload, kind)
        if kind == "response.failed":
            response = payload.get("response")
            error = response.get("error") if type(response) is dict else None
            return self._fail(error_from_payload(error, provider=_PROVIDER))
        if kind == "error":
            nested = payload.get("error")
            return self._fail(
                error_from_payload(nested if type(nested) is dict else payload, provider=_PROVIDER)
            )
        return []

    # --- items ------------------------------------------------------------

    @staticmethod
    def _key(payload: dict[str, Any], item: dict[str, Any] | None = None) -> Any:
        """The item's id where there is one, else its output index."""
        item_id = item.get("id") if item is not None else payload.get("item_id")
        return item_id if type(item_id) is str and item_id else payload.get("output_index")

    def _item_added(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = payload.get("item")
        if type(item) is not dict:
            return self._malformed("response.output_item.added has no item object")
        item_type = item.get("type")
        key = self._key(payload, item)
        if key in self._items:
            return []
        self._items[key] = item_type if type(item_type) is str else "unknown"
        if item_type == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if type(call_id) is not str or type(name) is not str or not name:
                return self._malformed(f"function_call item {key!r} has no call_id or no name")
            arguments = item.get("arguments")
            start = self._parts.tool_call(
                key, id=call_id, name=name, arguments=arguments if type(arguments) is str else None
            )
            return [start] if start else []
        if item_type == "reasoning":
            if type(key) is str:  # an item without an id cannot be sent back
                reasoning: ReasoningPayload = {
                    "item_id": key,
                    "encrypted_content": "",
                    "summary": [],
                    "after_tool_calls": self._parts.tool_call_count,
                }
                self._reasoning[key] = reasoning
                self._parts.thinking_payload(key, reasoning)
            return []
        if item_type != "message":
            self._note_unmodelled(self._items[key])
        return []

    def _item_done(self, payload: dict[str, Any]) -> list[StreamEvent]:
        item = payload.get("item")
        if type(item) is not dict:
            return self._malformed("response.output_item.done has no item object")
        key = self._key(payload, item)
        item_type = item.get("type")
        events: list[StreamEvent] = []
        if key not in self._items:  # a server that skips `added`
            events = self._item_added({"item": item, "output_index": payload.get("output_index")})
            if self._done:
                return events
        if item_type == "function_call":
            arguments = item.get("arguments")
            if type(arguments) is str and arguments:  # never erase streamed fragments
                self._parts.set_tool_call_arguments(key, arguments)
        elif item_type == "reasoning":
            encrypted = item.get("encrypted_content")
            summary = item.get("summary")
            texts = (
                [part.get("text") or "" for part in summary if type(part) is dict]
                if type(summary) is list
                else None
            )
            self._reasoning_done(key, encrypted if type(encrypted) is str else "", texts)
        return events

    def _reasoning_done(self, key: Any, encrypted: str, summary: list[str] | None) -> None:
        """Finish reasoning item `key` with the provider's final state.

        The final item is authoritative for the opaque content (it can differ
        from the one `output_item.added` carried) and for summaries that came
        without deltas.
        """
        streamed = ["".join(pieces) for pieces in self._summaries.get(key, ())]
        if summary and not any(streamed):
            streamed = summary
            self._parts.replace_thinking_text(key, "\n\n".join(summary))
        payload = self._reasoning.get(key)
        if payload is not None:
            payload["encrypted_content"] = encrypted
            payload["summary"] = streamed

    def _arguments_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        key, delta = self._key(payload), payload.get("delta")
        if type(delta) is not str:
            return self._malformed("response.function_call_arguments.delta has no delta string")
        if not self._parts.has_tool_call(key):
            return self._malformed(f"arguments for function_call {key!r}, which never started")
        self._parts.tool_call(key, arguments=delta)
        return []

    def _summary_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        key, delta, index = self._key(payload), payload.get("delta"), payload.get("summary_index")
        if type(delta) is not str or type(index) is not int:
            return self._malformed(
                "response.reasoning_summary_text.delta needs a delta string and a summary_index"
            )
        summary = self._summaries.setdefault(key, [])
        text = ""
        while len(summary) <= index:
            if summary and self._parts.thinking_text_length(key):
                text += "\n\n"
            summary.append([])
        summary[index].append(delta)
        event = self._parts.thinking(key, text + delta)
        return [event] if event else []

    def _reasoning_text_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        """Raw reasoning text (compatible servers); thinking, but not a summary part."""
        delta = payload.get("delta")
        if type(delta) is not str:
            return self._malformed("response.reasoning_text.delta has no delta string")
        event = self._parts.thinking(self._key(payload), delta)
        return [event] if event else []

    def _note_unmodelled(self, item_type: str) -> None:
        if item_type not in self.unmodelled:
            self.unmodelled.append(item_type)

    # --- end --------------------------------------------------------------

    def _end(self, payload: dict[str, Any], kind: str) -> list[StreamEvent]:
        response = payload.get("response")
        if type(response) is not dict:
            return self._malformed(f"{kind} has no response object")
        usage = response.get("usage")
        if usage:
            problem = self._usage(usage)
            if problem:
                return self._malformed(problem)
        output = response.get("output")
        if type(output) is list:
            self._final_reasoning(output)
        if kind == "response.completed":
            self._finish_reason = "completed"
        else:
            details = response.get("incomplete_details")
            reason = details.get("reason") if type(details) is dict else None
            self._finish_reason = reason if type(reason) is str and reason else "incomplete"
        return self._complete()

    def _final_reasoning(self, output: list[Any]) -> None:
        """Take each reasoning item's encrypted content from the final response.

        It can differ from the one in `output_item.done` (when built-in tool
        calls follow the reasoning), and the final one is what the SDK keeps.
        """
        for item in output:
            if type(item) is not dict or item.get("type") != "reasoning":
                continue
            key, encrypted = item.get("id"), item.get("encrypted_content")
            payload = self._reasoning.get(key)
            if payload is not None and type(encrypted) is str and encrypted:
                payload["encrypted_content"] = encrypted

    def _usage(self, usage: Any) -> str:
        if type(usage) is not dict:
            return "response.usage is not an object"
        input_details = usage.get("input_tokens_details") or {}
        output_details = usage.get("output_tokens_details") or {}
        values = (
            usage.get("input_tokens") or 0,
            usage.get("output_tokens") or 0,
            input_details.get("cached_tokens") or 0 if type(input_details) is dict else 0,
            input_details.get("cache_write_tokens") or 0 if type(input_details) is dict else 0,
            output_details.get("reasoning_tokens") or 0 if type(output_details) is dict else 0,
        )
        if any(type(value) is not int for value in values):
            return "response.usage token counts are not integers"
        self._token_usage = Usage(
            input_tokens=values[0],
            output_tokens=values[1],
            cache_read_tokens=values[2],
            cache_write_tokens=values[3],
            reasoning_tokens=values[4],
        )
        return ""

    def _complete(self) -> list[StreamEvent]:
        try:
            message = self._parts.message(origin=self._origin)
        except IncompleteToolCallError as exc:
            return self._malformed(str(exc))
        self._done = True
        raw = self._finish_reason
        if raw != "completed":
            finish: FinishReason = self.finish_reasons.get(raw, "other")
        elif message.tool_calls:
            finish = "tool_calls"
        else:
            finish = "refusal" if message.refusal else "stop"
        return [
            TurnEnd(
                finish_reason=finish,
                provider_finish_reason=raw,
                usage=self._token_usage,
            ),
            MessageComplete(message=message),
        ]
