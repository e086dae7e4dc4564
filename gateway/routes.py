"""Inference routes: the Navigator standalone YAML schema, loaded and resolved.

A routes file looks like::

    routes:
      - routing_hint: agent
        endpoint: https://api.anthropic.com      # a trailing /v1 is tolerated
        model: claude-sonnet-4-5
        protocols: [anthropic_messages]           # and/or openai_chat_completions, openai_responses
        api_key_env: ANTHROPIC_API_KEY            # or api_key: <literal>
        enabled: true                             # optional, default true
        think_tags: split                         # optional, openai_chat_completions only
        reasoning_echo: reasoning_content         # optional, openai_chat_completions only

`think_tags` and `reasoning_echo` say what an OpenAI-compatible server's
stream does not (`RouteOptions`; README "OpenAI-compatible servers").

Unknown keys are ignored, as Navigator does, but each one is reported in
`RouteTable.warnings` with the nearest known key, so a typo such as `enabeld`
is seen at start-up. Keys are read once at start-up, stripped of surrounding
whitespace (a Kubernetes secret made from a file ends in a newline), refused
when they hold anything an HTTP header cannot carry, registered with the one
redaction path and held as `SecretStr`, so they never reach a repr, log line or
error text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from navagent.core.errors import NavAgentError
from navagent.core.messages import DEFAULT_ROUTING_HINT, FrozenModel
from navagent.core.redaction import header_safe_problem, register_secret
from navagent.core.wire_formats import ROUTE_PROTOCOLS, WIRE_FORMATS, protocol_precedence
from navagent.gateway._config_file import nearest_key, read_yaml_file
from navagent.gateway._types import DEFAULT_ROUTE_OPTIONS, ReasoningEcho, RouteOptions, ThinkTags

__all__ = [
    "CHAT_PROTOCOLS",
    "Route",
    "RouteTable",
    "RoutesError",
    "load_routes",
    "normalize_protocols",
    "parse_routes",
]

CHAT_PROTOCOLS: tuple[str, ...] = ROUTE_PROTOCOLS
"""Protocols the Chat service can speak (the wire-format registry's);
`Route.chat_protocol` says which one a route uses."""


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class RoutesError(NavAgentError):
    """A routes file that cannot be used; the text names file, route and field."""


def normalize_protocols(protocols: Sequence[str]) -> tuple[str, ...]:
    """Trim, ASCII-lowercase, drop empties and duplicates (first seen wins).

    ASCII only, as Navigator does (Rust `to_ascii_lowercase`), so a name with
    non-ASCII letters is kept as written rather than folded differently.
    """
    seen: dict[str, None] = {}
    for protocol in protocols:
        name = protocol.strip().translate(_ASCII_LOWER)
        if name:
            seen.setdefault(name, None)
    return tuple(seen)


class _RouteSpec(BaseModel):
    """One entry as written in the file, before its key is resolved."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    routing_hint: str
    endpoint: str
    model: str
    protocols: tuple[str, ...] = ()
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    enabled: bool = True
    name: str | None = None
    think_tags: ThinkTags | None = None
    reasoning_echo: ReasoningEcho | None = None

    @field_validator("routing_hint", "endpoint", "model")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, value: str) -> str:
        try:
            url = httpx.URL(value)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise ValueError(f"not a valid URL: {exc}") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"must be an http:// or https:// URL with a host, got {value!r}")
        return value

    @field_validator("protocols", mode="before")
    @classmethod
    def _normalize(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple):
            return normalize_protocols([str(item) for item in value])
        return value


_ROUTE_KEYS = frozenset(_RouteSpec.model_fields)


class Route(FrozenModel):
    """A usable route: its key resolved and its chat protocol chosen."""

    name: str
    """The route's `name`, or `<hint>#<position>` when the file gives none."""
    routing_hint: str
    endpoint: str
    model: str
    protocols: tuple[str, ...]
    api_key: SecretStr = Field(repr=False)
    key_source: str = "api_key"
    """Where the key came from, for error texts: `api_key_env NAME` or `api_key`."""
    enabled: bool = True
    options: RouteOptions = DEFAULT_ROUTE_OPTIONS
    """How its protocol reads and writes what servers disagree on (`think_tags`, ...)."""

    def model_post_init(self, _context: object) -> None:
        """Register the key with the redaction path: no route key can leave the process."""
        register_secret(self.api_key.get_secret_value())

    @property
    def chat_protocol(self) -> str | None:
        """The protocol the Chat service uses for this route, if it has one.

        The protocol with the lowest `WireFormat.route_precedence` wins (an
        OpenAI protocol over Anthropic's, as in Navigator); between equals the
        one the route lists first wins, so the operator chooses per route.
        """
        ranked = [
            (rank, position, protocol)
            for position, protocol in enumerate(self.protocols)
            if (rank := protocol_precedence(protocol)) is not None
        ]
        return min(ranked)[2] if ranked else None


