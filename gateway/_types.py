"""The shapes a chat protocol hands the gateway service.

They live apart from `protocols.py` so the provider packages can import them
without importing the registry that imports the provider packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from navagent.core.events import StreamEvent
from navagent.core.messages import ChatRequest
from navagent.gateway.sse import SSEEvent

__all__ = ["RequestBuilder", "StreamTranslator", "TranslatorFactory", "UpstreamRequest"]


@dataclass(frozen=True)
class UpstreamRequest:
    """One HTTP request to send upstream: `POST url` with `headers` and a JSON `body`."""

    url: str
    headers: Mapping[str, str] = field(repr=False)
    """Includes the API key, so it is left out of `repr()`: never log it."""
    body: dict[str, Any]
    """The JSON body; it never contains the key."""


class RequestBuilder(Protocol):
    """Build a provider request from a neutral one; pure, no I/O."""

    def __call__(
        self, request: ChatRequest, /, *, endpoint: str, model: str, api_key: str
    ) -> UpstreamRequest:
        """Return the request for `model` at `endpoint` (with or without `/v1`)."""
        ...


class StreamTranslator(Protocol):
    """Turns one response body's SSE events into neutral stream events.

    Contract: zero or more deltas, then one `TurnEnd`, then exactly one
    terminal event (`MessageComplete` or `StreamError`). After the terminal
    event `handle` and `finish` return `[]`. One instance per response.
    """

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        """Translate one SSE event; never raises."""
        ...

    def finish(self) -> list[StreamEvent]:
        """Call at the end of the body: a `StreamError` if no terminal event was emitted yet."""
        ...

    @property
    def progress(self) -> int:
        """Grows with every piece of content (text, reasoning, tool arguments), never else.

        The gateway's idle timeout measures this, not bytes: keep-alives do not count.
        """
        ...

    @property
    def done(self) -> bool:
        """True once a terminal event was emitted; stop reading the body then."""
        ...


class TranslatorFactory(Protocol):
    """Make a fresh `StreamTranslator`; `origin` is stamped on opaque reasoning it keeps."""

    def __call__(self, *, origin: str = "") -> StreamTranslator:
        """Return a translator for one response body."""
        ...
