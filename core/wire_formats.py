"""The one registry of wire formats: every layer keys on it, none spells a format itself.

A wire format is the shape of one provider API on the wire: OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages. The gateway speaks it (its
route protocol), the simulator answers in it (its plug-in), the CLI offers it
(`--demo-provider`, `nav scenario --provider`), the harness records and
replays it (its cassette folder, its recording defaults), and the tests are
parametrised over it. All of them read `WIRE_FORMATS`, so adding a format, or
an OpenAI-compatible flavour of one, is its own modules plus one row here;
`tests/core/test_wire_formats.py` proves every layer lists exactly these.

The two names of a format stay as users know them: the `id` (`openai`,
`openai-responses`, `anthropic`: CLI choices, cassette folders, scenario
files) and the route `protocol` (`openai_chat_completions`, ...: routes files,
as in Navigator). Several formats may share a route protocol (a flavour of
Chat Completions is still `openai_chat_completions` to the gateway); they then
share its gateway module too.

Modules are named by import path (`gateway`, `simulator`), not imported: `core`
imports no other layer, and each layer loads only the plug-ins it uses.

This module imports nothing beyond the standard library: `nav --help` reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeAlias

WireFormatId: TypeAlias = str
"""A key of `WIRE_FORMATS` (`openai`, ...); `wire_format()` checks one."""

__all__ = [
    "FORMAT_IDS",
    "ROUTE_PROTOCOLS",
    "WIRE_FORMATS",
    "UnknownWireFormatError",
    "WireFormat",
    "WireFormatId",
    "protocol_precedence",
    "wire_format",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class WireFormat:
    """One wire format, and everything a layer needs to know to speak or record it."""

    id: str
    """User-facing name: CLI choices, cassette folder, scenario `thinking:`/`cached:` lists."""
    protocol: str
    """The route protocol name in routes files (`protocols: [...]`)."""
    display_name: str
    """For people: help texts, banners, messages."""
    path: str
    """The request path under the endpoint, e.g. `/v1/chat/completions`."""
    auth_header: str
    """The header carrying the API key (lower case)."""
    default_endpoint: str
    """The public API's base URL: where a real recording goes without `--endpoint`."""
    key_env: str
    """The environment variable a real recording reads the key from."""
    default_model: str
    """The model a scenario records with unless its `models:` names another."""
    demo_model: str
    """The model `nav agent --demo` asks the simulator for (a name can switch on reasoning)."""
    route_precedence: int
    """When a route lists several protocols the Chat service can speak, the lowest
    precedence wins (ties: the one listed first), as Navigator prefers OpenAI."""
    gateway: str
    """Import path of the gateway package that speaks it: it exports `build_request`,
    `Translator` and `error_from_response` (see `navagent.gateway.protocols`)."""
    simulator: str
    """Import path of the simulator plug-in: it exports `PLUGIN`, a
    `navagent.fixtures.provider.FormatPlugin`."""
    request_headers: tuple[str, ...] = ()
    """Request headers of this format a cassette keeps, beyond `content-type` and
    `accept` (never a credential: the key header is always dropped)."""
    response_headers: tuple[str, ...] = ()
    """Response headers of this format a cassette keeps, beyond `content-type` and
    `retry-after`."""
    sim_prefix: str = ""
    """Path prefix the simulator serves this format under; keeps apart formats
    that share a request path (flavours), e.g. `/compat/vllm`."""

    @property
    def cassette_folder(self) -> str:
        """The folder under `cassettes/` holding this format's recordings."""
        return self.id

    @property
    def models_key(self) -> str:
        """The key of this format in a scenario's `models:` mapping (`-` becomes `_`)."""
        return self.id.replace("-", "_")

    @property
    def sim_path(self) -> str:
        """The path the simulator answers this format on."""
        return self.sim_prefix + self.path


WIRE_FORMATS: Mapping[str, WireFormat] = MappingProxyType(
    {
        row.id: row
        for row in (
            WireFormat(
                id="openai",
                protocol="openai_chat_completions",
                display_name="OpenAI Chat Completions",
                path="/v1/chat/completions",
                auth_header="authorization",
                default_endpoint="https://api.openai.com",
                key_env="OPENAI_API_KEY",
                default_model="gpt-4.1-mini",
                demo_model="simulated",
                route_precedence=0,
                gateway="navagent.gateway.openai",
                simulator="navagent.fixtures.provider.formats.openai",
                response_headers=("x-request-id",),
            ),
            WireFormat(
                id="openai-responses",
                protocol="openai_responses",
                display_name="OpenAI Responses",
                path="/v1/responses",
                auth_header="authorization",
                default_endpoint="https://api.openai.com",
                key_env="OPENAI_API_KEY",
                # A reasoning model: the simulator streams reasoning summaries and
                # encrypted reasoning items, which must come back on the next request.
                default_model="gpt-5-mini",
                demo_model="gpt-5-mini",
                route_precedence=0,
                gateway="navagent.gateway.openai_responses",
                simulator="navagent.fixtures.provider.formats.openai_responses",
                response_headers=("x-request-id",),
            ),
            WireFormat(
                id="anthropic",
                protocol="anthropic_messages",
                display_name="Anthropic Messages",
                path="/v1/messages",
                auth_header="x-api-key",
                default_endpoint="https://api.anthropic.com",
                key_env="ANTHROPIC_API_KEY",
                default_model="claude-sonnet-4-5",
                demo_model="simulated",
                route_precedence=1,
                gateway="navagent.gateway.anthropic",
                simulator="navagent.fixtures.provider.formats.anthropic",
                request_headers=("anthropic-version", "anthropic-beta"),
                response_headers=("request-id", "x-should-retry"),
            ),
        )
    }
)
"""Every wire format by id, in the order CLI choices and test ids list them; read-only.

The first row is the default where one format must be chosen (`nav agent --demo`)."""

FORMAT_IDS: tuple[str, ...] = tuple(WIRE_FORMATS)
"""The registered format ids, in registry order."""

ROUTE_PROTOCOLS: tuple[str, ...] = tuple(
    dict.fromkeys(row.protocol for row in WIRE_FORMATS.values())
)
"""The route protocols the Chat service speaks, each once, in registry order."""


class UnknownWireFormatError(ValueError):
    """A format id that is not in the registry; the message lists the known ones."""


def wire_format(format_id: str) -> WireFormat:
    """The registry row of `format_id`.

    Raises:
        UnknownWireFormatError: no such format; the message lists the known ones.
    """
    try:
        return WIRE_FORMATS[format_id]
    except KeyError:
        raise UnknownWireFormatError(
            f"unknown wire format {format_id!r} (expected one of: {', '.join(FORMAT_IDS)})"
        ) from None


def protocol_precedence(protocol: str) -> int | None:
    """How strongly a route prefers `protocol` (lower wins); None if no format speaks it."""
    ranks = [row.route_precedence for row in WIRE_FORMATS.values() if row.protocol == protocol]
    return min(ranks) if ranks else None