class RouteTable:
    """The routes of one file, resolvable by routing hint."""

    def __init__(
        self, routes: Sequence[Route], *, source: str = "<routes>", warnings: Sequence[str] = ()
    ) -> None:
        self.routes = tuple(routes)
        self.source = source
        self.warnings = tuple(warnings)
        """Problems that do not stop the gateway (unknown keys, unusable routes), for the log."""

    def candidates(self, routing_hint: str) -> list[Route]:
        """Enabled routes for `routing_hint` that speak a chat protocol, in file order."""
        hint = routing_hint.strip() or DEFAULT_ROUTING_HINT
        return [
            route
            for route in self.routes
            if route.enabled and route.routing_hint == hint and route.chat_protocol is not None
        ]

    def chat_hints(self) -> list[str]:
        """The routing hints `candidates` serves (an enabled chat route each), sorted."""
        return sorted(
            {
                route.routing_hint
                for route in self.routes
                if route.enabled and route.chat_protocol is not None
            }
        )

    def no_route_message(
        self, routing_hint: str, *, visible: Callable[[str], bool] | None = None
    ) -> str:
        """Explain to a client that no route serves `routing_hint`, and what would.

        The routes file's path stays out: this text goes to clients. `visible`
        says which hints this client may see (a scoped caller's); None: all.
        """
        hint = routing_hint.strip() or DEFAULT_ROUTING_HINT
        matching = [route for route in self.routes if route.routing_hint == hint]
        enabled = [route for route in matching if route.enabled]
        speaks = " or ".join(CHAT_PROTOCOLS)
        if enabled:
            listed = "; ".join(f"{r.name} lists {', '.join(r.protocols)}" for r in enabled)
            return (
                f"no route for routing hint {hint!r} speaks a chat protocol ({listed}); "
                f"this gateway's Chat service speaks {speaks}. Add one of those to the "
                "route's `protocols:`."
            )
        if matching:
            return (
                f"every route for routing hint {hint!r} is disabled; "
                "set `enabled: true` on one of them."
            )
        known = sorted(
            {r.routing_hint for r in self.routes if visible is None or visible(r.routing_hint)}
        )
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        return (
            f"no inference route for routing hint {hint!r} (the gateway has hints: "
            f"{shown or 'none'}). Add an enabled route with `routing_hint: {hint}` and "
            f"`protocols:` listing {speaks} to the gateway's routes file."
        )


def parse_routes(
    document: Any, *, source: str, environ: Mapping[str, str] | None = None
) -> RouteTable:
    """Validate a parsed YAML document and resolve every route's key.

    Unknown keys and routes no Chat protocol can serve are accepted, and
    reported in the table's `warnings`.

    Raises:
        RoutesError: naming the file, the route (position and hint) and the field.
    """
    env = os.environ if environ is None else environ
    if not isinstance(document, dict) or not isinstance(document.get("routes"), list):
        raise RoutesError(f"{source}: expected a mapping with a `routes:` list")
    routes: list[Route] = []
    warnings: list[str] = []
    for position, entry in enumerate(document["routes"], start=1):
        hint = entry.get("routing_hint") if isinstance(entry, dict) else None
        where = f"{source}: route {position}" + (f" ({hint!r})" if isinstance(hint, str) else "")
        if not isinstance(entry, dict):
            raise RoutesError(f"{where}: expected a mapping, got {type(entry).__name__}")
        unknown = {
            str(key): nearest_key(str(key), _ROUTE_KEYS) for key in entry if key not in _ROUTE_KEYS
        }
        try:
            spec = _RouteSpec.model_validate(entry)
        except ValidationError as exc:
            raise RoutesError(f"{where}: {_field_problem(exc, unknown)}") from None
        route = _resolve(spec, where=where, position=position, environ=env)
        for earlier, known in enumerate(routes, start=1):
            if known.name == route.name:  # their metrics series would merge
                raise RoutesError(
                    f"{where}: the name {route.name!r} is already route {earlier}'s; "
                    "give each route its own name"
                )
        routes.append(route)
        warnings += [
            f"{where}: unknown key {key!r} is ignored"
            + (f" (did you mean {near!r}?)" if near else "")
            for key, near in unknown.items()
        ]
        if route.chat_protocol not in (None, "openai_chat_completions"):
            warnings += [
                f"{where}: {key!r} applies to openai_chat_completions only; "
                f"this route speaks {route.chat_protocol}, so it is ignored"
                for key in ("think_tags", "reasoning_echo")
                if getattr(spec, key) is not None
            ]
        if route.chat_protocol is None:
            warnings.append(
                f"{where}: lists only {', '.join(route.protocols)}, which the Chat service "
                f"cannot speak ({' or '.join(CHAT_PROTOCOLS)}); it will never be used"
            )
    return RouteTable(routes, source=source, warnings=warnings)


