"""A project's agent configuration: its prompt and tool descriptions, or a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from navagent.core.agent_config import AgentConfig, AgentConfigError, load_agent_config
from navagent.core.prompts import default_system_prompt
from navagent.core.tools import TOOLS


def test_the_defaults_are_the_agents_own() -> None:
    config = load_agent_config(Path("."), system_prompt=None, tool_descriptions=None)
    assert config == AgentConfig()
    assert config.prompt_for("demo") == default_system_prompt("demo")
    assert config.tools == TOOLS


def test_a_prompt_names_its_cluster_and_descriptions_replace_only_theirs(tmp_path: Path) -> None:
    (tmp_path / "prompt.md").write_text('Ops bot for {cluster}. JSON: {"a": 1}\n', "utf-8")
    (tmp_path / "tools.yaml").write_text("sandbox_logs: Read the logs.\n", "utf-8")
    config = load_agent_config(tmp_path, system_prompt="prompt.md", tool_descriptions="tools.yaml")
    assert config.prompt_for("prod") == 'Ops bot for prod. JSON: {"a": 1}\n'
    changed = {tool.name: tool.description for tool in config.tools}
    assert changed["sandbox_logs"] == "Read the logs."
    assert [tool.name for tool in config.tools] == [tool.name for tool in TOOLS]
    assert [t for t in config.tools if t.name != "sandbox_logs"] == [
        t for t in TOOLS if t.name != "sandbox_logs"
    ]


@pytest.mark.parametrize(
    ("prompt", "tools", "message"),
    [
        ("missing.md", None, "nav_system_prompt: no file"),
        ("empty.md", None, "nav_system_prompt: empty.md is empty"),
        (None, "list.yaml", "must map tool names to descriptions (tools: cluster_status"),
        (None, "unknown.yaml", "'sandbox_restart' is not a tool (tools: cluster_status"),
        (None, "blank.yaml", "sandbox_list: expected the description as non-empty text"),
        (None, "broken.yaml", "nav_tool_descriptions: broken.yaml:2: not valid YAML"),
    ],
)
def test_a_bad_file_is_named_with_what_is_wrong(
    tmp_path: Path, prompt: str | None, tools: str | None, message: str
) -> None:
    for name, text in {
        "empty.md": " \n",
        "list.yaml": "- sandbox_list\n",
        "unknown.yaml": "sandbox_restart: Restart it.\n",
        "blank.yaml": "sandbox_list: ''\n",
        "broken.yaml": "sandbox_list: [\n",
    }.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(AgentConfigError) as raised:
        load_agent_config(tmp_path, system_prompt=prompt, tool_descriptions=tools)
    assert message in str(raised.value)
