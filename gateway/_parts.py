"""One accumulator of streamed message parts for every provider.

The provider translators only map wire events to calls on `PartsAccumulator`;
the accumulation itself (text, thinking blocks, tool calls keyed by the
vendor's index or id) lives here once, as pydantic-ai's
`ModelResponsePartsManager` does. It is the single place that decides what a
finished `AssistantMessage` looks like:

- text is every text piece, in arrival order, concatenated (Anthropic may send
  several text blocks; the neutral message has one `content`, which is what
  the anthropic SDK's `get_final_text()` returns too); refusal pieces are
  concatenated the same way into `refusal`, apart from the text;
- tool calls are in order of first appearance; `ToolCallStart.index` is the
  position in that list, never the vendor's index;
- the first non-empty `id`/`name` fragment of a call wins (OpenAI sends them
  once; compatible servers that repeat them do not get them doubled);
- arguments are the concatenated fragments, and no or empty arguments are
  `"{}"`; a call the provider never named is an error, reported by
  `message()`;
- thinking parts are in order of first appearance, each with its text and
  an opaque provider payload that only the translator shapes (signatures,
  encrypted reasoning, `reasoning_details`); every part is stamped with the
  route's origin, so only that route's request builder reads the payload.
- a call whose id never arrives gets one derived from the stream
  (`derived_call_id`: the response id, set as `id_seed`, and the call's
  position), never drawn at random: the same stream gives the same message
  however it is chunked, replayed or re-translated (the rule in
  `navagent.gateway.protocols`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Mapping
from typing import Any

from navagent.core.events import RefusalDelta, TextDelta, ThinkingDelta, ToolCallStart
from navagent.core.messages import AssistantMessage, ThinkingPart, ToolCall
from navagent.gateway._rope import Rope as _Rope

__all__ = ["IncompleteToolCallError", "PartsAccumulator", "derived_call_id"]

# Text deltas are the one neutral event made per SSE event. Calling the model's
# validator directly still validates, but skips the BaseModel.__init__ frame
# (about a third of the construction cost; see bench/translators.py).
_text_delta = TextDelta.__pydantic_validator__.validate_python
_thinking_delta = ThinkingDelta.__pydantic_validator__.validate_python


def derived_call_id(seed: str, position: int) -> str:
    """The id of tool call number `position` (0-based) of the response `seed` names.

    `call_` plus 24 hex digits of a SHA-256, the shape OpenAI's own ids have.
    """
    digest = hashlib.sha256(f"{seed}#{position}".encode()).hexdigest()
    return f"call_{digest[:24]}"


class IncompleteToolCallError(ValueError):
    """A tool call ended without a name; the message names the call."""


class _ToolCallState:
    __slots__ = ("arguments", "id", "index", "name", "started")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.arguments = _Rope()
        self.started = False


class _ThinkingState:
    __slots__ = ("payload", "text")

    def __init__(self) -> None:
        self.text = _Rope()
        self.payload: Mapping[str, Any] | None = None


class PartsAccumulator:
    """Mutable state of one streamed assistant message; one per response."""

    __slots__ = (
        "_calls",
        "_calls_by_key",
        "_refusal",
        "_text",
        "_thinking",
        "_thinking_by_key",
        "id_seed",
        "progress",
    )

    def __init__(self) -> None:
        self.id_seed = ""
        """Seeds the ids of calls the provider sent none for: the response id, once known."""
        self.progress = 0
        """Characters of content accumulated so far (text, refusal, reasoning,
        tool-call arguments): what the idle timeout measures, so keep-alives
        never count."""
        self._text = _Rope()
        self._refusal = _Rope()
        self._calls: list[_ToolCallState] = []
        self._calls_by_key: dict[Hashable, _ToolCallState] = {}
        self._thinking: list[_ThinkingState] = []
        self._thinking_by_key: dict[Hashable, _ThinkingState] = {}

    # --- text ------------------------------------------------------------

    def text(self, text: str) -> TextDelta:
        """Record a visible text piece and return its delta event."""
        self.progress += len(text)
        self._text.append(text)
        return _text_delta({"text": text})  # type: ignore[no-any-return]

    def refusal(self, text: str) -> RefusalDelta:
        """Record a piece of a refusal and return its delta event."""
        self.progress += len(text)
        self._refusal.append(text)
        return RefusalDelta(text=text)

    @property
    def has_refusal(self) -> bool:
        """True once any refusal text arrived."""
        return len(self._refusal) > 0

    # --- thinking ------------------------------------------------------

    def thinking(self, key: Hashable, text: str) -> ThinkingDelta | None:
        """Record reasoning text for part `key`; a delta event unless `text` is empty."""
        part = self._thinking_by_key.get(key) or self._thinking_part(key)
        if not text:
            return None
        self.progress += len(text)
        part.text.append(text)
        return _thinking_delta({"text": text})  # type: ignore[no-any-return]

    def thinking_payload(self, key: Hashable, payload: Mapping[str, Any]) -> None:
        """Set the opaque provider state of thinking part `key` (whole; the last one wins).

        Only the translator that writes it and the same protocol's request
        builder know its shape; it becomes `ThinkingPart.payload` (JSON) and
        is read back only by a route of the same origin.
        """
        self._thinking_part(key).payload = payload

    def replace_thinking_text(self, key: Hashable, text: str) -> None:
        """Replace the text of part `key` (when the provider's final state supersedes deltas)."""
        rope = self._thinking_part(key).text = _Rope()
        rope.append(text)

    def thinking_text_length(self, key: Hashable) -> int:
        """Characters of reasoning text part `key` holds so far (0 if there is no such part)."""
        part = self._thinking_by_key.get(key)
        return len(part.text) if part is not None else 0

    def _thinking_part(self, key: Hashable) -> _ThinkingState:
        part = self._thinking_by_key.get(key)
        if part is None:
            part = self._thinking_by_key[key] = _ThinkingState()
            self._thinking.append(part)
        return part

    # --- tool calls ------------------------------------------------------

    def tool_call(
        self,
        key: Hashable,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> ToolCallStart | None:
        """Record one fragment of the tool call keyed `key` (the vendor's index or id).

        Returns a `ToolCallStart` the first time the call's name is known. A
        call whose id has not arrived by then gets a derived one
        (`derived_call_id`), as some OpenAI-compatible servers never send ids.
        """
        call = self._calls_by_key.get(key)
        if call is None:
            call = self._calls_by_key[key] = _ToolCallState(len(self._calls))
            self._calls.append(call)
        if id and not call.id:
            call.id = id
        if name and not call.name:
            call.name = name
        if arguments:
            self.progress += len(arguments)
            call.arguments.append(arguments)
        if call.started or not call.name:
            return None
        call.started = True
        self.progress += 1
        if not call.id:
            call.id = derived_call_id(self.id_seed, call.index)
        return ToolCallStart(index=call.index, id=call.id, name=call.name)

    @property
    def tool_call_count(self) -> int:
        """How many tool calls the message has so far (where interleaved reasoning sits)."""
        return len(self._calls)

    def has_tool_call(self, key: Hashable) -> bool:
        """True when a tool call is keyed `key`."""
        return key in self._calls_by_key

    def tool_call_arguments(self, key: Hashable) -> str:
        """Return the arguments of call `key` so far, concatenated (may be "")."""
        return str(self._calls_by_key[key].arguments)

    def set_tool_call_arguments(self, key: Hashable, arguments: str) -> None:
        """Replace the arguments of call `key` (used when the provider finalises them)."""
        rope = self._calls_by_key[key].arguments = _Rope()
        rope.append(arguments)

    # --- result ----------------------------------------------------------

    def message(self, *, origin: str = "") -> AssistantMessage:
        """Return the finished assistant message.

        Args:
            origin: Stamped on every thinking part (`ThinkingPart.origin`): the
                route that produced it, the only one that reads its payload back.

        Raises:
            IncompleteToolCallError: a tool call never received a name.
        """
        calls = []
        for call in self._calls:
            if not call.name:
                raise IncompleteToolCallError(
                    f"tool call {call.index} (id {call.id or 'unknown'!r}) ended without a name"
                )
            calls.append(
                ToolCall(id=call.id, name=call.name, arguments=str(call.arguments) or "{}")
            )
        return AssistantMessage(
            content=str(self._text),
            tool_calls=tuple(calls),
            thinking=tuple(
                ThinkingPart(
                    text=str(part.text),
                    origin=origin,
                    payload=_encode_payload(part.payload) if part.payload else "",
                )
                for part in self._thinking
            ),
            refusal=str(self._refusal),
        )


def _encode_payload(payload: Mapping[str, Any]) -> str:
    """Compact JSON of a provider payload, non-ASCII kept as is."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
