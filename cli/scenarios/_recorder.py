"""Recording a scenario's cassette, from the simulated provider or a real API.

The two ways differ only in the route: a simulated recording starts
`SimulatedProvider` in-process (fixed clock, a placeholder key, its URIs
stored under `SIMULATED_ENDPOINT`), a real one points the route at the
provider's endpoint with the key from `OPENAI_API_KEY` or
`ANTHROPIC_API_KEY`. Everything else is the replay's machinery with vcrpy in
record mode `all`: the same gateway, agent loop, nav-sim and expectations.

The cassette is written next to its final place and only moved there when
the expectations hold (or `force`) and a scan of the written file finds no
credential and not the key itself, so a failed recording never replaces a
good cassette and a leaked key never lands in the tree. Recording never
runs in CI: a real recording refuses when `CI` is set.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from navagent.cli.scenarios._cassette import (
    SIMULATED_ENDPOINT,
    CassetteSource,
    cassette_path,
    open_cassette,
)
from navagent.cli.scenarios._cluster import SCENARIO_CLOCK, ClusterError, SimulatedCluster
from navagent.cli.scenarios._conversation import run_conversation
from navagent.cli.scenarios._expect import check_transcript
from navagent.cli.scenarios._keyscan import scan_file
from navagent.cli.scenarios._model import Provider, Scenario
from navagent.cli.scenarios._stack import ProviderRoute, ProviderStack
from navagent.cli.scenarios._transcript import Transcript
from navagent.core.errors import NavAgentError
from navagent.fixtures.provider import SimulatedProvider
from navagent.gateway.routes import RoutesError

__all__ = [
    "DEFAULT_ENDPOINTS",
    "KEY_ENV",
    "SIM_API_KEY",
    "RecordError",
    "RecordResult",
    "RecordTarget",
    "real_target",
    "record_scenario",
    "simulated_target",
]

DEFAULT_ENDPOINTS: dict[Provider, str] = {
    "openai": "https://api.openai.com",
    "openai-responses": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
}
KEY_ENV: dict[Provider, str] = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
SIM_API_KEY = "sim-placeholder-key"
"""The simulated provider accepts any key; this one is not a secret."""
_SIM_FAULT = re.compile(r"\[sim-fault:", re.IGNORECASE)


class RecordError(NavAgentError):
    """A recording cannot start or its result cannot be kept."""


@dataclass(frozen=True)
class RecordTarget:
    """Where a recording's requests go."""

    kind: Literal["simulated", "real"]
    endpoint: str | None = None
    """A real API's base URL; None for the simulated provider."""
    model: str | None = None
    """Overrides the scenario's model for the provider."""
    api_key: str = field(default="", repr=False)


def simulated_target(*, model: str | None = None) -> RecordTarget:
    """Record from the in-process simulated provider (`nav scenario record --sim`)."""
    return RecordTarget(kind="simulated", model=model, api_key=SIM_API_KEY)


