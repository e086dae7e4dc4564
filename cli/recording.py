"""Where a recorded conversation is written, and saying what became of it.

`nav agent --record`, `/record` and `nav agent sessions export --scenario`
all write to `record_target` (the project's scenario folder, its filters,
the cluster's endpoint hidden) and report with `recording_report`.
"""

from __future__ import annotations

from pathlib import Path

from navagent.cli.cluster import ClusterPrivate, cluster_private
from navagent.cli.conversation import RecordTarget
from navagent.fixtures.harness import (
    ExportError,
    ExportResult,
    project_scenario_folders,
    project_settings,
)

__all__ = ["record_target", "recording_report", "scenario_folder"]


def scenario_folder(scenario_dir: Path | None) -> Path:
    """`scenario_dir`, else the first `nav_scenarios` folder of ./pyproject.toml (`scenarios/`).

    Raises:
        FilterError: ./pyproject.toml's harness settings are unusable.
    """
    if scenario_dir is not None:
        return scenario_dir
    return project_scenario_folders(Path.cwd())[0]


def record_target(scenario_dir: Path | None, cluster: str, *, simulated: bool) -> RecordTarget:
    """Where to write: `scenario_dir`, else the project's first `nav_scenarios` folder.

    Cassettes go to the project's `nav_cassettes` for that folder, else to
    `cassettes/` beside it, as for every scenario. The project's recording
    filters apply, with the cluster's endpoint hidden; its certificate
    material must not appear at all (not for the simulated cluster).

    Raises:
        FilterError: ./pyproject.toml's harness settings are unusable.
    """
    settings = project_settings(Path.cwd())
    folder = scenario_folder(scenario_dir)
    configured = settings.cassette_dir(folder / "scenario.yaml")
    cassettes = configured or folder.resolve().parent / "cassettes"
    private = ClusterPrivate() if simulated else cluster_private(cluster)
    return RecordTarget(
        scenario_dir=folder,
        cassette_dir=cassettes,
        filters=settings.filters.hiding(private.hidden),
        secrets=private.secrets,
    )


def recording_report(written: object) -> list[tuple[str, str]]:
    """(line, style) pairs for an export's result; none when nothing was recorded."""
    if isinstance(written, ExportResult):
        turns = f"{written.turns} turn{'s' if written.turns != 1 else ''}"
        return [
            (f"recorded {written.scenario} ({turns}, {written.provider})", "green"),
            (f"  provider cassette: {written.provider_cassette}", "dim"),
            (f"  tool cassette:     {written.tool_cassette}", "dim"),
            (
                "  it replays offline, no key or cluster needed: nav scenario replay"
                f" {_reference(written.scenario)}",
                "dim",
            ),
        ]
    if isinstance(written, ExportError):
        return [(f"not recorded: {written}", "bold red")]
    return []


def _reference(scenario: Path) -> str:
    """The scenario's id when `nav scenario` finds it by id (in ./scenarios), else its path."""
    if scenario.parent.resolve() == Path("scenarios").resolve():
        return scenario.stem
    return str(scenario)
