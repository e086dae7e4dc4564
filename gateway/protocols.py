"""The chat protocols the gateway can speak, by route protocol name.

The table is built from the wire-format registry (`navagent.core.wire_formats`):
each route protocol there names the gateway package that speaks it, loaded by
import path, so a new protocol is its package plus its registry row.

The gateway service resolves a route, looks its protocol up in `PROTOCOLS`
and then only ever calls the four members of `ChatProtocol`:

    protocol = PROTOCOLS["anthropic_messages"]
    upstream = protocol.build_request(request, endpoint=..., model=..., api_key=...)
    # POST upstream.url with upstream.headers and upstream.body as JSON.
    # On HTTP >= 400:  error = protocol.error_from_response(status, body_bytes)
    # On 200:
    translator = protocol.translator_for(endpoint=..., model=..., api_key=...)
    decoder = SSEDecoder()
    for chunk in body:                      # bytes, any split
        for sse in decoder.feed(chunk):
            yield from translator.handle(sse)
        if translator.done:
            break
    decoder.finish()
    yield from translator.finish()          # StreamError if the body was truncated

Everything behind these members is pure: no I/O, no clocks, no globals, no
randomness. One rule for ids a provider did not send (a tool call without an
id, a legacy `function_call`): derive them from what the stream did send,
`derived_call_id(response id, call position)` in `_parts`, so one stream always
translates to the same message, in any chunking, live or replayed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from navagent.core.events import ChatError
from navagent.core.wire_formats import ROUTE_PROTOCOLS, WIRE_FORMATS
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
    "RequestBuilder",
    "RouteOptions",
    "StreamTranslator",
    "TranslatorFactory",
    "UpstreamRequest",
    "load_protocol",
]


@dataclass(frozen=True)
class ChatProtocol:
    """One provider wire protocol: how to ask, how to read the answer, how to read a failure."""

    name: str
    """The route protocol name, as written in routes files (`WireFormat.protocol`)."""
    build_request: RequestBuilder
    """`(request, *, endpoint, model, api_key, options) -> UpstreamRequest`; pure."""
    new_translator: TranslatorFactory
    """`(*, origin="", options) -> StreamTranslator`: a fresh translator per response body."""
    error_from_response: Callable[[int, bytes], ChatError]
    """HTTP status + error body (any content, even HTML or empty) -> classified `ChatError`."""

    def translator_for(
        self,
        *,
        endpoint: str,
        model: str,
        api_key: str,
        options: RouteOptions = DEFAULT_ROUTE_OPTIONS,
    ) -> StreamTranslator:
        """A fresh translator for a response from `model` at `endpoint` through `api_key`.

        It stamps reasoning with the route's origin, so the next request
        replays it only to the same route, key included (see
        `navagent.gateway._origin`), and reads the stream as the route's
        `options` say.
        """
        origin = route_origin(self.name, endpoint, model, api_key)
        return self.new_translator(origin=origin, options=options)


def load_protocol(name: str, module_path: str) -> ChatProtocol:
    """The `ChatProtocol` of the gateway package at `module_path` (a registry row's `gateway`).

    A protocol package exports `build_request`, `Translator` (the stream
    translator class) and `error_from_response`.

    Raises:
        AttributeError: the package lacks one of the three (a registry row points
            at something that is not a protocol package).
    """
    module = importlib.import_module(module_path)
    return ChatProtocol(
        name=name,
        build_request=module.build_request,
        new_translator=module.Translator,
        error_from_response=module.error_from_response,
    )


def _gateway_of(protocol: str) -> str:
    modules = {row.gateway for row in WIRE_FORMATS.values() if row.protocol == protocol}
    if len(modules) != 1:
        raise RuntimeError(
            f"the wire formats speaking {protocol} name {len(modules)} gateway packages"
            f" ({', '.join(sorted(modules))}); a route protocol has exactly one"
        )
    return modules.pop()


PROTOCOLS: Mapping[str, ChatProtocol] = MappingProxyType(
    {name: load_protocol(name, _gateway_of(name)) for name in ROUTE_PROTOCOLS}
)
"""Every route protocol of the wire-format registry, by name; read-only."""
