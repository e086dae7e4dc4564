"""`nav scenario list|replay|coverage|record|mv|sweep`: the replay harness on the command line.

Wiring only: the work is in `navagent.fixtures.harness`, imported inside each
command so `nav --help` stays fast. Exit status: 0 all good, 1 a replay or
recording failed, 2 the scenarios or options are unusable.
"""

from __future__ import annotations

import asyncio
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from navagent.core.ci import CI_RULE
from navagent.core.visible import visible
from navagent.core.wire_formats import FORMAT_IDS, WIRE_FORMATS, WireFormatId

if TYPE_CHECKING:
    from navagent.core.agent_config import AgentConfig
    from navagent.fixtures.harness import (
        ProjectSettings,
        RecordFilters,
        ReplayJob,
        ReplayResult,
        Scenario,
    )
    from navagent.fixtures.harness.faults._invariants import Invariant

__all__ = ["FORMAT_CHOICES", "formats_chosen", "scenario_app"]

scenario_app = typer.Typer(
    help="Replay and record scenario conversations (see scenarios/README.md).",
    no_args_is_help=True,
    epilog=(
        "Examples:\n\n"
        "  nav scenario list\n\n"
        "  nav scenario replay                      # every scenario x every format\n\n"
        "  nav scenario replay scenarios/providers.yaml --provider openai -v\n\n"
        "  nav scenario coverage                    # what the scenarios exercise, per format\n\n"
        "  nav scenario record providers diagnose-failing --provider all --sim\n\n"
        "  nav scenario record --missing --sim      # every cassette that does not exist"
    ),
)


_BOTH = ("openai", "anthropic")
"""`--provider both`: kept from before the third format, so old scripts still run;
new formats join `all`, never this pair."""
FORMAT_CHOICES: tuple[str, ...] = (*FORMAT_IDS, "both", "all")
"""`--provider` values: every registered wire format, `both` and `all`."""

if TYPE_CHECKING:
    FormatChoice = str
    FormatChoices = str
else:  # typer offers FORMAT_CHOICES
    FormatChoice = Literal[FORMAT_CHOICES]
    # A repeatable option: typer takes a list of enum members, not of Literal values.
    FormatChoices = StrEnum("FormatChoices", {name: name for name in FORMAT_CHOICES})


def formats_chosen(choice: str) -> tuple[WireFormatId, ...]:
    """The wire formats a `--provider` value stands for, in registry order."""
    if choice == "all":
        return FORMAT_IDS
    if choice == "both":
        return _BOTH
    return (WIRE_FORMATS[choice].id,)


PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Scenario files, folders, or ids of scenarios in the project's folders.",
        show_default="nav_scenarios in ./pyproject.toml, else ./scenarios",
    ),
]
CassettesOption = Annotated[
    Path | None,
    typer.Option(
        "--cassettes",
        help="Cassette folder.",
        show_default="nav_cassettes in ./pyproject.toml, else cassettes/ beside each"
        " scenario's folder",
    ),
]


def _echo(text: str, *, err: bool = False) -> None:
    """Print one report line: scenario and cassette text is untrusted, so shown visibly."""
    typer.echo(visible(text), err=err)


def _fail(message: str, code: int = 2) -> typer.Exit:
    _echo(message, err=True)
    return typer.Exit(code)


def _project_folders() -> tuple[Path, ...]:
    """The project's scenario folders (`nav_scenarios` in ./pyproject.toml, else `scenarios/`)."""
    from navagent.fixtures.harness import FilterError, project_scenario_folders

    try:
        return project_scenario_folders(Path.cwd())
    except FilterError as exc:
        raise _fail(f"pyproject.toml: {exc}") from None


def _load(paths: list[Path] | None) -> list[Scenario]:
    """Scenario files, folders or ids; default: the project's scenario folders."""
    return _find_scenarios([str(path) for path in paths or _project_folders()])


def _cassette_dir(scenario: Scenario, override: Path | None) -> Path:
    """Where a scenario's cassettes are.

    `--cassettes`, else `nav_cassettes` of ./pyproject.toml (for a scenario in
    one of its `nav_scenarios` folders), else `cassettes/` beside the
    scenario's folder.
    """
    from navagent.fixtures.harness import FilterError, default_cassette_dir, project_settings

    if override is not None:
        return override
    try:
        configured = project_settings(Path.cwd()).cassette_dir(Path(scenario.source))
    except FilterError as exc:
        raise _fail(f"pyproject.toml: {exc}") from None
    return configured if configured is not None else default_cassette_dir(scenario)


