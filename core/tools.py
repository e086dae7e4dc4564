"""The agent's nine tools: definitions, argument validation and argv builders.

Every tool shells out to `nav --cluster <name> ...`; `navagent.core.nav_cli`
resolves the binary and runs it. This module is pure: it turns a model's
`ToolCall` into the exact argv to run, or into a precise explanation of why it
cannot run, and never starts a process itself.

    TOOLS          the `Tool` definitions offered to the model
    TOOLS_BY_NAME  name -> `ToolSpec` (arguments model, argv builder, confirmation)
    prepare_call   ToolCall -> PreparedCall, or InvalidToolCallError
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import ValidationError

from navagent.core._tool_args import (
    Empty,
    NamedArgs,
    ProviderNameArgs,
    SandboxCreateArgs,
    SandboxLogsArgs,
    SandboxNameArgs,
    ToolArgs,
    describe_arguments,
    describe_validation_error,
    json_type,
    parameters_schema,
)
from navagent.core.errors import NavAgentError
from navagent.core.messages import FrozenModel, Tool, ToolCall

__all__ = [
    "TOOLS",
    "TOOLS_BY_NAME",
    "InvalidToolCallError",
    "PreparedCall",
    "ToolOutcome",
    "ToolRunner",
    "ToolSpec",
    "ToolStatus",
    "cluster_args",
    "prepare_call",
]

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
    """The exact command that ran, binary first (empty when nothing ran)."""
    exit_code: int | None = None
    """The process's exit status; negative `-N` when signal N ended it (Python's
    convention), `None` when nothing ran or it was killed after its timeout."""
    duration_s: float = 0.0
    """Wall time from start to the end of the process (0 when nothing ran)."""


class ToolRunner(Protocol):
    """Runs one tool call; never raises except `asyncio.CancelledError`."""

    async def run(self, call: ToolCall) -> ToolOutcome:
        """Run `call` and describe the outcome, including every failure."""
        ...


A = TypeVar("A", bound=ToolArgs)


@dataclass(frozen=True, slots=True)
class ToolSpec(Generic[A]):
    """One tool: what the model sees and how its call becomes a `nav` command."""

    name: str
    description: str
    """Told to the model: what the tool shows and when to use it."""
    arguments: type[A]
    """Validates the call's arguments and generates the JSON schema."""
    command: Callable[[A], list[str]]
    """Builds the words after `--cluster <name>`, e.g. `["sandbox", "get", "dev-box"]`."""
    needs_confirmation: bool = False
    """Changes the cluster, so the user is asked first (unless `--yes`)."""

    @property
    def tool(self) -> Tool:
        """The definition offered to the model."""
        return Tool(
            name=self.name,
            description=self.description,
            parameters=parameters_schema(self.arguments),
        )


def _fixed(*words: str) -> Callable[[Empty], list[str]]:
    def command(_: Empty) -> list[str]:
        return list(words)

    return command


def _named(*words: str) -> Callable[[NamedArgs], list[str]]:
    def command(args: NamedArgs) -> list[str]:
        return [*words, args.name]

    return command


def _sandbox_create(args: SandboxCreateArgs) -> list[str]:
    argv = ["sandbox", "create"]
    if args.name is not None:
        argv += ["--name", args.name]
    if args.image is not None:
        argv += ["--image", args.image]
    if words := args.command_words:
        # Words after `--` are never read as options, so they need no `-` check.
        # The real agent always adds --keep: without it a non-interactive run
        # deletes the sandbox after the command.
        argv += ["--keep", "--", *words]
    return argv


def _sandbox_logs(args: SandboxLogsArgs) -> list[str]:
    argv = ["sandbox", "logs", args.name]
    if args.lines is not None:
        argv += ["-n", str(args.lines)]
    return argv


