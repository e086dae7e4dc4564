"""`nav scenario mv OLD NEW`: a scenario renamed with everything recorded for it, nothing lost."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import (
    ToolCassette,
    ToolInteraction,
    ToolSource,
    load_cassette,
    load_scenario,
    load_tool_cassette,
)
from navagent.fixtures.harness.cassettes._tool_cassette import dump_tool_cassette
from tests.scenarios.conftest import SCENARIOS, CopyCase


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.fixture
def project(copy_case: CopyCase, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`providers` with every format's cassette, a tool cassette and its snapshot file."""
    folder = copy_case("providers")
    snapshots = folder / "__snapshots__"
    snapshots.mkdir()
    shutil.copyfile(SCENARIOS / "__snapshots__" / "providers.ambr", snapshots / "providers.ambr")
    tools = ToolCassette(
        source=ToolSource(
            kind="real", note="n", cluster="demo", recorded="2026-11-25", scenario="providers"
        ),
        interactions=(ToolInteraction(args=("provider", "list"), stdout="gh\n"),),
        recorded_by="nav-agent 0.2.0",
    )
    (folder.parent / "cassettes" / "tools").mkdir()
    (folder.parent / "cassettes" / "tools" / "providers.yaml").write_text(
        "# kept by hand\n" + dump_tool_cassette(tools), encoding="utf-8"
    )
    monkeypatch.chdir(folder.parent)
    return folder.parent


def test_mv_moves_every_file_and_changes_only_the_id(project: Path) -> None:
    before = {
        path.relative_to(project): path.read_text(encoding="utf-8")
        for path in project.rglob("*")
        if path.is_file()
    }

    result = CliRunner().invoke(app, ["scenario", "mv", "providers", "credential-providers"])

    assert result.exit_code == 0, result.output
    moved = [
        *(f"cassettes/{format_id}/" for format_id in FORMAT_IDS),
        "cassettes/tools/",
        "scenarios/__snapshots__/",
    ]
    assert result.output.splitlines() == [
        "moved scenarios/providers.yaml -> scenarios/credential-providers.yaml",
        *(
            f"moved {folder}providers.{'ambr' if 'snap' in folder else 'yaml'}"
            f" -> {folder}credential-providers.{'ambr' if 'snap' in folder else 'yaml'}"
            for folder in moved
        ),
    ]
    after = {
        path.relative_to(project): path.read_text(encoding="utf-8")
        for path in project.rglob("*")
        if path.is_file()
    }
    assert len(after) == len(before) and not any("providers." in p.name[:10] for p in after)
    scenario_file = Path("scenarios/credential-providers.yaml")
    assert changed_lines(before[Path("scenarios/providers.yaml")], after[scenario_file]) == [
        "-id: providers",
        "+id: credential-providers",
    ]
    for format_id in (*FORMAT_IDS, "tools"):
        old = before[Path(f"cassettes/{format_id}/providers.yaml")]
        new = after[Path(f"cassettes/{format_id}/credential-providers.yaml")]
        assert changed_lines(old, new) == [
            "-    scenario: providers",
            "+    scenario: credential-providers",
        ]
    snapshot = Path("scenarios/__snapshots__/credential-providers.ambr")
    assert after[snapshot] == before[Path("scenarios/__snapshots__/providers.ambr")]
    renamed = load_scenario(project / scenario_file)
    assert renamed.id == "credential-providers"
    cassette = load_cassette(project / "cassettes" / "openai" / "credential-providers.yaml")
    assert cassette.source.scenario == "credential-providers"
    tools = load_tool_cassette(project / "cassettes" / "tools" / "credential-providers.yaml")
    assert tools.source.scenario == "credential-providers" and tools.recorded_by

    replayed = CliRunner().invoke(
        app, ["scenario", "replay", "credential-providers", "--provider", "anthropic"]
    )
    assert replayed.exit_code == 0, replayed.output  # the recordings replay under the new name


def test_mv_refuses_to_overwrite_and_moves_nothing(project: Path) -> None:
    taken = project / "cassettes" / "gemini" / "vendors.yaml"
    taken.write_text("someone else's\n", encoding="utf-8")
    (project / "scenarios" / "__snapshots__" / "vendors.ambr").write_text("x", encoding="utf-8")
    files = sorted(project.rglob("*"))

    result = CliRunner().invoke(app, ["scenario", "mv", "providers", "vendors"])

    assert result.exit_code == 2
    assert "cannot rename providers to vendors: nothing was moved" in result.output
    assert str(taken) in result.output and "vendors.ambr" in result.output
    assert sorted(project.rglob("*")) == files
    assert taken.read_text(encoding="utf-8") == "someone else's\n"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("providers", "Bad Name", "'Bad Name' is not a scenario id"),
        ("providers", "providers", "already called providers"),
        ("no-such", "other", "no-such"),
    ],
)
def test_mv_says_what_is_wrong(project: Path, old: str, new: str, message: str) -> None:
    result = CliRunner().invoke(app, ["scenario", "mv", old, new])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output
    assert (project / "scenarios" / "providers.yaml").is_file()


def test_mv_refuses_a_scenario_whose_other_file_takes_the_name(project: Path) -> None:
    (project / "scenarios" / "vendors.yml").write_text("id: vendors\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["scenario", "mv", "providers", "vendors"])
    assert result.exit_code == 2 and "vendors.yml" in result.output