@scenario_app.command("list")
def list_scenarios(paths: PathsArgument = None, cassettes: CassettesOption = None) -> None:
    """Show each scenario's id, turns, cassettes and description."""
    from navagent.fixtures.harness import cassette_path

    scenarios = _load(paths)
    width = max(len(scenario.id) for scenario in scenarios)
    column = len(" ".join(FORMAT_IDS))  # every format's cassette, as wide as the registry
    for scenario in scenarios:
        folder = _cassette_dir(scenario, cassettes)
        wanted = [p for p in FORMAT_IDS if p in scenario.formats]  # its `formats:` only
        have = [p for p in wanted if cassette_path(folder, p, scenario.id).is_file()]
        missing = [p for p in wanted if p not in have]
        recorded = " ".join(have) if not missing else f"missing: {' '.join(missing)}"
        turns = f"{len(scenario.turns)} turn{'s' if len(scenario.turns) != 1 else ''}"
        _echo(f"{scenario.id:<{width}}  {turns:<8}  {recorded:<{column}}  {scenario.summary}")
    _echo(f"{len(scenarios)} scenario{'' if len(scenarios) == 1 else 's'}")


def _result_line(result: ReplayResult) -> str:
    status = "PASS" if result.passed else "FAIL"
    line = f"{status}  {result.job.label:<51} {result.duration_s:5.2f}s"
    return line if result.passed else f"{line}  {result.reason}"


def _planned(
    paths: list[Path] | None, provider: FormatChoice, cassettes: Path | None, *, command: str
) -> tuple[ProjectSettings, list[ReplayJob], dict[str, Invariant]]:
    """The replays `nav scenario replay` and `coverage` run, with what they run under.

    The project's settings, the chosen formats' replays, and a team's own
    invariants (checked in every replay).
    """
    from navagent.fixtures.harness import FilterError, plan_replays, project_settings
    from navagent.fixtures.harness.faults._team import team_invariants, team_settings

    scenarios = _load(paths)
    try:
        settings = project_settings(Path.cwd())
    except FilterError as exc:
        raise _fail(f"pyproject.toml: {exc}") from None
    try:
        team = team_settings(Path.cwd())
        invariants = team_invariants(team.invariants, team.import_paths)
    except ValueError as exc:
        raise _fail(f"nav scenario {command}: {exc}") from None
    jobs = [
        job
        for scenario in scenarios
        for job in plan_replays(
            [scenario], formats_chosen(provider), cassette_dir=_cassette_dir(scenario, cassettes)
        )
    ]
    return settings, jobs, invariants


@scenario_app.command("replay")
def replay(
    paths: PathsArgument = None,
    provider: Annotated[
        FormatChoice,
        typer.Option(
            help="Replay the cassettes of this wire format; all: every format, both: openai"
            " and anthropic."
        ),
    ] = "all",
    cassettes: CassettesOption = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Show the request diff of a failure, the transcript of a pass."
        ),
    ] = False,
) -> None:
    """Replay scenarios against their cassettes; exit 1 if any replay fails.

    Each scenario runs through the real agent loop and gateway, in process,
    with the provider's responses played from the cassette and nav-sim as the
    cluster. No network, no keys.
    """
    from navagent.fixtures.harness import ClusterError, render_transcript, replay_all

    settings, jobs, invariants = _planned(paths, provider, cassettes, command="replay")
    match = settings.match

    def show(result: ReplayResult) -> None:
        _echo(_result_line(result))
        if not result.passed:
            _echo("\n".join(f"      {line}" for line in result.report.splitlines()))
            if verbose and result.details:
                _echo("\n".join(f"      {line}" for line in result.details.splitlines()[1:]))
        elif verbose and result.transcript is not None:
            _echo(
                "\n".join(
                    f"      {line}" for line in render_transcript(result.transcript).splitlines()
                )
            )

    started = time.perf_counter()
    try:
        results = asyncio.run(replay_all(jobs, on_result=show, match=match, invariants=invariants))
    except ClusterError as exc:
        raise _fail(f"nav scenario replay: {exc}") from None
    failed = sum(not result.passed for result in results)
    elapsed = time.perf_counter() - started
    if failed:
        _echo_record_commands(results, snapshots=settings.snapshots)
    _echo(f"{len(results) - failed} passed, {failed} failed in {elapsed:.1f}s")
    if failed:
        raise typer.Exit(1)


