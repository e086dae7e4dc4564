"""The scenario file format: one multi-turn conversation and what it must do.

A scenario is YAML (documented for contributors in `scenarios/README.md`) that
loads into the frozen models below. Every model forbids unknown keys, so a typo
(`expcet:`) is an error instead of an expectation silently not checked. The
loader (`_loader`) turns validation errors into messages naming the file, the
path inside the document and what was expected.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field, PrivateAttr, field_validator

from navagent.core.agent import DEFAULT_MAX_ITERATIONS
from navagent.core.agent_events import TurnFinishReason
from navagent.core.events import ErrorCode
from navagent.core.messages import FrozenModel
from navagent.core.tools import TOOLS_BY_NAME, ToolStatus

__all__ = [
    "PROVIDERS",
    "AnswerExpect",
    "ClusterSpec",
    "CompactionOptions",
    "ModelNames",
    "Provider",
    "Scenario",
    "ScenarioOptions",
    "SandboxSpec",
    "ToolExpect",
    "Turn",
    "TurnExpect",
]

Provider = Literal["openai", "openai-responses", "anthropic"]
"""The wire formats a scenario is replayed against; also the cassette folder name."""
PROVIDERS: tuple[Provider, ...] = get_args(Provider)

SCENARIO_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
RFC1123_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def _one_or_many(value: Any) -> Any:
    """Let a YAML author write `error: overloaded` for `error: [overloaded]`."""
    return [value] if isinstance(value, str) else value


class ScenarioModel(FrozenModel):
    """Base: immutable, and an unknown key is an error (it is almost always a typo)."""


# --- the simulated cluster ----------------------------------------------------


class SandboxSpec(ScenarioModel):
    """A sandbox added to the cluster before the conversation starts."""

    name: str
    """Its name (an RFC 1123 label, as nav requires)."""
    phase: Literal["Provisioning", "Ready", "Error", "Deleting", "Unknown"] = "Ready"
    image: str = "ghcr.io/nvidia/navigator/sandbox:0.1.0"
    age_minutes: int = Field(default=60, ge=0)
    """Created this many minutes before the scenario clock."""
    providers: tuple[str, ...] = ()
    """Names of the providers attached to it."""
    logs: tuple[str, ...] = ()
    """Its log lines (messages only), oldest first; one minute apart, the last
    one a minute before the scenario clock."""

    @field_validator("name")
    @classmethod
    def _label(cls, name: str) -> str:
        if not RFC1123_LABEL.fullmatch(name):
            raise ValueError(
                f"{name!r} is not a sandbox name: expected lowercase letters, digits and '-',"
                " starting and ending with a letter or digit (at most 63)"
            )
        return name


class ClusterSpec(ScenarioModel):
    """The `nav-sim` cluster the tools run against."""

    name: str = "demo"
    """The cluster the agent operates on (`--cluster`); nav-sim knows `demo`
    (gateway up) and `offline` (every command fails as if unreachable)."""
    start: Literal["seed", "empty"] = "seed"
    """`seed`: nav-sim's seeded state (sandboxes dev-box, gpu-trainer and
    py-worker; providers anthropic, gh, nvidia; three inference routes).
    `empty`: the same cluster with no sandboxes, providers or routes."""
    remove_sandboxes: tuple[str, ...] = ()
    """Seeded sandboxes to take away."""
    add_sandboxes: tuple[SandboxSpec, ...] = ()
    """Sandboxes to add (after the removals)."""
    fault: str | None = None
    """`NAV_SIM_FAULT` for every tool call, e.g. `sandbox list=exit:1`."""


class ModelNames(ScenarioModel):
    """The model each provider's route asks for when the scenario is recorded.

    A replay always uses the model recorded in the cassette's metadata, so a
    cassette recorded with `--model` replays as recorded.
    """

    openai: str = Field(default="gpt-4.1-mini", min_length=1)
    openai_responses: str = Field(default="gpt-5-mini", min_length=1)
    """A reasoning model (o-series, gpt-5) makes the simulated provider stream
    reasoning summaries and encrypted reasoning items, and check that the
    encrypted items come back unchanged on the next request."""
    anthropic: str = Field(default="claude-sonnet-4-5", min_length=1)
    """A name ending in `-thinking` makes the simulated provider stream signed
    thinking blocks, and check that they come back on the next request."""


class CompactionOptions(ScenarioModel):
    """When the agent compacts older turns into a summary (estimated tokens)."""

    threshold_tokens: int = Field(gt=0)
    keep_recent_tokens: int = Field(gt=0)


class ScenarioOptions(ScenarioModel):
    """Agent settings for the whole conversation."""

    max_iterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1)
    """Completions per turn before the turn stops (`finish: iteration_limit`)."""
    max_tokens: int | None = Field(default=None, gt=0)
    compaction: CompactionOptions | None = None
    """Compact automatically; None (the default) never compacts."""


# --- turns and expectations ---------------------------------------------------


class ToolExpect(ScenarioModel):
    """One tool call the turn must make, in order."""

    name: str
    arguments: dict[str, Any] | None = None
    """The call's arguments; None leaves them unchecked."""
    match: Literal["subset", "exact"] = "subset"
    """`subset`: the listed arguments must be there with these values;
    `exact`: the arguments must be exactly these."""
    status: ToolStatus | None = None
    """How the call must end: ok, failed, timeout, invalid, declined, ..."""

    @field_validator("name")
    @classmethod
    def _known_tool(cls, name: str) -> str:
        if name not in TOOLS_BY_NAME:
            raise ValueError(f"unknown tool {name!r} (expected one of: {', '.join(TOOLS_BY_NAME)})")
        return name


