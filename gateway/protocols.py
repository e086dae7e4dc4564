"""The chat protocols the gateway can speak, by route protocol name.

The gateway service resolves a route, looks its protocol up in `PROTOCOLS`
and then only ever calls the four members of `ChatProtocol`:

    protocol = PROTOCOLS["anthropic_messages"]
    upstream = protocol.build_request(request, endpoint=..., model=..., api_key=...)
    # POST upstream.url with upstream.headers and upstream.body as JSON.
    # On HTTP >= 400:  error = protocol.error_from_response(status, body_bytes)
    # On 200:
    translator = protocol.translator_for(endpoint=..., model=...)
    decoder = SSEDecoder()
    for chunk in body:                      # bytes, any split
        for sse in decoder.feed(chunk):
            yield from translator.handle(sse)
        if translator.done:
            break
    decoder.finish()
    yield from translator.finish()          # StreamError if the body was truncated

Everything behind these members is pure: no I/O, no clocks, no globals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from navagent.core.events import ChatError
from navagent.gateway import anthropic, openai, openai_responses
from navagent.gateway._origin import route_origin
from navagent.gateway._types import (
    DEFAULT_ROUTE_OPTIONS,
    RequestBuilder,
    RouteOptions,
    StreamTranslator,
    TranslatorFactory,
    UpstreamRequest,
)

__all__ = [
    "ChatProtocol",
    "PROTOCOLS",
    "ProtocolName",
    "RequestBuilder",
    "RouteOptions",
    "StreamTranslator",
    "TranslatorFactory",
    "UpstreamRequest",
]

ProtocolName = Literal["openai_chat_completions", "openai_responses", "anthropic_messages"]


@dataclass(frozen=True)
class ChatProtocol:
    """One provider wire protocol: how to ask, how to read the answer, how to read a failure."""

    name: ProtocolName
    """The route protocol name, as written in routes files."""
    build_request: RequestBuilder
    """`(request, *, endpoint, model, api_key, options) -> UpstreamRequest`; pure."""
    new_translator: TranslatorFactory
    """`(*, origin="", options) -> StreamTranslator`: a fresh translator per response body."""
    error_from_response: Callable[[int, bytes], ChatError]
    """HTTP status + error body (any content, even HTML or empty) -> classified `ChatError`."""

    def translator_for(
        self, *, endpoint: str, model: str, options: RouteOptions = DEFAULT_ROUTE_OPTIONS
    ) -> StreamTranslator:
        """A fresh translator for a response from `model` at `endpoint`.

        It stamps reasoning with the route's origin, so the next request
        replays it only to the same route (see `navagent.gateway._origin`),
        and reads the stream as the route's `options` say.
        """
        return self.new_translator(origin=route_origin(self.name, endpoint, model), options=options)


PROTOCOLS: Mapping[str, ChatProtocol] = MappingProxyType(
    {
        "openai_chat_completions": ChatProtocol(
            name="openai_chat_completions",
            build_request=openai.build_request,
            new_translator=openai.OpenAIStreamTranslator,
            error_from_response=openai.error_from_response,
        ),
        "openai_responses": ChatProtocol(
            name="openai_responses",
            build_request=openai_responses.build_request,
            new_translator=openai_responses.ResponsesStreamTranslator,
            error_from_response=openai_responses.error_from_response,
        ),
        "anthropic_messages": ChatProtocol(
            name="anthropic_messages",
            build_request=anthropic.build_request,
            new_translator=anthropic.AnthropicStreamTranslator,
            error_from_response=anthropic.error_from_response,
        ),
    }
)
"""Every supported protocol by name; read-only."""
