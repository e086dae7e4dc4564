"""`nav agent --routes FILE`: the Chat gateway running inside `nav agent` itself.

For one person with an API key, deploying `nav gateway serve` is a step too
many. `EmbeddedGateway` starts the same `Gateway`, with the routes file read
exactly as `nav gateway serve` reads it (keys from the environment,
registered with the redaction path), the same settings (`NAV_GATEWAY_*`
timeouts and retries apply), translation and error handling.

It listens on a Unix socket in a gateway state folder of its own
(`$TMPDIR/nav-gateway-<uid>/<pid>-.../chat.sock`, folders 0700), not on a
loopback port: a port would let any local process stream through the user's
route keys and into the user's capture. Only this user can reach the socket,
so auth and TLS stay off.

Its upstream transport can be given, so a capture (`SessionCapture`) keeps
every byte the providers sent (what `--record` and `/record` write out).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from navagent.core.errors import NavAgentError
from navagent.core.wire_formats import WIRE_FORMATS
from navagent.fixtures.harness import CapturedRoute
from navagent.gateway._instance import PrivateSocket
from navagent.gateway.routes import RouteTable, load_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings

__all__ = ["EmbeddedGateway", "EmbeddedGatewayError", "captured_routes", "read_routes"]


class EmbeddedGatewayError(NavAgentError):
    """The in-process gateway cannot start; the text says why, in one sentence."""


def read_routes(path: Path) -> RouteTable:
    """The routes file, read as `nav gateway serve` reads it.

    Raises:
        RoutesError: the file cannot be read, or a route is unusable (a key
            variable unset, ...), with the file and the route named.
    """
    return load_routes(path)


def captured_routes(routes: RouteTable) -> list[CapturedRoute]:
    """What a capture keeps of each usable route (never its key)."""
    protocols = {row.protocol: row.id for row in WIRE_FORMATS.values()}
    kept = []
    for route in routes.routes:
        protocol = route.chat_protocol
        if protocol is None or protocol not in protocols:
            continue
        options = route.options
        kept.append(
            CapturedRoute(
                routing_hint=route.routing_hint,
                endpoint=route.endpoint,
                model=route.model,
                provider=protocols[protocol],
                think_tags=options.think_tags if options.think_tags != "keep" else None,
                reasoning_echo=(
                    options.reasoning_echo
                    if options.reasoning_echo != "reasoning_details"
                    else None
                ),
            )
        )
    return kept


class EmbeddedGateway:
    """A `Gateway` on a private Unix socket serving `routes`; `address` once entered."""

    def __init__(
        self, routes: RouteTable, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._routes = routes
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._gateway: Gateway | None = None
        self._socket: PrivateSocket | None = None
        self.address = ""
        """`unix:PATH` of its socket, for `GrpcChatClient`."""

    async def __aenter__(self) -> Self:
        """Start serving.

        Raises:
            EmbeddedGatewayError: the state folder is refused (a link, someone
                else's), or the socket cannot be bound.
        """
        try:
            self._socket = PrivateSocket()
            settings = GatewaySettings.private_socket(self._socket.path, grace_period_s=0.0)
            if self._transport is not None:
                self._http = httpx.AsyncClient(transport=self._transport)
            self._gateway = Gateway(settings, self._routes, http_client=self._http)
            await self._gateway.start()
        except RuntimeError as exc:
            await self.aclose()
            raise EmbeddedGatewayError(f"cannot start the in-process gateway: {exc}") from None
        except BaseException:
            await self.aclose()
            raise
        self.address = self._gateway.address
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the gateway and close its upstream client; idempotent."""
        gateway, self._gateway = self._gateway, None
        if gateway is not None:
            await gateway.stop(grace_s=0)
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()
        socket, self._socket = self._socket, None
        if socket is not None:
            socket.close()
