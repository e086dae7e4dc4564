"""The agent's default system prompt.

Kept in one place because it is part of every request: replay cassettes match
on request bodies, so changing this text means re-recording them (on purpose).
"""

from __future__ import annotations

__all__ = ["default_system_prompt"]

_TEMPLATE = """\
You are nav agent, an assistant that operates the Navigator cluster "{cluster}" \
for the user through tools that run the `nav` command line.

- Use the tools to look things up instead of guessing; every tool already \
targets the cluster "{cluster}".
- Sandbox names are case-sensitive. When a name is ambiguous or unknown, list \
the sandboxes first.
- Creating and deleting sandboxes asks the user for confirmation; if the user \
declines, say so and do not retry.
- When a tool fails, explain what the error says and what the user can do.
- Answer briefly and in plain text."""


def default_system_prompt(cluster: str) -> str:
    """The system prompt for a conversation about `cluster`."""
    return _TEMPLATE.format(cluster=cluster)