def _echo_record_commands(results: list[ReplayResult], *, snapshots: bool) -> None:
    """Once, after the blocks: the one command per scenario that records all it failed on."""
    from navagent.fixtures.harness.replay._report import record_commands

    lines = record_commands(
        [result.failure.rerecord for result in results if result.failure is not None],
        snapshots=snapshots,
    )
    if lines:
        _echo("to record again what failed (review the diff before you commit it):")
        _echo("\n".join(f"  {line}" for line in lines))


@scenario_app.command("coverage")
def coverage(
    paths: PathsArgument = None,
    provider: Annotated[
        FormatChoice,
        typer.Option(help="The wire formats to look at; all: every format."),
    ] = "all",
    cassettes: CassettesOption = None,
) -> None:
    """Show what the scenarios exercise per format, and what none does; exit 1 on a gap.

    Per wire format: its registry features, every tool and every tool option,
    each with the scenarios that exercise it. Every scenario is replayed (as
    `nav scenario replay`) and only passing replays count; a failed replay
    also exits 1.
    """
    from navagent.fixtures.harness import ClusterError, replay_all
    from navagent.fixtures.harness.replay._coverage import Coverage

    settings, jobs, invariants = _planned(paths, provider, cassettes, command="coverage")
    try:
        results = asyncio.run(replay_all(jobs, match=settings.match, invariants=invariants))
    except ClusterError as exc:
        raise _fail(f"nav scenario coverage: {exc}") from None
    seen = Coverage()
    for job in jobs:
        seen.add_format(job.provider)
    for result in results:
        if result.passed and result.transcript is not None:
            seen.add(result.job.provider, result.transcript, result.job.cassette)
    for line in seen.render():
        _echo(line)
    failed = [result for result in results if not result.passed]
    for result in failed:
        _echo(f"not counted (the replay failed): {result.job.label}: {result.reason}")
    _echo(seen.summary(hint=False).removeprefix("nav scenarios coverage: "))
    if failed or seen.gaps():
        raise typer.Exit(1)


def _find_scenarios(names: list[str]) -> list[Scenario]:
    """Scenario ids (in the project's folders), files or folders, every problem reported at once."""
    from navagent.fixtures.harness import ScenarioError, discover_scenarios
    from navagent.fixtures.harness.scenarios._agent_config import with_agent_config
    from navagent.fixtures.harness.scenarios._loader import scenario_files_for

    folders = _project_folders()
    paths: list[Path] = []
    for name in names:
        path = Path(name)
        if not path.exists() and not path.suffix:
            by_id = (found for folder in folders for found in scenario_files_for(folder, name))
            path = next(by_id, path)
        paths.append(path)
    try:
        found = discover_scenarios(paths)
    except ScenarioError as exc:
        raise _fail(str(exc)) from None
    return [with_agent_config(scenario, _project_agent()) for scenario in found]


def _project_agent() -> AgentConfig:
    """`nav_system_prompt` and `nav_tool_descriptions` of ./pyproject.toml, as `nav agent` sends."""
    from navagent.fixtures.harness import FilterError, project_settings

    try:
        return project_settings(Path.cwd()).agent
    except FilterError as exc:
        raise _fail(f"pyproject.toml: {exc}") from None


def _project_filters() -> RecordFilters:
    """The `nav_filter_*` keys of ./pyproject.toml, as the pytest plugin reads them."""
    from navagent.fixtures.harness import FilterError, project_settings

    try:
        return project_settings(Path.cwd()).filters
    except FilterError as exc:
        raise _fail(f"pyproject.toml: {exc}") from None


class RecordModeChoice(StrEnum):
    """What becomes of an existing cassette (pytest-recording's record modes)."""

    once = "once"
    new_episodes = "new_episodes"
    all = "all"
    rewrite = "rewrite"


def _record_help() -> str:
    return (
        "Record cassettes from a real provider, or with --sim from the simulator.\n\n"
        "A real recording reads the wire format's key variable (OPENAI_API_KEY,"
        " ANTHROPIC_API_KEY, ...). Auth headers are dropped, the nav_filter_* settings of"
        " ./pyproject.toml are applied before anything is written, and the written file is"
        f" checked for anything that looks like a key.\n\n{CI_RULE}"
    )


