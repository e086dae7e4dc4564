"""`--help` as a user reads it: defaults shown, flags without a type, examples."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.cli.harness import run_nav

ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def help_of(*command: str) -> str:
    result = run_nav(*command, "--help", env=ENV)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    "command",
    [
        ("agent",),
        ("agent", "sessions"),
        ("agent", "sessions", "export"),
        ("gateway", "serve"),
        ("scenario", "replay"),
        ("scenario", "record"),
    ],
)
def test_help_shows_flags_without_a_value_type(command: tuple[str, ...]) -> None:
    text = help_of(*command)
    assert "<bool>" not in text
    assert "--help" in text


def test_agent_help_has_an_optional_subcommand_and_examples() -> None:
    text = help_of("agent")
    assert "Usage: nav agent [OPTIONS] [sessions ...]" in text
    assert "COMMAND" not in text.split("Options")[0]
    assert "Examples:" in text and "nav agent --demo" in text
    assert "[default: (127.0.0.1:50051)]" in text and "[default: 20]" in text
    for option in ("--connect-timeout", "--demo-provider", "--no-markdown", "--continue"):
        assert option in text


@pytest.mark.parametrize("command", [("gateway", "serve"), ("scenario",)])
def test_help_has_examples(command: tuple[str, ...]) -> None:
    assert "Examples:" in help_of(*command)


def test_scenario_help_shows_defaults_written_in_words() -> None:
    text = " ".join(help_of("scenario", "replay").split())
    assert "[default: (nav_scenarios in ./pyproject.toml, else ./scenarios)]" in text
    assert (
        "[default: (nav_cassettes in ./pyproject.toml, else cassettes/ beside each scenario's"
        " folder)]"
    ) in text


def test_scenario_help_examples_name_scenarios_that_exist() -> None:
    # Issue 18: the examples named scenarios/list.yaml and list-sandboxes, which never existed.
    root = Path(__file__).resolve().parents[2]
    text = help_of("scenario")
    files = re.findall(r"scenarios/[\w-]+\.yaml", text)
    ids = [
        name
        for command in re.findall(r"nav scenario record ((?:[a-z0-9][\w-]* )+)--", text)
        for name in command.split()
    ]
    assert files and ids
    for name in [*files, *(f"scenarios/{i}.yaml" for i in ids)]:
        assert (root / name).is_file(), name
    assert "both providers" not in text


def test_readme_options_table_lists_every_agent_option() -> None:
    import typer.main

    from navagent.cli.app import app

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Using `nav agent`")[1].split("\n## ")[0]
    agent = typer.main.get_command(app).commands["agent"]  # type: ignore[attr-defined]
    options = [o for p in agent.params for o in p.opts if o.startswith("--") and o != "--help"]
    assert len(options) > 15
    missing = [option for option in options if f"`{option}" not in section]
    assert not missing, f"README's options table misses {missing}"