_SPECS: tuple[ToolSpec[Any], ...] = (
    ToolSpec(
        "cluster_status",
        "Check whether the Navigator cluster's gateway is reachable: shows the cluster name, "
        "gateway endpoint, connection status and server version. Use it first when other "
        "tools fail with connection errors.",
        Empty,
        _fixed("cluster", "status"),
    ),
    ToolSpec(
        "sandbox_list",
        "List all sandboxes in the cluster as a table: name, namespace, creation time (UTC) and "
        "phase (Provisioning, Ready, Error, Deleting or Unknown).",
        Empty,
        _fixed("sandbox", "list"),
    ),
    ToolSpec(
        "sandbox_get",
        "Show one sandbox in detail: id, namespace, phase and its security policy (YAML: "
        "filesystem access, network policies, allowed inference routes).",
        SandboxNameArgs,
        _named("sandbox", "get"),
    ),
    ToolSpec(
        "sandbox_create",
        "Create a sandbox and wait until it is Ready (this can take a minute or two), then "
        "optionally run one command in it and show the command's output. Changes the cluster: "
        "the user is asked to confirm first.",
        SandboxCreateArgs,
        _sandbox_create,
        needs_confirmation=True,
    ),
    ToolSpec(
        "sandbox_delete",
        "Delete a sandbox by name. Destructive and irreversible: the user is asked to confirm "
        "first.",
        SandboxNameArgs,
        _named("sandbox", "delete"),
        needs_confirmation=True,
    ),
    ToolSpec(
        "sandbox_logs",
        "Show a sandbox's most recent log lines, oldest first: gateway events (creation, phase "
        "changes) and the sandbox supervisor's lines (e.g. network connections allowed or "
        "denied by policy). Use it to find out why a sandbox is in Error.",
        SandboxLogsArgs,
        _sandbox_logs,
    ),
    ToolSpec(
        "provider_list",
        "List credential providers as a table: name, type (claude, github, nvidia, ...) and how "
        "many credential and config keys each holds.",
        Empty,
        _fixed("provider", "list"),
    ),
    ToolSpec(
        "provider_get",
        "Show one provider: id, type, and the names of its credential and config keys (secret "
        "values are never shown).",
        ProviderNameArgs,
        _named("provider", "get"),
    ),
    ToolSpec(
        "inference_route_list",
        "List inference routes as a table: name, routing hint, base URL, protocols, model and "
        "whether the route is enabled.",
        Empty,
        _fixed("inference", "list"),
    ),
)

TOOLS_BY_NAME: MappingProxyType[str, ToolSpec[Any]] = MappingProxyType(
    {spec.name: spec for spec in _SPECS}
)
"""Every tool's spec by name, in the order of `TOOLS`."""

TOOLS: tuple[Tool, ...] = tuple(spec.tool for spec in _SPECS)
"""The tool definitions offered to the model, JSON schemas included."""


class InvalidToolCallError(NavAgentError, ValueError):
    """A tool call that cannot run; the message is written for the model."""

    def __init__(self, status: Literal["invalid", "unknown_tool"], message: str) -> None:
        super().__init__(message)
        self.status: Literal["invalid", "unknown_tool"] = status


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A validated call and the command it runs."""

    call: ToolCall
    spec: ToolSpec[Any]
    arguments: ToolArgs
    args: tuple[str, ...]
    """The arguments after the binary: `--cluster <name>` and the command."""


def cluster_args(cluster: str) -> list[str]:
    """Return `["--cluster", cluster]`, refusing a name nav would misread.

    Raises:
        ValueError: `cluster` is empty or starts with `-`. This is the
            operator's configuration, not the model's, so it is an exception.
    """
    if not cluster.strip() or cluster.startswith("-") or "\x00" in cluster:
        raise ValueError(f"invalid cluster name {cluster!r}: empty or starts with '-'")
    return ["--cluster", cluster]


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"field {key!r} is given more than once")
        result[key] = value
    return result


def _parse_arguments(spec: ToolSpec[Any], text: str) -> dict[str, Any]:
    def invalid(problem: str) -> InvalidToolCallError:
        return InvalidToolCallError(
            "invalid",
            f"Invalid arguments for {spec.name}; nothing was run.\n- {problem}\n"
            f"Expected arguments: {describe_arguments(spec.arguments)}",
        )

    shown = text if len(text) <= 200 else text[:197] + "..."
    if not text.strip():
        return {}
    try:
        value = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as error:
        raise invalid(f"arguments are not valid JSON ({error}); given: {shown}") from None
    except ValueError as error:
        raise invalid(f"arguments: {error}; given: {shown}") from None
    if not isinstance(value, dict):
        raise invalid(f"arguments must be a JSON object, got {json_type(value)}; given: {shown}")
    return value


def prepare_call(call: ToolCall, *, cluster: str) -> PreparedCall:
    """Validate `call` and build the argv it would run (after the binary).

    Nothing runs here. Call it before asking for confirmation, so the user
    sees the exact command.

    Raises:
        InvalidToolCallError: unknown tool (status `unknown_tool`), or
            arguments that are not a JSON object matching the tool's schema
            (status `invalid`); the message tells the model how to fix it.
        ValueError: `cluster` is not a usable cluster name.
    """
    spec = TOOLS_BY_NAME.get(call.name)
    if spec is None:
        raise InvalidToolCallError(
            "unknown_tool",
            f"Unknown tool {call.name!r}; nothing was run. "
            f"Available tools: {', '.join(TOOLS_BY_NAME)}.",
        )
    raw = _parse_arguments(spec, call.arguments)
    try:
        arguments = spec.arguments.model_validate(raw)
    except ValidationError as error:
        raise InvalidToolCallError(
            "invalid", describe_validation_error(spec.name, spec.arguments, error)
        ) from None
    args = (*cluster_args(cluster), *spec.command(arguments))
    return PreparedCall(call=call, spec=spec, arguments=arguments, args=args)
