"""Replaying scenarios: the one entry point the CLI and the tests go through.

For each scenario x provider: read its cassette (where it came from, which
model, the requests it holds) and scan it for keys; then, on one gateway
shared by the whole run, replay the conversation with vcrpy serving the
provider's responses and nav-sim running the tools; then check, in this
order, that every request the replay sent is the cassette's request at that
position (else the changed request is the reason), that the expectations
hold, and that every recorded interaction was played.

Replays run one after another: vcrpy patches the HTTP transport for the
whole process, so only one cassette can be in use at a time.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from navagent.cli.scenarios._cassette import (
    CassetteError,
    LoadedCassette,
    cassette_path,
    load_cassette,
    open_cassette,
)
from navagent.cli.scenarios._cluster import ClusterError, SimulatedCluster
from navagent.cli.scenarios._conversation import run_conversation
from navagent.cli.scenarios._expect import check_transcript
from navagent.cli.scenarios._keyscan import scan_file
from navagent.cli.scenarios._matching import compare_requests
from navagent.cli.scenarios._model import Provider, Scenario
from navagent.cli.scenarios._stack import ProviderRoute, ProviderStack
from navagent.cli.scenarios._transcript import Transcript

__all__ = [
    "REPLAY_API_KEY",
    "ReplayJob",
    "ReplayResult",
    "default_cassette_dir",
    "plan_replays",
    "replay_all",
    "replay_scenario",
]

REPLAY_API_KEY = "replay-no-key"
"""The route key during a replay; vcrpy answers before anything leaves the process."""


def default_cassette_dir(scenario: Scenario) -> Path:
    """`cassettes/` beside the scenario's folder (`scenarios/x.yaml` -> `cassettes/`)."""
    return Path(scenario.source).resolve().parent.parent / "cassettes"


@dataclass(frozen=True)
class ReplayJob:
    """One scenario to replay against one provider's cassette."""

    scenario: Scenario
    provider: Provider
    cassette: Path

    @property
    def label(self) -> str:
        """`<scenario-id>[<provider>]`, as in test ids."""
        return f"{self.scenario.id}[{self.provider}]"


@dataclass(frozen=True)
class ReplayResult:
    """How one replay went."""

    job: ReplayJob
    problems: tuple[str, ...]
    """Every failure, most fundamental first; empty when the replay passed."""
    duration_s: float
    transcript: Transcript | None = None
    """None when the replay could not start (no cassette, a key in it, ...)."""
    details: str = field(default="", repr=False)
    """More about the first problem (the full request diff), for `--verbose`."""

    @property
    def passed(self) -> bool:
        """True when nothing went wrong."""
        return not self.problems

    @property
    def reason(self) -> str:
        """The first problem, or the empty string."""
        return self.problems[0] if self.problems else ""


def plan_replays(
    scenarios: Sequence[Scenario],
    providers: Sequence[Provider],
    *,
    cassette_dir: Path | None = None,
) -> list[ReplayJob]:
    """Every scenario x provider, with its cassette path.

    Args:
        scenarios: What to replay, in order.
        providers: For each scenario, in this order.
        cassette_dir: Overrides `default_cassette_dir` for every scenario.
    """
    return [
        ReplayJob(
            scenario=scenario,
            provider=provider,
            cassette=cassette_path(
                cassette_dir or default_cassette_dir(scenario), provider, scenario.id
            ),
        )
        for scenario in scenarios
        for provider in providers
    ]


def _prepare(job: ReplayJob) -> LoadedCassette | ReplayResult:
    """Read the cassette and scan it for keys; a result when the replay cannot run."""
    try:
        loaded = load_cassette(job.cassette)
    except CassetteError as exc:
        hint = ""
        if not job.cassette.exists():
            command = f"nav scenario record {job.scenario.id} --provider {job.provider} --sim"
            hint = f" (record it: {command})"
        return ReplayResult(job, (f"{exc}{hint}",), 0.0)
    findings = scan_file(job.cassette)
    if findings:
        return ReplayResult(job, tuple(str(finding) for finding in findings), 0.0)
    if loaded.source.provider != job.provider:
        return ReplayResult(
            job,
            (f"{job.cassette} was recorded for {loaded.source.provider}, not {job.provider}",),
            0.0,
        )
    return loaded


