"""What a gateway serves with: the routes and callers it last accepted.

The files are read at start and on reload only, never behind the operator's
back. A supervised gateway reads them once in the supervisor and hands the
accepted `Config` itself (pickled over a pipe, never written to disk: it holds
keys) to every worker it starts and, on reload, to every running worker, so
every worker always serves the same routes whatever happened to the files.

A reload re-reads each file on its own: a file that cannot be used keeps its
current table and says why in one log line, the other file is still taken.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from navagent.core.redaction import clip, register_secret
from navagent.gateway.callers import CallersError, CallerTable, assign_counters, load_callers
from navagent.gateway.routes import RoutesError, RouteTable, load_routes
from navagent.gateway.settings import GatewaySettings

__all__ = ["Config", "load_callers_of", "load_config", "reload_config", "summary"]

log = logging.getLogger("navagent.gateway")

Busy = Callable[[int], int]
"""Slots of a counter held now, gateway-wide (`Slots.in_use`)."""


@dataclass(frozen=True)
class Config:
    """The routes and callers a gateway serves with; None callers means auth is off."""

    routes: RouteTable
    callers: CallerTable | None

    def register_secrets(self) -> None:
        """Register every key with this process's redaction path (after unpickling)."""
        for route in self.routes.routes:
            register_secret(route.api_key.get_secret_value())


def load_config(settings: GatewaySettings, busy: Busy) -> Config:
    """Read the routes and callers files named by `settings`, as at start.

    Raises:
        RoutesError, CallersError: a file cannot be used.
        ValueError: the `--auth-token-env` token is unusable.
    """
    if settings.routes is None:
        raise RoutesError("no routes file: pass --routes FILE or set NAV_GATEWAY_ROUTES")
    routes = load_routes(settings.routes)
    return Config(routes, load_callers_of(settings, None, busy))


def reload_config(settings: GatewaySettings, current: Config, busy: Busy) -> tuple[Config, bool]:
    """Re-read both files; the new config and whether every file was taken.

    Each file that cannot be used keeps its current table, with one log line
    saying why; the routes' warnings are logged as at start.
    """
    ok = True
    callers = current.callers
    if settings.callers is not None and current.callers is not None:
        try:
            callers = load_callers_of(settings, current.callers, busy)
        except (CallersError, ValueError) as exc:
            log.error("reload failed, keeping the current callers: %s", clip(str(exc), 1024))
            ok = False
        else:
            assert callers is not None
            log.info("callers reloaded from %s: %d caller(s)", callers.source, len(callers.callers))
    routes = current.routes
    if settings.routes is None:
        log.warning("reload: nothing to re-read (the gateway was started without --routes)")
        return replace(current, callers=callers), False
    try:
        routes = load_routes(settings.routes)
    except RoutesError as exc:
        log.error("reload failed, keeping the current routes: %s", clip(str(exc), 1024))
        ok = False
    else:
        for warning in routes.warnings:
            log.warning("routes: %s", warning)
        log.info("routes reloaded from %s: %s", settings.routes, summary(routes))
    return Config(routes, callers), ok


def load_callers_of(
    settings: GatewaySettings, previous: CallerTable | None, busy: Busy
) -> CallerTable | None:
    """The callers file's table plus the `--auth-token-env` caller; None when auth is off."""
    path, token = settings.callers, settings.auth_token()
    table = load_callers(path) if path is not None else None
    if token is not None and settings.auth_token_env:
        table = (table or CallerTable(())).with_token(settings.auth_token_env, token)
    return None if table is None else assign_counters(table, previous, busy)


def summary(routes: RouteTable) -> str:
    """`N route(s): hint->protocol, ...`, for the ready and reload log lines."""
    hints = ", ".join(
        f"{route.routing_hint}->{route.chat_protocol or '/'.join(route.protocols)}"
        f"{'' if route.enabled else ' (disabled)'}"
        for route in routes.routes
    )
    return f"{len(routes.routes)} route(s): {hints or 'none'}"