def real_target(
    provider: Provider,
    *,
    endpoint: str | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> RecordTarget:
    """Record from a real API, with the key from the provider's environment variable.

    Raises:
        RecordError: `CI` is set (recording never runs in CI), or the key
            variable is unset or empty.
    """
    env = os.environ if environ is None else environ
    if env.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        raise RecordError(
            "refusing to record against a real provider in CI (CI is set): cassettes are"
            " recorded by a developer, and CI only replays them"
        )
    variable = KEY_ENV[provider]
    key = env.get(variable, "").strip()
    if not key:
        raise RecordError(
            f"{variable} is not set: recording against the real {provider} API needs a key"
            f" in {variable} (or record from the simulated provider with --sim)"
        )
    return RecordTarget(
        kind="real", endpoint=endpoint or DEFAULT_ENDPOINTS[provider], model=model, api_key=key
    )


@dataclass(frozen=True)
class RecordResult:
    """How a recording went."""

    scenario: str
    provider: Provider
    path: Path
    written: bool
    """True when the cassette at `path` was replaced."""
    problems: tuple[str, ...]
    """Unmet expectations; a cassette with problems is written only with `force`."""
    duration_s: float
    transcript: Transcript


def _clock_seconds(clock: str) -> int:
    return int(datetime.fromisoformat(clock.replace("Z", "+00:00")).timestamp())


def _source(
    scenario: Scenario, provider: Provider, target: RecordTarget, model: str, today: str
) -> CassetteSource:
    if target.kind == "simulated":
        return CassetteSource(
            kind="simulated",
            note=(
                "Recorded from nav-agent's simulated provider (navagent.fixtures.provider),"
                " NOT from a real API. The date is the simulator's fixed clock."
            ),
            provider=provider,
            endpoint=SIMULATED_ENDPOINT,
            model=model,
            recorded=SCENARIO_CLOCK[:10],
            scenario=scenario.id,
        )
    assert target.endpoint is not None
    return CassetteSource(
        kind="real",
        note=f"Recorded from the real API at {target.endpoint} with model {model} on {today}.",
        provider=provider,
        endpoint=target.endpoint,
        model=model,
        recorded=today,
        scenario=scenario.id,
    )


@contextlib.contextmanager
def _upstream(target: RecordTarget) -> Iterator[str]:
    """The endpoint to route to: a running simulated provider, or the real one."""
    if target.kind == "real":
        assert target.endpoint is not None
        yield target.endpoint
        return
    with SimulatedProvider(clock=lambda: _clock_seconds(SCENARIO_CLOCK)) as sim:
        yield sim.base_url


async def record_scenario(
    scenario: Scenario,
    provider: Provider,
    *,
    cassette_dir: Path,
    target: RecordTarget,
    force: bool = False,
    cluster: SimulatedCluster | None = None,
) -> RecordResult:
    """Run `scenario` against `target` and write its cassette for `provider`.

    Raises:
        RecordError: the scenario uses simulator fault markers but the target
            is real, the route is invalid, the cluster cannot be prepared, or
            the written cassette contains something that looks like a key
            (it is deleted then).
    """
    if target.kind == "real" and any(_SIM_FAULT.search(turn.user) for turn in scenario.turns):
        raise RecordError(
            f"{scenario.id} relies on simulator fault markers ([sim-fault: ...]), which a real"
            " provider ignores; record it with --sim"
        )
    model = target.model or scenario.model_for(provider)
    today = datetime.now(UTC).date().isoformat()
    source = _source(scenario, provider, target, model, today)
    final = cassette_path(cassette_dir, provider, scenario.id)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_name(f".{final.name}.recording")
    partial.unlink(missing_ok=True)
    cluster = cluster or SimulatedCluster()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nav-scenario-record-") as folder:
        workdir = Path(folder)
        try:
            run = cluster.prepare(scenario.cluster, workdir)
        except ClusterError as exc:
            raise RecordError(f"{scenario.source}: {exc}") from None
        with _upstream(target) as endpoint:
            try:
                route = ProviderRoute(provider, endpoint, model, target.api_key)
                stack = ProviderStack([route])
            except RoutesError as exc:
                raise RecordError(f"invalid --endpoint or --model: {exc}") from None
            recording = open_cassette(
                partial,
                record=True,
                endpoint_alias=SIMULATED_ENDPOINT if target.kind == "simulated" else None,
                secrets=[target.api_key],
            )
            async with stack:
                with recording as cassette:
                    cassette.get_metadata("source", source.model_dump())
                    transcript = await run_conversation(
                        scenario,
                        provider,
                        client=stack.client,
                        routing_hint=stack.hint_for(route),
                        cluster=run,
                        workdir=workdir,
                    )
    duration = time.perf_counter() - started
    findings = scan_file(partial, secrets=[target.api_key]) if partial.exists() else []
    if findings:
        partial.unlink()
        raise RecordError(
            "the recording was discarded: it contains what looks like a key:\n"
            + "\n".join(f"  {finding}" for finding in findings)
        )
    problems = tuple(check_transcript(scenario, transcript, provider))
    written = partial.exists() and (force or not problems)
    if written:
        os.replace(partial, final)
    else:
        partial.unlink(missing_ok=True)
    return RecordResult(scenario.id, provider, final, written, problems, duration, transcript)