def _route(loaded: LoadedCassette) -> ProviderRoute:
    source = loaded.source
    return ProviderRoute(source.provider, source.endpoint, source.model, REPLAY_API_KEY)


async def _replay(
    job: ReplayJob, loaded: LoadedCassette, *, stack: ProviderStack, cluster: SimulatedCluster
) -> ReplayResult:
    started = time.perf_counter()
    stack.requests.clear()
    with tempfile.TemporaryDirectory(prefix="nav-scenario-") as folder:
        workdir = Path(folder)
        try:
            run = cluster.prepare(job.scenario.cluster, workdir)
        except ClusterError as exc:
            return ReplayResult(job, (f"{job.scenario.source}: {exc}",), 0.0)
        try:
            with open_cassette(job.cassette) as cassette:
                transcript = await run_conversation(
                    job.scenario,
                    job.provider,
                    client=stack.client,
                    routing_hint=stack.hint_for(_route(loaded)),
                    cluster=run,
                    workdir=workdir,
                )
        except Exception as exc:  # one broken replay must not end the whole run
            elapsed = time.perf_counter() - started
            return ReplayResult(job, (f"the replay crashed: {type(exc).__name__}: {exc}",), elapsed)
    problems: list[str] = []
    details = ""
    mismatch = compare_requests(loaded.requests, stack.requests.requests)
    if mismatch is not None:
        problems.append(mismatch.summary)
        details = mismatch.details
    problems += check_transcript(job.scenario, transcript, job.provider)
    if not cassette.all_played:
        unplayed = [index for index in range(len(cassette)) if cassette.play_counts[index] == 0]
        listed = ", ".join(
            f"#{index + 1} {loaded.requests[index].method} {loaded.requests[index].path}"
            for index in unplayed[:5]
        )
        problems.append(
            f"{len(unplayed)} of {len(cassette)} recorded interactions were never played: {listed}"
        )
    return ReplayResult(
        job,
        tuple(problems),
        time.perf_counter() - started,
        transcript=transcript,
        details=details,
    )


async def replay_all(
    jobs: Sequence[ReplayJob],
    *,
    on_result: Callable[[ReplayResult], None] | None = None,
    cluster: SimulatedCluster | None = None,
) -> list[ReplayResult]:
    """Replay every job, one after another, on one shared gateway.

    Args:
        jobs: From `plan_replays`.
        on_result: Called with each result as soon as it is known (the CLI
            prints it).
        cluster: Prepares nav-sim state; one is made (seeding once) if not given.

    Returns:
        One result per job, in job order.
    """
    prepared = [_prepare(job) for job in jobs]
    routes = [_route(item) for item in prepared if isinstance(item, LoadedCassette)]
    results: list[ReplayResult] = []

    def report(result: ReplayResult) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    if not routes:
        for item in prepared:
            assert isinstance(item, ReplayResult)
            report(item)
        return results
    cluster = cluster or SimulatedCluster()
    async with ProviderStack(routes) as stack:
        for job, item in zip(jobs, prepared, strict=True):
            if isinstance(item, ReplayResult):
                report(item)
            else:
                report(await _replay(job, item, stack=stack, cluster=cluster))
    return results


async def replay_scenario(
    scenario: Scenario,
    provider: Provider,
    *,
    cassette_dir: Path | None = None,
    cluster: SimulatedCluster | None = None,
) -> ReplayResult:
    """Replay one scenario against one provider's cassette (`replay_all` of one job)."""
    (result,) = await replay_all(
        plan_replays([scenario], [provider], cassette_dir=cassette_dir), cluster=cluster
    )
    return result
