"""Files a pull request controls cannot reach past the project, nor be read without end."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.fixtures.harness import CassetteError, ScenarioError, load_cassette, load_scenario
from tests.scenarios.conftest import CASSETTES, SCENARIOS

TOKEN = "ghp_" + "Zq8vR2mXk4Tn7Lp1Wc9Ys3Hd6Fb0Ju5Ea2Gi"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one good scenario; a credentials file outside it."""
    root = tmp_path / "project"
    (root / "scenarios").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", "utf-8")
    shutil.copyfile(SCENARIOS / "providers.yaml", root / "scenarios" / "providers.yaml")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".git-credentials").write_text(f"https://alice:{TOKEN}@github.com\n", "utf-8")
    monkeypatch.chdir(root)
    return root


def test_a_scenario_linked_outside_the_project_is_not_read_nor_echoed(project: Path) -> None:
    link = project / "scenarios" / "creds.yaml"
    link.symlink_to(project.parent / "home" / ".git-credentials")

    result = CliRunner().invoke(app, ["scenario", "list"])

    assert result.exit_code != 0
    assert "ghp_" not in result.output and "alice" not in result.output
    said = f"scenarios/{link.name} is a link to a file outside the project ({project}); not read"
    assert said in result.output
    assert "Traceback" not in result.output


def test_a_scenario_that_holds_a_token_is_described_not_quoted(project: Path) -> None:
    # Inside the project (a copy, not a link): the error still says only type and length.
    (project / "scenarios" / "creds.yaml").write_text(f"https://alice:{TOKEN}@github.com\n")

    with pytest.raises(ScenarioError) as refused:
        load_scenario(project / "scenarios" / "creds.yaml")

    assert TOKEN[:6] not in str(refused.value) and "alice" not in str(refused.value)
    assert str(refused.value).endswith("got a string of 65 characters")


def test_a_scenario_linked_to_dev_zero_or_a_pipe_is_refused_at_once(project: Path) -> None:
    zero = project / "scenarios" / "zero.yaml"
    zero.symlink_to("/dev/zero")
    pipe = project / "scenarios" / "pipe.yaml"
    os.mkfifo(pipe)
    inside = project / "scenarios" / "inside.yaml"
    inside.symlink_to(pipe)

    result = CliRunner().invoke(app, ["scenario", "list"])

    assert result.exit_code != 0
    assert "scenarios/zero.yaml is a link to a file outside the project" in result.output
    assert "scenarios/pipe.yaml is a named pipe, not a regular file; not read" in result.output
    assert "scenarios/inside.yaml is a named pipe, not a regular file; not read" in result.output
    with pytest.raises(ScenarioError, match="a character device, not a regular file"):
        load_scenario_in(Path("/dev"), "zero")


def load_scenario_in(folder: Path, name: str) -> None:
    """`load_scenario` of `folder/name` with no link involved (the file itself is special)."""
    load_scenario(folder / name)


def test_a_scenario_over_the_cap_is_refused_by_its_size(project: Path) -> None:
    big = project / "scenarios" / "big.yaml"
    big.write_text("id: big\n" + "#" * (2 * 2**20) + "\n")
    with pytest.raises(
        ScenarioError, match=r"big.yaml is 2,097,161 bytes, more than the 1,048,576"
    ):
        load_scenario(big)


def test_a_cassette_linked_outside_the_project_is_refused(project: Path) -> None:
    folder = project / "cassettes" / "openai"
    folder.mkdir(parents=True)
    (folder / "providers.yaml").symlink_to(CASSETTES / "openai" / "providers.yaml")
    with pytest.raises(CassetteError, match="is a link to a file outside the project"):
        load_cassette(folder / "providers.yaml")
    # A link inside the project is followed.
    shutil.copyfile(CASSETTES / "openai" / "providers.yaml", project / "kept.yaml")
    (folder / "providers.yaml").unlink()
    (folder / "providers.yaml").symlink_to(project / "kept.yaml")
    assert load_cassette(folder / "providers.yaml").source.provider == "openai"


def test_a_snapshot_linked_outside_the_project_is_not_read(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(pytester.path)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nnav_formats = ["openai"]\nnav_snapshots = true\n'
        'asyncio_default_fixture_loop_scope = "function"\n'
    )
    (pytester.path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", pytester.path / "scenarios" / "providers.yaml")
    cassette = pytester.path / "cassettes" / "openai" / "providers.yaml"
    cassette.parent.mkdir(parents=True)
    shutil.copyfile(CASSETTES / "openai" / "providers.yaml", cassette)
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (snapshot,) = (pytester.path / "scenarios" / "__snapshots__").glob("*.ambr")
    outside = pytester.path.parent / "outside.ambr"
    outside.write_text(snapshot.read_text("utf-8") + f"# {TOKEN}\n", "utf-8")
    snapshot.unlink()
    snapshot.symlink_to(outside)

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    output = str(result.stdout)
    assert "is a link to a file outside the project" in output
    assert TOKEN not in output
