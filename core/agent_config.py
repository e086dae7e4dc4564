"""A team's agent: its system prompt and tool descriptions, read by `nav agent` and the harness.

A team that ships its own instructions to the model tests that agent, not
the default one: `nav_system_prompt` and `nav_tool_descriptions` in
`[tool.pytest.ini_options]` name two files (relative to the config file),
and `nav agent` (run in the project), `nav scenario` and the pytest plugin
all send what they say. The prompt's `{cluster}` is replaced by the cluster's
name (nothing else in it is a placeholder, so braces in examples are safe);
the descriptions file is a YAML mapping of tool name to description, for
the tools whose description the team changes. The tools themselves (names,
arguments, commands) are the agent's and stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from navagent.core.errors import NavAgentError
from navagent.core.messages import Tool
from navagent.core.prompts import default_system_prompt
from navagent.core.safe_yaml import load_yaml, yaml_problem
from navagent.core.tools import TOOLS

__all__ = [
    "PROMPT_KEY",
    "TOOLS_KEY",
    "AgentConfig",
    "AgentConfigError",
    "load_agent_config",
]

PROMPT_KEY = "nav_system_prompt"
TOOLS_KEY = "nav_tool_descriptions"
CLUSTER_PLACEHOLDER = "{cluster}"


class AgentConfigError(NavAgentError):
    """A configured prompt or descriptions file is missing, empty or malformed."""


@dataclass(frozen=True)
class AgentConfig:
    """The project's system prompt and tool descriptions; empty means the defaults."""

    system_prompt: str | None = None
    """The prompt as written, `{cluster}` not yet replaced; None: the default prompt."""
    tool_descriptions: Mapping[str, str] = field(default_factory=dict)
    """Tool name -> the description the model is given instead of the default."""

    def prompt_for(self, cluster: str) -> str:
        """The system prompt for a conversation about `cluster`."""
        if self.system_prompt is None:
            return default_system_prompt(cluster)
        return self.system_prompt.replace(CLUSTER_PLACEHOLDER, cluster)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools offered to the model, with the project's descriptions."""
        return tuple(
            tool.model_copy(update={"description": self.tool_descriptions[tool.name]})
            if tool.name in self.tool_descriptions
            else tool
            for tool in TOOLS
        )


def load_agent_config(
    folder: Path, *, system_prompt: str | None, tool_descriptions: str | None
) -> AgentConfig:
    """The files the two settings name, relative to `folder` (the config file's).

    Raises:
        AgentConfigError: a file is missing, empty, not UTF-8, or (descriptions)
            not a mapping of known tool names to non-empty text.
    """
    prompt = _read(folder, PROMPT_KEY, system_prompt) if system_prompt else None
    if prompt is not None and not prompt.strip():
        raise AgentConfigError(f"{PROMPT_KEY}: {system_prompt} is empty")
    descriptions: dict[str, str] = {}
    if tool_descriptions:
        text = _read(folder, TOOLS_KEY, tool_descriptions)
        descriptions = _descriptions(text, tool_descriptions)
    return AgentConfig(system_prompt=prompt, tool_descriptions=descriptions)


def _read(folder: Path, key: str, name: str) -> str:
    path = folder / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AgentConfigError(f"{key}: no file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentConfigError(f"{key}: cannot read {path}: {exc}") from None


def _descriptions(text: str, name: str) -> dict[str, str]:
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise AgentConfigError(f"{TOOLS_KEY}: {yaml_problem(exc, name)}") from None
    known = [tool.name for tool in TOOLS]
    if not isinstance(data, dict):
        raise AgentConfigError(
            f"{TOOLS_KEY}: {name} must map tool names to descriptions (tools: {', '.join(known)})"
        )
    problems = []
    for tool, description in data.items():
        if tool not in known:
            problems.append(f"{tool!r} is not a tool (tools: {', '.join(known)})")
        elif not isinstance(description, str) or not description.strip():
            problems.append(f"{tool}: expected the description as non-empty text")
    if problems:
        raise AgentConfigError(f"{TOOLS_KEY}: {name}: " + "; ".join(problems))
    return {str(tool): str(description) for tool, description in data.items()}
