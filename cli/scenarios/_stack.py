"""The in-process stack a scenario talks to: gateway, routes and a gRPC client.

The same pieces `nav agent` uses against a deployed gateway, started on a
free local port: `Gateway` with one route per provider (and model, and
endpoint) the run needs, and a `GrpcChatClient` to it. The gateway's
upstream `httpx.AsyncClient` is ours, with a request hook that records what
the gateway sent (method, path, parsed JSON body) so a replay can compare it,
request by request, with the cassette. vcrpy patches the transport under
that client, so the hook sees every request whether it is replayed or
really sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import httpx

from navagent.cli.scenarios._matching import RequestShape, parse_body
from navagent.cli.scenarios._model import Provider
from navagent.core.chat_client import GrpcChatClient
from navagent.gateway._network import upstream_transport
from navagent.gateway.routes import parse_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings

__all__ = ["PROTOCOL", "ProviderRoute", "ProviderStack", "RequestLog"]

PROTOCOL: dict[Provider, str] = {
    "openai": "openai_chat_completions",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic_messages",
}
"""The route protocol that speaks each provider's wire format."""


@dataclass(frozen=True)
class ProviderRoute:
    """One upstream the gateway routes to."""

    provider: Provider
    endpoint: str
    model: str
    api_key: str = field(repr=False)


class RequestLog:
    """The requests the gateway sent upstream, in order."""

    def __init__(self) -> None:
        self.requests: list[RequestShape] = []

    async def hook(self, request: httpx.Request) -> None:
        """The httpx `request` event hook: remember the request's method, path and body."""
        body = await request.aread()
        self.requests.append(
            RequestShape(method=request.method, path=request.url.path, body=parse_body(body))
        )

    def clear(self) -> None:
        """Forget everything (between two replays sharing the stack)."""
        self.requests.clear()


class ProviderStack:
    """A gateway on 127.0.0.1:0 serving `routes`, and a client to it.

    Use as `async with ProviderStack(routes) as stack:`; each route gets its
    own routing hint (`hint_for`), so one stack serves a whole run.
    """

    def __init__(self, routes: Sequence[ProviderRoute]) -> None:
        """Plan the routes; nothing starts before `async with`.

        Raises:
            RoutesError: an endpoint is not an http(s) URL or a model is blank.
        """
        self._routes = list(dict.fromkeys(routes))
        self._hints = {route: f"scenario-{index}" for index, route in enumerate(self._routes)}
        self._table = parse_routes(
            {
                "routes": [
                    {
                        "routing_hint": self._hints[route],
                        "endpoint": route.endpoint,
                        "model": route.model,
                        "protocols": [PROTOCOL[route.provider]],
                        "api_key": route.api_key,
                    }
                    for route in self._routes
                ]
            },
            source="<scenario routes>",
            environ={},
        )
        self.requests = RequestLog()
        self._http: httpx.AsyncClient | None = None
        self._gateway: Gateway | None = None
        self._client: GrpcChatClient | None = None

    def hint_for(self, route: ProviderRoute) -> str:
        """The routing hint that selects `route`."""
        return self._hints[route]

    @property
    def client(self) -> GrpcChatClient:
        """The gRPC client to the running gateway."""
        if self._client is None:
            raise RuntimeError("the provider stack is not running")
        return self._client

    async def __aenter__(self) -> Self:
        self._http = httpx.AsyncClient(
            transport=upstream_transport(httpx.Limits()),  # the gateway's own transport
            event_hooks={"request": [self.requests.hook]},
        )
        settings = GatewaySettings.loopback()
        self._gateway = Gateway(settings, self._table, http_client=self._http)
        await self._gateway.start()
        self._client = GrpcChatClient(self._gateway.address)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._gateway is not None:
            await self._gateway.stop(grace_s=0)
        if self._http is not None:
            await self._http.aclose()
        self._client = self._gateway = self._http = None
