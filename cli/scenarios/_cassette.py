"""Cassettes: where they live, what they say about their origin, and the vcrpy setup.

One cassette per scenario and provider, at `cassettes/<provider>/<id>.yaml`.
Requests match on method, path and JSON body (`_matching`), so a change in
how the gateway translates a request fails the replay; the host is left out
so a cassette recorded against one endpoint replays wherever the route
points. A replay runs in record mode `none` with playback repeats off, and
must play every interaction.

Only an allow-list of headers is recorded: whatever else a provider or a
client adds (authorization, x-api-key, cookies, organisation ids, dates) is
dropped before anything is written. Every cassette starts with a `metadata:
source:` block that says plainly where it came from (`CassetteSource`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import vcr
from pydantic import Field, ValidationError
from vcr.cassette import Cassette
from vcr.request import Request as VcrRequest

from navagent.cli.scenarios import _serializer
from navagent.cli.scenarios._matching import RequestShape, json_body_matcher, parse_body
from navagent.cli.scenarios._model import Provider
from navagent.core.errors import NavAgentError
from navagent.core.messages import FrozenModel

__all__ = [
    "MATCH_ON",
    "REQUEST_HEADERS_KEPT",
    "RESPONSE_HEADERS_KEPT",
    "SIMULATED_ENDPOINT",
    "CassetteError",
    "CassetteSource",
    "LoadedCassette",
    "cassette_path",
    "load_cassette",
    "make_vcr",
    "open_cassette",
]

MATCH_ON = ("method", "path", "json_body")
REQUEST_HEADERS_KEPT = frozenset({"content-type", "accept", "anthropic-version", "anthropic-beta"})
RESPONSE_HEADERS_KEPT = frozenset(
    {"content-type", "request-id", "x-request-id", "retry-after", "x-should-retry"}
)
SIMULATED_ENDPOINT = "http://simulated-provider.invalid"
"""Stands for the simulated provider's address (a random local port) in
recorded URIs, so recording twice gives the same file."""
_SERIALIZER = "navagent-yaml"


class CassetteError(NavAgentError):
    """A cassette is missing, unreadable, or says nothing about where it came from."""


class CassetteSource(FrozenModel):
    """Where a cassette was recorded; stored as `metadata: source:` at its top."""

    kind: Literal["simulated", "real"]
    """`simulated`: nav-agent's simulated provider; `real`: a real API endpoint."""
    note: str
    """The same, in one plain sentence for whoever opens the file."""
    provider: Provider
    endpoint: str = Field(pattern=r"^https?://")
    """The base URL the route pointed at (`SIMULATED_ENDPOINT` for the simulator)."""
    model: str = Field(min_length=1)
    """The model the route asked for; a replay asks for the same."""
    recorded: str
    """The date of the recording (for the simulator, its fixed clock's date)."""
    scenario: str
    """The scenario id."""


def cassette_path(cassette_dir: Path, provider: Provider, scenario_id: str) -> Path:
    """`<cassette_dir>/<provider>/<scenario_id>.yaml`."""
    return cassette_dir / provider / f"{scenario_id}.yaml"


@dataclass(frozen=True)
class LoadedCassette:
    """A cassette's origin and its requests, read before a replay starts."""

    path: Path
    source: CassetteSource
    requests: tuple[RequestShape, ...]


def load_cassette(path: Path) -> LoadedCassette:
    """Read a cassette's source and requests.

    Raises:
        CassetteError: the file is missing or malformed, or has no valid
            `metadata: source:` block.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CassetteError(f"no cassette at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"cannot read the cassette {path}: {exc}") from None
    try:
        data = _serializer.deserialize(text)
        interactions = data["interactions"]
        requests = tuple(
            RequestShape(
                method=item["request"]["method"],
                path=urlsplit(item["request"]["uri"]).path,
                body=parse_body(item["request"].get("body")),
            )
            for item in interactions
        )
    except Exception as exc:  # any shape problem in a hand-edited file
        raise CassetteError(f"the cassette {path} is malformed: {exc!r}") from None
    metadata = data.get("metadata")
    source = metadata.get("source") if isinstance(metadata, dict) else None
    if source is None:
        raise CassetteError(
            f"the cassette {path} has no `metadata: source:` block saying where it was recorded;"
            " record it again with `nav scenario record`"
        )
    try:
        return LoadedCassette(path, CassetteSource.model_validate(source), requests)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CassetteError(
            f"the cassette {path} has an invalid metadata.source.{where}: {first['msg']}"
        ) from None


def _kept(headers: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    return {name: value for name, value in headers.items() if name.lower() in allowed}


def _request_filter(endpoint_alias: str | None) -> Callable[[VcrRequest], VcrRequest]:
    """A `before_record_request` hook: keep allowed headers, optionally rename the host."""

    def keep(request: VcrRequest) -> VcrRequest:
        request = copy.copy(request)
        request.headers = _kept(dict(request.headers), REQUEST_HEADERS_KEPT)
        if endpoint_alias is not None:
            alias = urlsplit(endpoint_alias)
            parts = urlsplit(request.uri)
            request.uri = urlunsplit((alias.scheme, alias.netloc, parts.path, parts.query, ""))
        return request

    return keep


def _keep_response_headers(response: dict[str, Any]) -> dict[str, Any]:
    response["headers"] = _kept(response.get("headers") or {}, RESPONSE_HEADERS_KEPT)
    return response


def make_vcr(
    *,
    record: bool = False,
    endpoint_alias: str | None = None,
    secrets: Sequence[str] = (),
) -> vcr.VCR:
    """The vcrpy configuration for replaying (default) or recording a cassette.

    Args:
        record: Record every request (mode `all`) instead of replaying (`none`).
        endpoint_alias: Store request URIs under this scheme and host (the
            simulator's random port would make every recording differ).
        secrets: Values replaced by a placeholder wherever they appear in what
            is saved (the recording's API key, in case a provider echoes it).
    """
    recorder = vcr.VCR(
        serializer=_SERIALIZER,
        record_mode="all" if record else "none",
        match_on=MATCH_ON,
        decode_compressed_response=True,
        before_record_request=_request_filter(endpoint_alias),
        before_record_response=_keep_response_headers,
        filter_sensitive_data=[("<redacted-api-key>", secret) for secret in secrets if secret],
        record_on_exception=False,
    )
    recorder.register_serializer(_SERIALIZER, _serializer)
    recorder.register_matcher("json_body", json_body_matcher)
    return recorder


def open_cassette(
    path: Path,
    *,
    record: bool = False,
    endpoint_alias: str | None = None,
    secrets: Sequence[str] = (),
) -> AbstractContextManager[Cassette]:
    """`make_vcr(...).use_cassette(path)` with playback repeats off.

    Each recorded interaction answers one request, once; `Cassette.play_counts`
    then tells which were never played.
    """
    recorder = make_vcr(record=record, endpoint_alias=endpoint_alias, secrets=secrets)
    context: AbstractContextManager[Cassette] = recorder.use_cassette(
        str(path), allow_playback_repeats=False
    )
    return context