def _field_problem(exc: ValidationError, unknown: Mapping[str, str | None]) -> str:
    """The first validation problem, in the routes file's words."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "route"
    if first["type"] == "missing":
        typo = next((key for key, near in unknown.items() if near == field), None)
        seen = f" (saw unknown key {typo!r}: did you mean {field!r}?)" if typo else ""
        return f"missing required field {field!r}{seen}"
    message = first["msg"].removeprefix("Value error, ")
    return f"field {field!r}: {message}"


def _resolve(spec: _RouteSpec, *, where: str, position: int, environ: Mapping[str, str]) -> Route:
    if not spec.protocols:
        raise RoutesError(f"{where}: field 'protocols': at least one protocol is required")
    if spec.api_key is not None:
        raw, source = spec.api_key.get_secret_value(), "api_key"
    elif spec.api_key_env:
        raw, source = environ.get(spec.api_key_env, ""), f"api_key_env {spec.api_key_env}"
        if not raw:
            raise RoutesError(
                f"{where}: field 'api_key_env': environment variable {spec.api_key_env} is not set"
            )
    else:
        raise RoutesError(f"{where}: has neither 'api_key' nor 'api_key_env'")
    key = raw.strip()
    if not key:
        raise RoutesError(f"{where}: the key from {source} is blank")
    _check_endpoint_credentials(spec, where)
    problem = header_safe_problem(key)
    if problem is not None:
        raise RoutesError(f"{where}: the key from {source} cannot be sent to a provider: {problem}")
    return Route(
        name=spec.name or f"{spec.routing_hint}#{position}",
        routing_hint=spec.routing_hint,
        endpoint=spec.endpoint,
        model=spec.model,
        protocols=spec.protocols,
        api_key=SecretStr(key),
        key_source=source,
        enabled=spec.enabled,
        options=RouteOptions(
            think_tags=spec.think_tags or DEFAULT_ROUTE_OPTIONS.think_tags,
            reasoning_echo=spec.reasoning_echo or DEFAULT_ROUTE_OPTIONS.reasoning_echo,
        ),
    )


def _check_endpoint_credentials(spec: _RouteSpec, where: str) -> None:
    """Refuse `user:password@` in the endpoint of a protocol whose key is `Authorization`.

    They go as Basic auth in that same header (see `gateway.upstream`), so
    one of the two would be lost: a proxy's login can sit in front of a
    protocol that sends its key in another header (Anthropic's `x-api-key`).
    """
    url = httpx.URL(spec.endpoint)
    if not url.userinfo:
        return
    if url.password:
        register_secret(url.password)
    clashing = [
        row.protocol
        for row in WIRE_FORMATS.values()
        if row.protocol in spec.protocols and row.auth_header == "authorization"
    ]
    if clashing:
        raise RoutesError(
            f"{where}: field 'endpoint': a user name or password in the URL would go as "
            f"Basic auth in the Authorization header, where {clashing[0]} sends the API key; "
            "remove it from the endpoint"
        )


def load_routes(path: Path, *, environ: Mapping[str, str] | None = None) -> RouteTable:
    """Read and validate a routes file.

    Raises:
        RoutesError: the file cannot be read or parsed, or a route is invalid.
    """
    document = read_yaml_file(path, what="routes file", error=RoutesError)
    return parse_routes(document, source=str(path), environ=environ)
