"""The one registry of wire formats: every layer keys on it, none spells a format itself.

A wire format is the shape of one provider API on the wire: OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages, Google Gemini. The gateway speaks it (its
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

A row says what differs between APIs, so shared code asks it instead of
assuming: where the model goes (`{model}` in `path`, or the body), how
streaming is asked for (`stream_query`, or a body flag), the key's header and
query parameter, the error object's naming fields, the event line ending, the
request-id header, and capabilities (`reasons`, `caches_prompts`,
`signs_thinking`) that tests and scenario expectations name instead of
listing formats.

Modules are named by import path (`gateway`, `simulator`), not imported: `core`
imports no other layer, and each layer loads only the plug-ins it uses.

This module imports nothing beyond the standard library: `nav --help` reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeAlias
from urllib.parse import quote, unquote

WireFormatId: TypeAlias = str
"""A key of `WIRE_FORMATS` (`openai`, ...); `wire_format()` checks one."""

__all__ = [
    "CAPABILITIES",
    "FORMAT_IDS",
    "ROUTE_PROTOCOLS",
    "WIRE_FORMATS",
    "UnknownWireFormatError",
    "WireDialect",
    "WireFormat",
    "WireFormatId",
    "formats_with",
    "protocol_precedence",
    "streamed_text",
    "wire_format",
]


@dataclass(frozen=True, slots=True)
class WireDialect:
    """One server's variant of a format's stream (a recorded response shows it)."""

    name: str
    """As `nav scenario coverage` prints it: `reasoning_content`."""
    description: str
    """Who sends it and what it looks like, in a line."""


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
    """The request path under the endpoint, e.g. `/v1/chat/completions`. A path
    with `{model}` carries the model (Gemini's `/v1beta/models/{model}:...`);
    any other sends it in the body's `model` field."""
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
    stream_query: str = ""
    """The query a streaming request adds to the URL (Gemini: `alt=sse`); empty
    when streaming is asked for in the body (`"stream": true`)."""
    whole_path: str = ""
    """With `stream_query`: the path of the same request answered whole, not
    streamed (Gemini's `:generateContent`); the simulator serves it too."""
    auth_query: str = ""
    """A query parameter the API also accepts the key in (Gemini: `key`): a
    cassette drops it like the header, an error never echoes it."""
    error_fields: tuple[str, ...] = ("code", "type")
    """The fields of the error object that name the failure, most specific first
    (Google: `status`, e.g. `RESOURCE_EXHAUSTED`)."""
    event_line_ending: str = "\n"
    """How the API ends the lines of its events (Google: CRLF)."""
    request_id_header: str = ""
    """The response header carrying the request id; empty when the API sends none."""
    reasons: bool = False
    """Its models stream reasoning by default (or with the scenario's named
    model): a scenario's `thinking: reasons` expects it here."""
    caches_prompts: bool = True
    """Usage reports prompt-cache reads: `cached: caches_prompts` expects them."""
    names_calls: bool = True
    """The API gives every tool call an id; where it does not (Gemini), the
    gateway derives one from the response id and the call's position."""
    malformed_arguments: bool = True
    """The API hands a tool call's arguments over as unchecked text (OpenAI's
    `arguments` string), so a model's malformed JSON reaches the agent; where they
    are a JSON object the API checked (Anthropic's `input`, Gemini's `args`), they
    can be wrong but never malformed (the gateway refuses a stream that breaks that)."""
    signs_thinking: bool = False
    """Reasoning comes with an opaque signature or sealed state that must go back
    on the next request unchanged."""
    stream_text: tuple[str, ...] = ()
    """Where the text of a streamed answer lives in an event's JSON, one piece an
    event: keys joined by `.`, a list's items as `[]`, `.**` for anything under
    a key. A recording's redaction joins the strings at one such path, event
    after event, and redacts them as one text, so a secret the model wrote
    across two events is still masked (`navagent.fixtures.harness.cassettes._body_redaction`)."""
    dialects: tuple[WireDialect, ...] = ()
    """Shapes some servers of this format stream and others do not, each with a
    translator path of its own (`nav scenario coverage` lists which a team's
    recordings replay; the simulator produces each, see scenarios/README)."""
    model_in_path: bool = field(init=False)
    """The model travels in the URL (`{model}` in `path`), not in the body."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model_in_path", "{model}" in self.path)

    def request_path(self, model: str) -> str:
        """The path of a request for `model` (the model filled in where the path has it).

        The model is percent-encoded: a `/`, `?`, `#` or `..` in a model name
        never changes which URL is asked for.
        """
        return self.path.replace("{model}", quote(model, safe=""))

    def match_path(self, path: str, *, whole: bool = False) -> str | None:
        """The model named by `path` if it is this format's (simulator) path, else None.

        A body-model format matches its fixed path and returns "" (the model is
        in the body); a path-model format returns the model from the URL.
        `whole`: match `whole_path` instead (None when the row has none).
        """
        if whole and not self.whole_path:
            return None
        template = self.sim_prefix + self.whole_path if whole else self.sim_path
        head, _, tail = template.partition("{model}")
        if "{model}" not in template:
            return "" if path == head else None
        if not (path.startswith(head) and path.endswith(tail)):
            return None
        model = path[len(head) : len(path) - len(tail)]
        return unquote(model) if model and "/" not in model else None

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
                request_id_header="x-request-id",
                # Text, reasoning (`reasoning`, `reasoning_content`, `reasoning_details`)
                # and tool-call arguments.
                stream_text=("choices[].delta.**",),
                dialects=(
                    WireDialect(
                        "reasoning_content",
                        "DeepSeek, vLLM: reasoning as `delta.reasoning_content` pieces",
                    ),
                    WireDialect(
                        "reasoning_details",
                        "OpenRouter: `delta.reasoning_details` fragments merged by index, signed",
                    ),
                    WireDialect(
                        "reasoning",
                        "Groq, Cerebras, newer vLLM: reasoning as `delta.reasoning` pieces",
                    ),
                    WireDialect(
                        "thinking_blocks",
                        "Mistral Magistral: `delta.content` as typed blocks, thinking in"
                        " `thinking` blocks",
                    ),
                ),
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
                request_id_header="x-request-id",
                reasons=True,
                signs_thinking=True,
                # `response.output_text.delta`, `...reasoning_summary_text.delta`,
                # `...function_call_arguments.delta`: each event's `delta`.
                stream_text=("delta",),
                dialects=(
                    WireDialect(
                        "reasoning_text",
                        "gpt-oss on compatible servers: raw `response.reasoning_text.delta`",
                    ),
                    WireDialect(
                        "reencrypted_reasoning",
                        "gpt-5, o-series: `response.completed` re-encrypts each reasoning item",
                    ),
                    WireDialect(
                        "interleaved_reasoning",
                        "o-series, gpt-5 with tools: reasoning again after a call, each item"
                        " sent back before its own",
                    ),
                ),
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
                request_id_header="request-id",
                reasons=True,
                signs_thinking=True,
                malformed_arguments=False,
                # `content_block_delta`: `text`, `thinking`, `partial_json`.
                stream_text=("delta.**",),
                dialects=(
                    WireDialect(
                        "redacted_thinking",
                        "thinking the safety systems redacted: `redacted_thinking` blocks",
                    ),
                ),
            ),
            WireFormat(
                id="gemini",
                protocol="google_gemini",
                display_name="Google Gemini",
                path="/v1beta/models/{model}:streamGenerateContent",
                auth_header="x-goog-api-key",
                default_endpoint="https://generativelanguage.googleapis.com",
                key_env="GEMINI_API_KEY",
                default_model="gemini-2.5-flash",
                demo_model="gemini-2.5-flash",
                route_precedence=2,
                gateway="navagent.gateway.gemini",
                simulator="navagent.fixtures.provider.formats.gemini",
                stream_query="alt=sse",
                whole_path="/v1beta/models/{model}:generateContent",
                auth_query="key",
                error_fields=("status",),
                event_line_ending="\r\n",
                names_calls=False,
                malformed_arguments=False,
                reasons=True,
                signs_thinking=True,
                # Every event is a whole response with the next piece of each part.
                stream_text=("candidates[].content.parts[].text",),
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


CAPABILITIES: tuple[str, ...] = ("reasons", "caches_prompts", "signs_thinking", "names_calls")
"""The boolean row fields a scenario expectation or a test may name instead of format ids."""


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


def formats_with(capability: str) -> tuple[str, ...]:
    """The ids of the formats whose row has the boolean `capability` set (`reasons`, ...).

    Raises:
        ValueError: `capability` is not a boolean field of `WireFormat`.
    """
    if capability not in CAPABILITIES:
        raise ValueError(
            f"unknown capability {capability!r} (expected one of: {', '.join(CAPABILITIES)})"
        )
    return tuple(row.id for row in WIRE_FORMATS.values() if getattr(row, capability))


def protocol_precedence(protocol: str) -> int | None:
    """How strongly a route prefers `protocol` (lower wins); None if no format speaks it."""
    ranks = [row.route_precedence for row in WIRE_FORMATS.values() if row.protocol == protocol]
    return min(ranks) if ranks else None


def _json_path(path: tuple[str | int, ...]) -> str:
    """`("choices", 0, "delta", "content")` as `choices[].delta.content`."""
    out = ""
    for key in path:
        out += "[]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


def streamed_text(path: tuple[str | int, ...]) -> bool:
    """Whether a string at `path` in a stream event is a piece of streamed text, in any format.

    Asked of every registered row (`stream_text`): a recording does not say
    which format a stream is in, and no row's path is another format's plain field.
    """
    spelled = _json_path(path)
    for row in WIRE_FORMATS.values():
        for pattern in row.stream_text:
            if pattern.endswith(".**"):
                if spelled.startswith(pattern[:-2]):
                    return True
            elif spelled == pattern:
                return True
    return False