@scenario_app.command("record", help=_record_help())
def record(
    scenarios: Annotated[
        list[str] | None,
        typer.Argument(
            help="Scenario ids (in the project's scenario folders), files or folders.",
            show_default="every scenario in nav_scenarios (else ./scenarios), with --missing",
        ),
    ] = None,
    provider: Annotated[
        list[FormatChoices] | None,
        typer.Option(
            help="Whose wire format to record, repeatable (all: every format, both: openai"
            " and anthropic, one after the other).",
            show_default="all",
        ),
    ] = None,
    sim: Annotated[
        bool,
        typer.Option("--sim", help="Record from the in-process simulated provider (no key)."),
    ] = False,
    endpoint: Annotated[
        str | None,
        typer.Option(help="Real API base URL.", show_default="the provider's public API"),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Model to record with.", show_default="the scenario's"),
    ] = None,
    cassettes: CassettesOption = None,
    record_mode: Annotated[
        RecordModeChoice | None,
        typer.Option(
            "--record-mode",
            help="once: only missing cassettes; new_episodes: add new requests to the"
            " cassette; all: record every request again, keeping the others; rewrite:"
            " record from scratch.",
            show_default="rewrite",
        ),
    ] = None,
    missing: Annotated[
        bool,
        typer.Option(
            "--missing", help="Record only cassettes that do not exist (--record-mode once)."
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option(help="Write the cassette even if expectations fail.")
    ] = False,
) -> None:
    """Record cassettes (the help text is `_record_help`: it quotes `CI_RULE`)."""
    from navagent.fixtures.harness import (
        RecordError,
        RecordTarget,
        cassette_path,
        needs_recording,
        real_target,
        record_scenario,
        simulated_target,
    )

    if missing and record_mode not in (None, RecordModeChoice.once):
        raise _fail("--missing is --record-mode once; it cannot be combined with another mode")
    mode = "once" if missing else (record_mode or RecordModeChoice.rewrite).value
    if not scenarios and not missing:
        raise _fail("name the scenarios to record, or use --missing to record every missing one")
    loaded = _find_scenarios(scenarios or [str(folder) for folder in _project_folders()])
    chosen = tuple(
        name
        for name in FORMAT_IDS
        if any(name in formats_chosen(choice) for choice in provider or ["all"])
    )
    if sim and endpoint is not None:
        raise _fail("--endpoint names a real API; it cannot be combined with --sim")
    if not sim and len(chosen) > 1 and (endpoint or model):
        raise _fail("--endpoint and --model apply to one provider; choose --provider")
    filters = _project_filters()
    plan = [
        (scenario, name)
        for scenario in loaded
        for name in chosen
        if name in scenario.formats
        and needs_recording(
            mode,  # type: ignore[arg-type]  # RecordModeChoice values are RecordModes
            cassette_path(_cassette_dir(scenario, cassettes), name, scenario.id),
        )
    ]
    try:  # every key is checked before anything is recorded
        targets: dict[WireFormatId, RecordTarget] = {
            name: simulated_target(model=model)
            if sim
            else real_target(name, endpoint=endpoint, model=model)
            for name in dict.fromkeys(name for _, name in plan)
        }
    except RecordError as exc:
        raise _fail(f"nav scenario record: {exc}") from None
    failed = False
    for scenario, name in plan:
        target = targets[name]
        try:
            result = asyncio.run(
                record_scenario(
                    scenario,
                    name,
                    cassette_dir=_cassette_dir(scenario, cassettes),
                    target=target,
                    force=force,
                    mode=mode,  # type: ignore[arg-type]  # as above
                    filters=filters,
                )
            )
        except RecordError as exc:
            raise _fail(f"nav scenario record: {exc}") from None
        origin = "the simulated provider" if sim else target.endpoint
        if result.written:
            _echo(f"wrote {result.path} ({name}, from {origin}, {result.duration_s:.1f}s)")
        else:
            _echo(
                f"not written: {result.path} ({name}); the recording did not meet its"
                " expectations (use --force to keep it):"
            )
        for problem in result.problems:
            _echo(f"  {problem}")
        failed = failed or not result.written or bool(result.problems)
    if not plan:
        _echo(
            "nothing to record: every cassette exists"
            if mode == "once"
            else "nothing to record: no scenario is for the chosen formats"
        )
    if failed:
        raise typer.Exit(1)


@scenario_app.command("mv")
def move(
    old: Annotated[
        str, typer.Argument(help="The scenario: an id in the project's folders, or a file.")
    ],
    new: Annotated[str, typer.Argument(help="Its new id (the file stays in its folder).")],
    cassettes: CassettesOption = None,
) -> None:
    """Rename a scenario with its cassettes (every format's and the tool cassette) and snapshots.

    Only the id changes inside the files (the scenario's `id:`, each cassette's
    metadata.source.scenario); the recordings stay as recorded. Refuses, moving
    nothing, when any target exists.
    """
    from navagent.fixtures.harness.record._rename import RenameError, rename_scenario

    found = _find_scenarios([old])
    if len(found) != 1:
        raise _fail(f"nav scenario mv: {old} holds {len(found)} scenarios; name one")
    scenario = found[0]
    try:
        moves = rename_scenario(scenario, new, cassette_dir=_cassette_dir(scenario, cassettes))
    except RenameError as exc:
        raise _fail(f"nav scenario mv: {exc}") from None
    here = Path.cwd().resolve()
    for done in moves:
        _echo(f"moved {_shown(done.source, here)} -> {_shown(done.target, here)}")


def _shown(path: Path, here: Path) -> str:
    """`path` relative to the current folder when inside it."""
    resolved = path.resolve() if path.exists() else path.parent.resolve() / path.name
    return str(resolved.relative_to(here)) if resolved.is_relative_to(here) else str(path)


@scenario_app.command("sweep")
def sweep(
    paths: PathsArgument = None,
    provider: Annotated[
        FormatChoice,
        typer.Option(help="Sweep the cassettes of this wire format; all: every format."),
    ] = "all",
    budget: Annotated[
        int,
        typer.Option(
            min=1,
            help="Points per scenario x format; a larger grid is sampled by hypothesis"
            " (pairs of faults too) and its first failure shrunk.",
        ),
    ] = 30,
    seed: Annotated[int, typer.Option(help="Hypothesis seed (printed, to repeat a run).")] = 0,
    point: Annotated[
        list[str] | None,
        typer.Option(
            "--point",
            help="Run only this point (as a reproducer prints it, e.g. reset@request2+3).",
        ),
    ] = None,
    cassettes: CassettesOption = None,
    shard: Annotated[
        str | None,
        typer.Option(
            help="Sweep only share I of N (e.g. 2/4) of the scenario x format grids, for a CI"
            " matrix: the same split on every machine, the N shares together the whole sweep.",
        ),
    ] = None,
) -> None:
    """Replay scenarios through every fault their cassettes allow; exit 1 on any violation.

    Faults: per provider request (429, 500, 503, 529, refused, no first byte, 401;
    some struck on the retries too), per content delta of its response (reset,
    stall, an event's JSON cut or with junk after it, a wrong-typed field, an
    unknown event, the provider's error event, no finish), per tool call (exit, hang, huge, not
    UTF-8, empty), per response with several tool calls (the calls finishing
    in other orders, one past its own timeout, a slow create or delete while
    a read waits). Invariants and the hook: scenarios/README.md.
    """
    from navagent.fixtures.harness.faults._invariants import load_invariants
    from navagent.fixtures.harness.faults._space import parse_point
    from navagent.fixtures.harness.faults._team import on_import_path, team_settings
    from navagent.fixtures.harness.replay._runner import plan_replays
    from navagent.fixtures.harness.sweep._report import grid_text, reproducer, summary_line
    from navagent.fixtures.harness.sweep._run import (
        GridResult,
        SweepOptions,
        parse_shard,
        run_sweep,
        shard_jobs,
    )

    scenarios = _load(paths)
    try:
        points = tuple(parse_point(text) for text in point or [])
        share = parse_shard(shard) if shard is not None else (1, 1)
        team = team_settings(Path.cwd())
        on_import_path(team.import_paths)  # a team's module beside pyproject.toml
        invariants = load_invariants(team.invariants)
    except ValueError as exc:
        raise _fail(f"nav scenario sweep: {exc}") from None
    jobs = [
        job
        for scenario in scenarios
        for job in plan_replays(
            [scenario], formats_chosen(provider), cassette_dir=_cassette_dir(scenario, cassettes)
        )
    ]
    jobs = shard_jobs(jobs, *share) if shard is not None else jobs
    options = SweepOptions(budget=budget, seed=seed, points=points, invariants=invariants)

    def show(grid: GridResult) -> None:
        typer.echo(grid_text(grid))
        for result in grid.violations:
            typer.echo(reproducer(grid, result, snapshots=team.snapshots))

    started = time.perf_counter()
    grids = run_sweep(jobs, options, on_grid=show)
    typer.echo(f"{summary_line(grids)} in {time.perf_counter() - started:.1f}s (seed {seed})")
    if any(grid.violations or grid.error for grid in grids):
        raise typer.Exit(1)
