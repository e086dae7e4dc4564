"""Prometheus metrics for `--metrics-listen HOST:PORT`, summed over worker processes.

The gateway counts what its per-stream log line already says: each stream's
facts (`_StreamLog` in `navagent.gateway.service`) are recorded twice, when
the stream is admitted and when its one outcome is known, never from the hot
path of a delta. With several workers, prometheus-client's multiprocess mode
keeps each worker's values in files under a directory the supervisor creates
(`PROMETHEUS_MULTIPROC_DIR`, set before any worker starts) and the
supervisor serves their sum; a single-process gateway serves its own values.

Label values are bounded: a route is a name from the routes file, a routing
hint is a label only if some route has it (otherwise "other"), an outcome is
one of a fixed set, and a status is an HTTP status or an error code.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    multiprocess,
    start_http_server,
)
from prometheus_client.metrics import MetricWrapperBase

__all__ = [
    "MULTIPROC_ENV",
    "StreamFacts",
    "enable",
    "mark_process_dead",
    "multiprocess_directory",
    "record_admitted",
    "record_finished",
    "record_refused",
    "remove_directory",
    "serve_http",
]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_PREFIX = "nav_gateway_"
REFUSALS = frozenset(
    {
        "unauthenticated",
        "permission_denied",
        "invalid_argument",
        "no_route",
        "caller_limit",
        "gateway_limit",
    }
)
"""Why a call is refused before it becomes a stream: each refusal is counted
once in `streams_rejected_total{reason}` and never as a started stream."""

_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0)

STREAMS_STARTED = Counter(
    _PREFIX + "streams_started", "Streams admitted, by routing hint.", ["hint"]
)
STREAMS_FINISHED = Counter(
    _PREFIX + "streams_finished",
    "Streams ended, by the route and protocol that served them and their one outcome.",
    ["hint", "route", "protocol", "outcome"],
)
STREAMS_REJECTED = Counter(
    _PREFIX + "streams_rejected", "Calls refused before streaming, by reason.", ["reason"]
)
ACTIVE_STREAMS = Gauge(
    _PREFIX + "active_streams", "Streams in flight now.", multiprocess_mode="livesum"
)
TIME_TO_FIRST_DELTA = Histogram(
    _PREFIX + "time_to_first_delta_seconds",
    "From a call's arrival to its first content sent to the client.",
    ["route"],
    buckets=_LATENCY_BUCKETS,
)
STREAM_DURATION = Histogram(
    _PREFIX + "stream_duration_seconds",
    "From a call's arrival to its end.",
    ["route"],
    buckets=_DURATION_BUCKETS,
)
TOKENS = Counter(
    _PREFIX + "tokens",
    "Tokens reported by providers, by route and kind (input, output, cache_read).",
    ["route", "kind"],
)
UPSTREAM_ATTEMPTS = Counter(
    _PREFIX + "upstream_attempts",
    "Requests sent to providers, by route and result (HTTP status or error code).",
    ["route", "status"],
)
UPSTREAM_RETRIES = Counter(
    _PREFIX + "upstream_retries",
    "Retries of the same route, by route and the status that caused them.",
    ["route", "status"],
)
UPSTREAM_FAILOVERS = Counter(
    _PREFIX + "upstream_failovers",
    "Moves to the next route, by the route given up and the status that caused it.",
    ["route", "status"],
)

_enabled = False
_M = TypeVar("_M", bound=MetricWrapperBase)


@dataclass(frozen=True)
class StreamFacts:
    """One call's facts as its log line has them, for `record_finished`."""

    hint_label: str
    route: str
    protocol: str
    outcome: str
    duration_s: float
    time_to_first_delta_s: float | None
    tokens: list[tuple[str, int]]
    """(kind, count) with kind "input", "output" or "cache_read"."""
    upstream: list[tuple[str, str, str]]
    """(kind, route, status) with kind "attempt", "retry" or "failover"."""


@functools.cache
def _child(metric: _M, *labels: str) -> _M:
    """`metric.labels(*labels)`, looked up once per label set.

    prometheus-client's `labels` validates and locks on every call (about
    1.5 us each, seven per stream); the children never change, and the label
    sets are bounded (the module docstring), so neither is this cache.
    """
    return metric.labels(*labels)


def enable() -> None:
    """Start recording (off by default, so a gateway without metrics pays nothing)."""
    global _enabled
    _enabled = True


def enabled() -> bool:
    """Whether streams are being recorded."""
    return _enabled


def record_admitted(hint_label: str) -> None:
    """A stream was admitted."""
    if _enabled:
        _child(STREAMS_STARTED, hint_label).inc()
        ACTIVE_STREAMS.inc()


def record_refused(reason: str) -> None:
    """A call was refused before streaming, for `reason` (one of `REFUSALS`)."""
    if _enabled:
        _child(STREAMS_REJECTED, reason if reason in REFUSALS else "other").inc()


def record_finished(facts: StreamFacts, *, admitted: bool) -> None:
    """A call ended with its one outcome (admitted or not)."""
    if not _enabled:
        return
    outcome = facts.outcome
    if not admitted:
        record_refused(outcome)
        return
    ACTIVE_STREAMS.dec()
    route = facts.route
    _child(STREAMS_FINISHED, facts.hint_label, route, facts.protocol, outcome).inc()
    _child(STREAM_DURATION, route).observe(facts.duration_s)
    if facts.time_to_first_delta_s is not None:
        _child(TIME_TO_FIRST_DELTA, route).observe(facts.time_to_first_delta_s)
    for kind, count in facts.tokens:
        if count:
            _child(TOKENS, route, kind).inc(count)
    counters = {"attempt": UPSTREAM_ATTEMPTS, "retry": UPSTREAM_RETRIES}
    for kind, attempt_route, status in facts.upstream:
        _child(counters.get(kind, UPSTREAM_FAILOVERS), attempt_route, status).inc()


def multiprocess_directory(parent: Path | None = None) -> Path:
    """A fresh directory for the workers' values; set as `PROMETHEUS_MULTIPROC_DIR`.

    The supervisor calls this before starting any worker: prometheus-client
    picks its value store when a worker first imports it. `parent` is the
    gateway's state folder, removed by a later gateway if this one dies.
    """
    directory = Path(tempfile.mkdtemp(prefix="nav-gateway-metrics-", dir=parent))
    os.environ[MULTIPROC_ENV] = str(directory)
    return directory


def remove_directory(directory: Path) -> None:
    """Delete the workers' value files once they are all gone."""
    shutil.rmtree(directory, ignore_errors=True)
    if os.environ.get(MULTIPROC_ENV) == str(directory):
        del os.environ[MULTIPROC_ENV]


def mark_process_dead(pid: int, directory: Path | None) -> None:
    """Drop a dead worker's live gauge values (its counters stay in the sums)."""
    if directory is not None:
        multiprocess.mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]


def serve_http(listen: str, directory: Path | None = None) -> None:
    """Serve `/metrics` on `listen` from a background thread.

    With `directory`, the values are the sum over every worker's files;
    without, this process's own.

    Raises:
        RuntimeError: the address cannot be bound.
    """
    host, _, port = listen.rpartition(":")
    registry = None
    if directory is not None:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    try:
        if registry is None:
            start_http_server(int(port), addr=host.strip("[]"))
        else:
            start_http_server(int(port), addr=host.strip("[]"), registry=registry)
    except OSError as exc:
        raise RuntimeError(f"cannot serve metrics on {listen}: {exc.strerror or exc}") from None
