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
- a call whose id never arrives gets one derived from the stream
  (`derived_call_id`: the response id, set as `id_seed`, and the call's
  position), never drawn at random: the same stream gives the same message
  however it is chunked, replayed or re-translated (the rule in
  `navagent.gateway.protocols`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

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
    __slots__ = (
        "after_tool_calls",
        "encrypted_content",
        "item_id",
        "redacted_data",
        "signature",
        "summary",
        "text",
    )

    def __init__(self, after_tool_calls: int) -> None:
        self.text = _Rope()
        self.signature = ""
        self.redacted_data = ""
        self.item_id = ""
        self.encrypted_content = ""
        self.summary: list[list[str]] = []
        self.after_tool_calls = after_tool_calls


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

    # --- thinking --------------------------------------------------------

    def thinking(self, key: Hashable, text: str) -> ThinkingDelta | None:
        """Record reasoning text for block `key`; a delta event unless `text` is empty."""
        self.progress += len(text)
        self._thinking_part(key).text.append(text)
        return ThinkingDelta(text=text) if text else None

    def thinking_signature(self, key: Hashable, signature: str) -> None:
        """Set the signature of thinking block `key` (the provider sends it whole)."""
        self._thinking_part(key).signature = signature

    def redacted_thinking(self, key: Hashable, data: str) -> None:
        """Record a redacted thinking block, which arrives whole."""
        self._thinking_part(key).redacted_data = data

    def _thinking_part(self, key: Hashable) -> _ThinkingState:
        part = self._thinking_by_key.get(key)
        if part is None:
            part = self._thinking_by_key[key] = _ThinkingState(len(self._calls))
            self._thinking.append(part)
        return part

    # --- reasoning items (OpenAI Responses) -------------------------------

    def reasoning_item(self, key: Hashable, item_id: str) -> None:
        """Open reasoning item `key`; its place is after the tool calls seen so far."""
        self._thinking_part(key).item_id = item_id

    def reasoning_summary(self, key: Hashable, index: int, text: str) -> ThinkingDelta | None:
        """Record a piece of summary part `index`; parts are joined by a blank line."""
        part = self._thinking_part(key)
        events = ""
        while len(part.summary) <= index:
            if part.summary and part.text:
                events += "\n\n"
            part.summary.append([])
        part.summary[index].append(text)
        events += text
        if not events:
            return None
        self.progress += len(events)
        part.text.append(events)
        return _thinking_delta({"text": events})  # type: ignore[no-any-return]

    def reasoning_done(
        self, key: Hashable, *, encrypted_content: str, summary: list[str] | None
    ) -> None:
        """Finish reasoning item `key` with the provider's final state.

        The final item is authoritative for the opaque content (it can differ
        from the one `output_item.added` carried) and for summaries that came
        without deltas.
        """
        part = self._thinking_part(key)
        part.encrypted_content = encrypted_content
        if summary and not any(part.summary):
            part.summary = [[text] for text in summary]
            part.text = _Rope()
            part.text.append("\n\n".join(summary))

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
            origin: Stamped on reasoning items (`ThinkingPart.origin`): the
                route that can read their encrypted content back.

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
                    signature=part.signature,
                    redacted_data=part.redacted_data,
                    item_id=part.item_id,
                    encrypted_content=part.encrypted_content,
                    summary=tuple("".join(pieces) for pieces in part.summary),
                    origin=origin if part.item_id else "",
                    after_tool_calls=part.after_tool_calls if part.item_id else 0,
                )
                for part in self._thinking
            ),
            refusal=str(self._refusal),
        )
