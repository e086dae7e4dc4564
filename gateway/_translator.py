"""What every provider stream translator shares: the terminal-event rules.

A translator emits zero or more deltas, then `TurnEnd`, then exactly one
terminal event (`MessageComplete` or `StreamError`), and nothing after it.
`finish()` before the provider's terminator is a truncated stream and becomes
a retryable `StreamError`, never a short "success" (a protocol whose servers
may end a finished stream without the terminator says so by overriding it).
Subclasses map wire events onto the shared `PartsAccumulator` and call
`_complete`, `_fail` or `_malformed`.
"""

from __future__ import annotations

from typing import ClassVar

from navagent.core.events import (
    ChatError,
    FinishReason,
    MessageComplete,
    StreamError,
    StreamEvent,
    TurnEnd,
    Usage,
)
from navagent.gateway._parts import IncompleteToolCallError, PartsAccumulator
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, RouteOptions
from navagent.gateway.errors import malformed_stream_error, truncated_stream_error

__all__ = ["BaseStreamTranslator"]


class BaseStreamTranslator:
    """State and terminal handling common to the provider translators."""

    provider: ClassVar[str]
    """Human name used in error texts ("OpenAI", "Anthropic")."""
    terminator: ClassVar[str]
    """The wire event that ends a successful stream, for the truncation error."""
    finish_reasons: ClassVar[dict[str, FinishReason]]
    """Provider finish reason -> neutral one; anything else is "other"."""

    __slots__ = ("_done", "_finish_reason", "_options", "_origin", "_parts", "_token_usage")

    def __init__(self, *, origin: str = "", options: RouteOptions = DEFAULT_ROUTE_OPTIONS) -> None:
        """`origin`: the route this stream comes from (`ThinkingPart.origin`), `options` its own."""
        self._origin = origin
        self._options = options
        self._parts = PartsAccumulator()
        self._done = False
        self._finish_reason = ""
        self._token_usage = Usage()
        """Neutral counts so far (see `Usage`); subclasses replace it as usage arrives."""

    @property
    def progress(self) -> int:
        """Characters of content so far; keep-alives and empty deltas leave it unchanged."""
        return self._parts.progress

    @property
    def done(self) -> bool:
        """True once a terminal event was emitted."""
        return self._done

    def finish(self) -> list[StreamEvent]:
        """Call at the end of the body; reports a truncated stream if still open."""
        if self._done:
            return []
        return self._fail(truncated_stream_error(self.provider, self.terminator))

    def _fail(self, error: ChatError) -> list[StreamEvent]:
        self._done = True
        return [StreamError(error=error)]

    def _malformed(self, problem: str) -> list[StreamEvent]:
        return self._fail(malformed_stream_error(self.provider, problem))

    def _invalid_json(self, what: str, data: str, exc: ValueError) -> list[StreamEvent]:
        """Report unparseable event data, quoting the text around the failure."""
        pos = getattr(exc, "pos", 0)
        excerpt = data[max(0, pos - 40) : pos + 20]
        return self._malformed(f"{what} is not valid JSON ({exc}) near {excerpt!r}")

    def _complete(self) -> list[StreamEvent]:
        try:
            message = self._parts.message(origin=self._origin)
        except IncompleteToolCallError as exc:
            return self._malformed(str(exc))
        self._done = True
        raw = self._finish_reason
        return [
            TurnEnd(
                finish_reason=self._neutral_finish_reason(raw),
                provider_finish_reason=raw,
                usage=self._token_usage,
            ),
            MessageComplete(message=message),
        ]

    def _neutral_finish_reason(self, raw: str) -> FinishReason:
        """Map the provider's finish reason; anything unknown is "other"."""
        return self.finish_reasons.get(raw, "other")
