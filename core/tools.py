"""The agent's nine tools: argument models, JSON schemas and argv builders.

Every tool shells out to `nav --cluster <name> ...`; see
`navagent.core.nav_cli` for how the process runs.
"""

from __future__ import annotations

from typing import Literal, Protocol

from navagent.core.messages import FrozenModel, ToolCall

__all__ = ["ToolOutcome", "ToolRunner", "ToolStatus"]

ToolStatus = Literal["ok", "failed", "timeout", "invalid", "declined", "unknown_tool", "cancelled"]
"""How a tool call ended: ran and exited 0, ran and failed (non-zero exit or
could not start), killed after its timeout, refused before running (bad
arguments), declined by the user, not a tool we have, or cancelled with its
turn (set by the agent loop, never by a runner)."""


class ToolOutcome(FrozenModel):
    """What one tool call produced, for the model and for display."""

    call: ToolCall
    status: ToolStatus
    content: str
    """The tool result text sent back to the model."""
    argv: tuple[str, ...] = ()
    """The exact command that ran (empty when nothing ran)."""
    exit_code: int | None = None
    duration_s: float = 0.0


class ToolRunner(Protocol):
    """Runs one tool call; never raises except `asyncio.CancelledError`."""

    async def run(self, call: ToolCall) -> ToolOutcome:
        """Run `call` and describe the outcome, including every failure."""
        ...