class AnswerExpect(ScenarioModel):
    """Properties of the turn's final answer text."""

    contains: tuple[str, ...] = ()
    """Each must appear in the answer (case-sensitive)."""
    not_contains: tuple[str, ...] = ()
    """None of these may appear in the answer."""


class TurnExpect(ScenarioModel):
    """What one turn must do; every key is optional and unchecked when absent."""

    tools: tuple[ToolExpect, ...] | None = None
    """Exactly these tool calls, in this order (`[]`: no tool call at all)."""
    answer: AnswerExpect | None = None
    error: Annotated[tuple[ErrorCode, ...], BeforeValidator(_one_or_many)] | None = None
    """The turn must fail with one of these error codes (providers classify the
    same failure differently, e.g. `overloaded` vs `upstream_unavailable`)."""
    finish: TurnFinishReason | None = None
    """How the turn must end: answered, iteration_limit, error, ..."""
    compacted: bool | None = None
    """True: the context was compacted during this turn; False: it was not."""
    thinking: tuple[Provider, ...] | None = None
    """Providers whose replay must stream reasoning in this turn; the others must not."""
    cached: tuple[Provider, ...] | None = None
    """Providers whose recorded usage must show prompt-cache reads in this turn (tokens
    read from the cache, also in the REPL's usage line); the others must not."""


class Turn(ScenarioModel):
    """One user message, the answers to give, and what must happen."""

    user: str = Field(min_length=1)
    """What the user types."""
    confirm: tuple[bool, ...] = ()
    """Answers to the confirmation questions of this turn, in order (yes/no)."""
    resume: bool = False
    """Before this turn, close the session and resume it from the session
    store in a new agent, as `nav agent --resume` does."""
    expect: TurnExpect = TurnExpect()


class Scenario(ScenarioModel):
    """One conversation, replayed against every provider."""

    id: str
    """Lowercase words joined by `-`; the file name and the cassette name."""
    description: str = Field(min_length=1)
    """What the conversation shows, for someone reading the list."""
    cluster: ClusterSpec = ClusterSpec()
    models: ModelNames = ModelNames()
    options: ScenarioOptions = ScenarioOptions()
    turns: tuple[Turn, ...] = Field(min_length=1)

    _source: str = PrivateAttr(default="<scenario>")

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not SCENARIO_ID.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a scenario id: expected lowercase letters, digits and '-'"
                " (at most 63), e.g. create-then-delete"
            )
        return value

    @property
    def source(self) -> str:
        """The file the scenario was loaded from, for messages."""
        return self._source

    def with_source(self, source: str) -> Scenario:
        """Return this scenario remembering the file it came from."""
        copy = self.model_copy()
        copy._source = source
        return copy

    @property
    def summary(self) -> str:
        """The description on one line."""
        return " ".join(self.description.split())

    def model_for(self, provider: Provider) -> str:
        """The model to record with for `provider`."""
        if provider == "openai-responses":
            return self.models.openai_responses
        return self.models.openai if provider == "openai" else self.models.anthropic
