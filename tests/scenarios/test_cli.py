"""`nav scenario list|replay|record`: output lines and exit codes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.wire_formats import FORMAT_IDS
from tests.scenarios.conftest import CASSETTES, CopyCase, without_recorder

LINE = re.compile(
    rf"^(PASS|FAIL)  (\S+\[({'|'.join(map(re.escape, FORMAT_IDS))})\]) +\d+\.\d\ds(  .+)?$"
)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_list_shows_ids_turns_cassettes_and_descriptions(
    runner: CliRunner, copy_case: CopyCase, monkeypatch
) -> None:
    folder = copy_case("providers", "parallel-logs")
    missing = FORMAT_IDS[-1]
    (folder.parent / "cassettes" / missing / "parallel-logs.yaml").unlink()
    monkeypatch.chdir(folder.parent)

    result = runner.invoke(app, ["scenario", "list"])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    every = " ".join(FORMAT_IDS)
    assert re.match(
        rf"^parallel-logs  1 turn    missing: {missing} +One request that needs two", lines[0]
    )
    assert re.match(rf"^providers      2 turns   {every}  Credential providers", lines[1])
    # The cassette column is as wide as the list of every format.
    assert lines[0].index("One request") == lines[1].index("Credential")
    assert lines[-1] == "2 scenarios"


def test_replay_prints_a_line_per_replay_and_a_total(
    runner: CliRunner, copy_case: CopyCase, monkeypatch
) -> None:
    folder = copy_case("providers", "unknown-sandbox")
    monkeypatch.chdir(folder.parent)

    result = runner.invoke(app, ["scenario", "replay"])

    assert result.exit_code == 0, result.output
    *lines, total = result.output.splitlines()
    assert [LINE.match(line).group(1, 2) for line in lines] == [  # type: ignore[union-attr]
        ("PASS", f"{scenario}[{format_id}]")
        for scenario in ("providers", "unknown-sandbox")
        for format_id in FORMAT_IDS
    ]
    assert re.fullmatch(rf"{2 * len(FORMAT_IDS)} passed, 0 failed in \d+\.\ds", total)


def test_replay_exits_1_and_gives_the_first_reason_when_one_fails(
    runner: CliRunner, copy_case: CopyCase
) -> None:
    folder = copy_case("providers")
    cassette = folder.parent / "cassettes" / "anthropic" / "providers.yaml"
    cassette.write_text(
        cassette.read_text(encoding="utf-8").replace(
            "What providers do I have?", "What providers do we have?"
        ),
        encoding="utf-8",
    )

    result = runner.invoke(app, ["scenario", "replay", str(folder), "--provider", "both", "-v"])

    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    status = [line for line in lines if LINE.match(line)]
    assert LINE.match(status[0]).group(1, 2) == ("PASS", "providers[openai]")  # type: ignore[union-attr]
    # -v shows a passing replay's transcript under its line
    assert lines[1] == "      transcript providers [openai]"
    assert "        turn 1 > What providers do I have?" in lines
    fail = LINE.match(status[1])
    assert fail is not None and fail.group(1, 2) == ("FAIL", "providers[anthropic]")
    assert fail.group(4).strip() == (
        "request 1 (POST /v1/messages) differs from the cassette: messages[0].content[0].text:"
        ' "What providers do we have?" -> "What providers do I have?"'
    )
    assert '-          "text": "What providers do we have?",' in result.output  # -v shows the diff
    # ... and the one block, with the command that records the cassette again
    assert any(
        line.startswith("      scenario providers, format anthropic, turn 1, request 1 (")
        for line in lines
    )
    assert (
        f"        re-record with: nav scenario record {folder / 'providers.yaml'}"
        " --provider anthropic --sim"
    ) in lines
    assert re.fullmatch(r"1 passed, 1 failed in \d+\.\ds", lines[-1])


def test_replay_of_one_provider_and_one_file(runner: CliRunner, copy_case: CopyCase) -> None:
    folder = copy_case("providers", providers=("anthropic",))
    result = runner.invoke(
        app, ["scenario", "replay", str(folder / "providers.yaml"), "--provider", "anthropic"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("PASS  providers[anthropic]")


def test_replay_against_another_cassette_folder(
    runner: CliRunner, copy_case: CopyCase, tmp_path: Path
) -> None:
    folder = copy_case("providers", providers=())
    result = runner.invoke(
        app,
        ["scenario", "replay", str(folder), "--cassettes", str(CASSETTES), "--provider", "openai"],
    )
    assert result.exit_code == 0, result.output


def test_replay_exits_2_on_a_malformed_scenario(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "id: bad\ndescription: d\nturns:\n  - user: x\n    confirm: maybe\n", encoding="utf-8"
    )
    result = runner.invoke(app, ["scenario", "replay", str(tmp_path)])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"{tmp_path / 'bad.yaml'}:5: turns[0].confirm: expected a list, got a string of 5"
        " characters"
    )
    assert result.stdout == ""


def test_replay_without_scenarios_folder_exits_2(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["scenario", "replay"])
    assert result.exit_code == 2
    assert "scenarios: no such scenario file or folder" in result.stderr


def test_record_with_sim_writes_the_cassette(
    runner: CliRunner, copy_case: CopyCase, monkeypatch
) -> None:
    folder = copy_case("providers", providers=())
    monkeypatch.chdir(folder.parent)

    result = runner.invoke(
        app, ["scenario", "record", "providers", "--provider", "openai", "--sim"]
    )

    assert result.exit_code == 0, result.output
    written = folder.parent / "cassettes" / "openai" / "providers.yaml"
    assert result.output.startswith(f"wrote {written} (openai, from the simulated provider, ")
    committed = (CASSETTES / "openai" / "providers.yaml").read_bytes()
    assert without_recorder(written.read_bytes()) == without_recorder(committed)


def test_record_without_a_key_exits_2_and_says_which_variable(
    runner: CliRunner, copy_case: CopyCase, monkeypatch
) -> None:
    folder = copy_case("providers", providers=())
    monkeypatch.chdir(folder.parent)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CI", raising=False)

    result = runner.invoke(app, ["scenario", "record", "providers", "--provider", "anthropic"])

    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY is not set" in result.stderr
    assert not (folder.parent / "cassettes" / "anthropic").exists()


def test_record_checks_every_key_before_recording_anything(
    runner: CliRunner, copy_case: CopyCase, monkeypatch
) -> None:
    folder = copy_case("providers", providers=())
    monkeypatch.chdir(folder.parent)
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CI", raising=False)

    result = runner.invoke(app, ["scenario", "record", "providers", "--provider", "both"])

    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY is not set" in result.stderr
    assert not (folder.parent / "cassettes").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["nope", "--provider", "openai", "--sim"],
            "nope: no such scenario file or folder (nor a scenario nope.yaml in scenarios/)",
        ),
        (
            ["providers", "--provider", "openai", "--sim", "--endpoint", "http://x"],
            "cannot be combined with --sim",
        ),
        (["providers", "--provider", "both", "--model", "m"], "choose --provider"),
    ],
)
def test_record_usage_errors_exit_2(
    runner: CliRunner, copy_case: CopyCase, monkeypatch, arguments: list[str], message: str
) -> None:
    folder = copy_case("providers", providers=())
    monkeypatch.chdir(folder.parent)
    result = runner.invoke(app, ["scenario", "record", *arguments])
    assert result.exit_code == 2
    assert message in result.stderr


def test_record_several_scenarios_and_only_the_missing_ones(
    runner: CliRunner, copy_case: CopyCase, monkeypatch
) -> None:
    folder = copy_case("providers", "parallel-logs", providers=("openai",))
    monkeypatch.chdir(folder.parent)
    kept = folder.parent / "cassettes" / "openai" / "providers.yaml"
    kept.write_bytes(kept.read_bytes() + b"# hand-made, must survive --missing\n")

    result = runner.invoke(app, ["scenario", "record", "--missing", "--provider", "both", "--sim"])

    assert result.exit_code == 0, result.output
    written = sorted(line.split()[1] for line in result.output.splitlines())
    cassettes = folder.parent / "cassettes"
    assert written == sorted(
        str(cassettes / provider / f"{scenario}.yaml")
        for provider, scenario in [
            ("anthropic", "parallel-logs"),
            ("anthropic", "providers"),
        ]
    )
    assert kept.read_bytes().endswith(b"must survive --missing\n")

    again = runner.invoke(app, ["scenario", "record", "--missing", "--provider", "all", "--sim"])
    assert again.exit_code == 0, again.output
    assert "openai-responses" in again.output and "anthropic/" not in again.output

    rewritten = runner.invoke(
        app, ["scenario", "record", "providers", "parallel-logs", "--provider", "openai", "--sim"]
    )
    assert rewritten.exit_code == 0, rewritten.output
    assert rewritten.output.count("wrote ") == 2
    committed = (CASSETTES / "openai" / "providers.yaml").read_bytes()
    assert without_recorder(kept.read_bytes()) == without_recorder(committed)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--provider", "openai", "--sim"], "use --missing"),
        (["--missing", "--record-mode", "all", "--sim"], "--missing is --record-mode once"),
    ],
)
def test_record_mode_usage_errors(
    runner: CliRunner, copy_case: CopyCase, monkeypatch, arguments: list[str], message: str
) -> None:
    folder = copy_case("providers", providers=())
    monkeypatch.chdir(folder.parent)
    result = runner.invoke(app, ["scenario", "record", *arguments])
    assert result.exit_code == 2
    assert message in result.stderr
