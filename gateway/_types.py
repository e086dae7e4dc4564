"""The shapes a chat protocol hands the gateway service.

They live apart from `protocols.py` so the provider packages can import them
without importing the registry that imports the provider packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from navagent.core.events import StreamEvent
from navagent.core.messages import ChatRequest
from navagent.gateway.sse import SSEEvent

__all__ = [
    "DEFAULT_ROUTE_OPTIONS",
    "ReasoningEcho",
    "RequestBuilder",
    "RouteOptions",
    "StreamTranslator",
    "ThinkTags",
    "TranslatorFactory",
    "UpstreamRequest",
]

ThinkTags = Literal["keep", "split"]
"""`<think>...</think>` at the start of the content: kept as text, or split out as thinking."""

ReasoningEcho = Literal["reasoning_details", "reasoning_content", "none"]
"""How an OpenAI-compatible server wants its reasoning back on later requests (README)."""


@dataclass(frozen=True)
class RouteOptions:
    """Per-route settings of how a protocol reads and writes what servers disagree on.

    Only `openai_chat_completions` reads them today: OpenAI-compatible servers
    differ in ways a stream does not reveal. Every other protocol ignores them.
    """

    think_tags: ThinkTags = "keep"
    """`split`: a `<think>...</think>` block opening the content is thinking, not text."""
    reasoning_echo: ReasoningEcho = "reasoning_details"
    """Which field carries this route's own reasoning back on assistant messages."""


DEFAULT_ROUTE_OPTIONS = RouteOptions()


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
        self,
        request: ChatRequest,
        /,
        *,
        endpoint: str,
        model: str,
        api_key: str,
        options: RouteOptions = DEFAULT_ROUTE_OPTIONS,
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

    def __call__(
        self, *, origin: str = "", options: RouteOptions = DEFAULT_ROUTE_OPTIONS
    ) -> StreamTranslator:
        """Return a translator for one response body."""
        ...
