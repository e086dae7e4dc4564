"""The agent a team ships is the agent its scenarios test (issue 40, section 4).

`nav_system_prompt` and `nav_tool_descriptions` in the project's
pyproject.toml: `nav agent` sends them, `nav scenario record` records them,
and `nav scenario replay` and the pytest plugin replay them; a change to the
prompt fails the replay where the prompt is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.fixtures.harness import load_scenario
from navagent.fixtures.harness.cassettes import _serializer
from tests.scenarios.conftest import SCENARIOS

PYPROJECT = """\
[tool.pytest.ini_options]
nav_formats = ["openai"]
nav_system_prompt = "agent/prompt.md"
nav_tool_descriptions = "agent/tools.yaml"
"""
PROMPT = "You are the Acme ops bot for {cluster}. Answer in one sentence.\n"
TOOLS = "sandbox_list: Acme's list of sandboxes, with their phase.\n"


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "prompt.md").write_text(PROMPT, encoding="utf-8")
    (tmp_path / "agent" / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", tmp_path / "scenarios" / "providers.yaml")
    return tmp_path


def first_request(cassette: Path) -> Any:
    data = _serializer.deserialize(cassette.read_text(encoding="utf-8"))
    return json.loads(data["interactions"][0]["request"]["body"])


def test_scenarios_record_and_replay_the_projects_prompt_and_descriptions(
    team: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(team)  # pytester moved to its own folder
    runner = CliRunner()
    recorded = runner.invoke(
        app, ["scenario", "record", "providers", "--provider", "openai", "--sim"]
    )
    assert recorded.exit_code == 0, recorded.output
    body = first_request(team / "cassettes" / "openai" / "providers.yaml")
    assert body["messages"][0] == {
        "role": "system",
        "content": PROMPT.replace("{cluster}", "demo"),
    }
    described = {
        tool["function"]["name"]: tool["function"]["description"] for tool in body["tools"]
    }
    assert described["sandbox_list"] == TOOLS.split(": ", 1)[1].strip()
    replayed = runner.invoke(app, ["scenario", "replay", "--provider", "openai"])
    assert replayed.exit_code == 0, replayed.output

    # The plugin reads the same keys: its replay passes too.
    pytester.chdir()
    for name in ("pyproject.toml", "agent", "scenarios", "cassettes"):
        source = team / name
        copy = shutil.copytree if source.is_dir() else shutil.copyfile
        copy(source, pytester.path / name)
    pytester.runpytest("-p", "no:asyncio", "scenarios").assert_outcomes(passed=1)

    # A changed prompt is a changed request: the replay says where.
    (team / "agent" / "prompt.md").write_text(PROMPT.replace("one", "two"), encoding="utf-8")
    monkeypatch.chdir(team)
    failed = runner.invoke(app, ["scenario", "replay", "--provider", "openai"])
    assert failed.exit_code == 1
    assert "the request differs from the cassette's at messages[0].content" in failed.output


def test_nav_agent_sends_the_projects_prompt_and_its_recording_replays(team: Path) -> None:
    nav = Path(sys.executable).with_name("nav")
    done = subprocess.run(
        [nav, "agent", "--demo", "-p", "list my sandboxes", "--record", "acme-list"],
        cwd=team,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    scenario = load_scenario(team / "scenarios" / "acme-list.yaml")
    assert scenario.options.system_prompt == PROMPT.replace("{cluster}", "demo")
    assert scenario.options.tool_descriptions == {
        "sandbox_list": "Acme's list of sandboxes, with their phase."
    }
    body = first_request(team / "cassettes" / "openai" / "acme-list.yaml")
    assert body["messages"][0]["content"] == PROMPT.replace("{cluster}", "demo")
    assert CliRunner().invoke(app, ["scenario", "replay", "acme-list"]).exit_code == 0


def test_a_bad_setting_is_named_not_a_traceback(team: Path) -> None:
    (team / "agent" / "tools.yaml").write_text("sandbox_restart: x\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["scenario", "replay"])
    assert result.exit_code == 2
    assert (
        "nav_tool_descriptions: agent/tools.yaml: 'sandbox_restart' is not a tool" in result.output
    )
    assert "Traceback" not in result.output
