"""What a team meets after installing the plugin (issue 28, section 2).

Snapshot diffs follow the colour options; `--record-mode=all` keeps what
is no longer sent after what is; an inline scenario's missing cassette
names a command that runs; every `nav scenario` command finds the
project's scenarios where the plugin does; a block names its record
command once; an unknown key is reported at its own line.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
import yaml
from _pytest._io import TerminalWriter
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import ScenarioError, parse_scenario
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.pytest_plugin import _FailureBlock
from tests.scenarios.conftest import CASSETTES, SCENARIOS

PYPROJECT = """
[tool.pytest.ini_options]
nav_formats = ["openai"]
asyncio_default_fixture_loop_scope = "function"
"""

ESC = "\x1b"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The committed `providers` scenario and its openai cassette, replayed on openai only."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.chdir(pytester.path)
    pytester.makepyprojecttoml(PYPROJECT)
    (pytester.path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", pytester.path / "scenarios" / "providers.yaml")
    cassette = pytester.path / "cassettes" / "openai" / "providers.yaml"
    cassette.parent.mkdir(parents=True)
    shutil.copyfile(CASSETTES / "openai" / "providers.yaml", cassette)
    return pytester.path


# --- snapshot diffs and colour ------------------------------------------------


def _break_snapshot(pytester: pytest.Pytester, root: Path) -> None:
    pytester.makepyprojecttoml(PYPROJECT + "nav_snapshots = true\n")
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (snapshot,) = (root / "scenarios" / "__snapshots__").glob("*.ambr")
    text = snapshot.read_text(encoding="utf-8")
    assert "nvidia (nvidia)" in text
    snapshot.write_text(text.replace("nvidia (nvidia)", "nvidia (NVIDIA)"), encoding="utf-8")


@pytest.mark.parametrize(
    "options",
    [["--color=no"], ["--color=yes", "--snapshot-no-colors"], ["--color=auto"]],
    ids=["color-no", "snapshot-no-colors", "auto"],
)
def test_a_snapshot_diff_follows_the_colour_options_and_junit_stays_plain(
    pytester: pytest.Pytester, project: Path, options: list[str]
) -> None:
    _break_snapshot(pytester, project)
    junit = project / "report.xml"
    result = pytester.runpytest(*options, f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    output = str(result.stdout)
    changed = [line for line in output.splitlines() if "NVIDIA" in line or "(nvidia)" in line]
    assert any(line.startswith("-") for line in changed), output
    assert any(line.startswith("+") for line in changed), output
    assert not [line for line in changed if ESC in line], changed
    xml = junit.read_text(encoding="utf-8")
    assert "NVIDIA" in xml
    assert ESC not in xml and "#x1B" not in xml and "[0m" not in xml


def test_a_failure_block_colours_only_diff_lines_and_only_on_a_colour_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # would colour anything that goes through a writer
    text = "scenario x, format openai: differs\n  list([\n-   'a',\n+   'b',\n  ])"
    for colour in (True, False):
        out = io.StringIO()
        writer = TerminalWriter(out)
        writer.hasmarkup = True
        _FailureBlock(text, colour).toterminal(writer)
        lines = out.getvalue().splitlines()
        coloured = [line for line in lines if ESC in line]
        assert coloured == ([lines[2], lines[3]] if colour else [])
        assert str(_FailureBlock(text, colour)) == text  # junit, xdist: always plain


# --- --record-mode=all --------------------------------------------------------


def _requests(cassette: Path) -> list[str]:
    data = _serializer.deserialize(cassette.read_text(encoding="utf-8"))
    return [interaction["request"]["body"] for interaction in data["interactions"]]


def test_record_mode_all_keeps_what_is_no_longer_sent_after_what_is(
    pytester: pytest.Pytester, project: Path
) -> None:
    scenario = project / "scenarios" / "providers.yaml"
    cassette = project / "cassettes" / "openai" / "providers.yaml"
    before = _requests(cassette)
    spec = yaml.safe_load(scenario.read_text(encoding="utf-8"))
    removed = spec["turns"].pop()["user"]  # the last turn is no longer part of the conversation
    scenario.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")

    result = pytester.runpytest("--record-mode=all")
    result.assert_outcomes(failed=1)
    after = _requests(cassette)
    sent = [body for body in after if removed not in body]
    kept = [body for body in after if removed in body]
    assert sent and kept and after == sent + kept  # what is sent first, in order
    assert kept == [body for body in before if removed in body]
    output = str(result.stdout)
    assert "the cassette has requests the replay never sent" in output
    assert f"request {len(sent) + 1} (" in output  # the first one after the replay's last
    assert "--record-mode=rewrite" in output

    # every later replay says the same; rewrite drops them and the replay passes
    again = pytester.runpytest()
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*the cassette has requests the replay never sent*"])
    pytester.runpytest("--record-mode=rewrite").assert_outcomes(passed=1)
    assert _requests(cassette) == sent
    pytester.runpytest().assert_outcomes(passed=1)


# --- inline scenarios ------------------------------------------------------------


def test_an_inline_scenarios_missing_cassette_names_a_command_that_records_it(
    pytester: pytest.Pytester, project: Path
) -> None:
    spec = yaml.safe_load((SCENARIOS / "providers.yaml").read_text(encoding="utf-8"))
    spec["id"] = "inline-providers"
    pytester.makepyfile(
        test_inline=f"""
        def test_it(nav_scenario):
            nav_scenario.replay("openai", {spec!r})
        """
    )
    missing = pytester.runpytest("test_inline.py")
    missing.assert_outcomes(failed=1)
    output = str(missing.stdout)
    assert "nav scenario record" not in output and "<inline> --provider" not in output
    command = "pytest --record-mode=once test_inline.py::test_it"
    assert output.count(command) == 1, output

    recorded = pytester.runpytest(*command.split()[1:])  # the command as printed
    recorded.assert_outcomes(passed=1)
    assert (project / "cassettes" / "openai" / "inline-providers.yaml").is_file()
    pytester.runpytest("test_inline.py").assert_outcomes(passed=1)


# --- where a project's scenarios are ------------------------------------------


def _nav(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_every_scenario_command_reads_the_projects_folders_as_the_plugin_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nnav_scenarios = ["specs/agent"]\nnav_cassettes = "tapes"\n',
        encoding="utf-8",
    )
    (tmp_path / "specs" / "agent").mkdir(parents=True)
    shutil.copyfile(SCENARIOS / "providers.yaml", tmp_path / "specs" / "agent" / "providers.yaml")
    for provider in FORMAT_IDS[:-1]:
        target = tmp_path / "tapes" / provider / "providers.yaml"
        target.parent.mkdir(parents=True)
        shutil.copyfile(CASSETTES / provider / "providers.yaml", target)
    last = FORMAT_IDS[-1]

    code, output = _nav("scenario", "list")
    assert code == 0, output
    assert re.search(rf"^providers .* missing: {last}", output, re.M), output

    code, output = _nav("scenario", "replay", "providers", "--provider", FORMAT_IDS[0])
    assert code == 0, output

    code, output = _nav("scenario", "replay", "--provider", last)
    assert code == 1, output
    assert output.count("nav scenario record providers") == 1, output  # named once, by its id

    code, output = _nav("scenario", "record", "--missing", "--sim")
    assert code == 0, output
    assert (tmp_path / "tapes" / last / "providers.yaml").is_file()
    assert not (tmp_path / "scenarios").exists() and not (tmp_path / "cassettes").exists()
    code, output = _nav("scenario", "replay")
    assert code == 0, output


def test_a_failure_block_names_the_record_command_once(
    pytester: pytest.Pytester, project: Path
) -> None:
    (project / "cassettes" / "openai" / "providers.yaml").unlink()
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    output = str(result.stdout)
    assert output.count("nav scenario record providers --provider openai --sim") == 1, output
    result.stdout.fnmatch_lines(
        ["*no cassette at *providers.yaml", "*record it with: nav scenario record providers*"]
    )


# --- unknown keys ---------------------------------------------------------------

SCENARIO = """\
id: sample
description: d
turns:
  - user: hi
    expect:
      answer: {contains: [x]}
"""


@pytest.mark.parametrize(
    ("anchor", "indent", "path"),
    [
        ("turns:\n", "", "extra"),
        ("    expect:\n", "    ", "turns[0].extra"),
        ("      answer:", "      ", "turns[0].expect.extra"),
    ],
    ids=["top-level", "turn", "expect"],
)
@pytest.mark.parametrize(
    "value",
    ["1", "\n{i}  a: 1\n{i}  b: 2", "\n{i}  - a\n{i}  - b", "\n{i}  # a comment\n{i}  a: 1"],
    ids=["scalar", "block-mapping", "block-sequence", "after-a-comment"],
)
def test_an_unknown_key_is_reported_at_its_own_line(
    anchor: str, indent: str, path: str, value: str
) -> None:
    entry = f"{indent}extra: {value.format(i=indent)}"
    text = SCENARIO.replace(anchor, f"{entry}\n{anchor}", 1)
    line = text.splitlines().index(entry.splitlines()[0]) + 1
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="s.yaml")
    assert f"s.yaml:{line}: {path}: unknown key 'extra'" in str(caught.value), text
