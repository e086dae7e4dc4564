"""The chat protocols the gateway can speak, by route protocol name.

The gateway service resolves a route, looks its protocol up in `PROTOCOLS`
and then only ever calls the four members of `ChatProtocol`:

    protocol = PROTOCOLS["anthropic_messages"]
    upstream = protocol.build_request(request, endpoint=..., model=..., api_key=...)
    # POST upstream.url with upstream.headers and upstream.body as JSON.
    # On HTTP >= 400:  error = protocol.error_from_response(status, body_bytes)
    # On 200:
    decoder, translator = SSEDecoder(), protocol.new_translator()
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
from navagent.gateway import anthropic, openai
from navagent.gateway._types import RequestBuilder, StreamTranslator, UpstreamRequest

__all__ = [
    "ChatProtocol",
    "PROTOCOLS",
    "ProtocolName",
    "RequestBuilder",
    "StreamTranslator",
    "UpstreamRequest",
]

ProtocolName = Literal["openai_chat_completions", "anthropic_messages"]


@dataclass(frozen=True)
class ChatProtocol:
    """One provider wire protocol: how to ask, how to read the answer, how to read a failure."""

    name: ProtocolName
    """The route protocol name, as written in routes files."""
    build_request: RequestBuilder
    """`(request, *, endpoint, model, api_key) -> UpstreamRequest`; pure."""
    new_translator: Callable[[], StreamTranslator]
    """A fresh stream translator; one per response body."""
    error_from_response: Callable[[int, bytes], ChatError]
    """HTTP status + error body (any content, even HTML or empty) -> classified `ChatError`."""


PROTOCOLS: Mapping[str, ChatProtocol] = MappingProxyType(
    {
        "openai_chat_completions": ChatProtocol(
            name="openai_chat_completions",
            build_request=openai.build_request,
            new_translator=openai.OpenAIStreamTranslator,
            error_from_response=openai.error_from_response,
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
