"""Argument models of the nine tools, their JSON schemas, and validation messages.

The model's arguments are validated against these pydantic models before
anything runs, and the JSON schema sent to the model is generated from the
same models, so the two cannot drift apart (a test checks that they agree).
Validation is strict: JSON types must match exactly (`"5"` is not an integer),
because the schema says so and a model that gets away with a wrong type once
will keep producing it. The one leniency is an integral float (`50.0`) for an
integer, which JSON Schema itself counts as an integer.
"""

from __future__ import annotations

import functools
import json
import shlex
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

__all__ = [
    "MAX_LOG_LINES",
    "CommandText",
    "Empty",
    "NamedArgs",
    "SandboxCreateArgs",
    "SandboxLogsArgs",
    "ToolArgs",
    "describe_arguments",
    "describe_validation_error",
    "json_type",
    "parameters_schema",
]

MAX_LOG_LINES = 2000
"""The gateway keeps at most 2000 log lines per sandbox; `-n 0` asks for all of them."""

_WORD_PATTERN = r"^[^-\x00][^\x00]*$"
_TEXT_PATTERN = r"^[^\x00]*$"


def _check_word(value: str) -> str:
    if value.startswith("-"):
        raise ValueError(f"must not start with '-' (nav would read {value!r} as an option)")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


@functools.lru_cache(maxsize=16)
def _split_command(value: str) -> tuple[str, ...]:
    """`shlex.split`, remembered for the last few commands.

    shlex reads a character at a time in Python (0.5 s for a 146 KiB file pasted
    into a command), and a call's command is split to check it, to run it, and
    again by whoever prepares the call once more (a replay's fault executors).
    """
    return tuple(shlex.split(value))


def _check_command(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        _split_command(value)
    except ValueError as error:  # shlex says "No closing quotation" / "No escaped character"
        raise ValueError(
            f"cannot be split into words: {error} "
            "(quote with '...' or \"...\" and close every quote)"
        ) from None
    return value


def _integral_float_to_int(value: object) -> object:
    # JSON Schema counts 50.0 as an integer; accept it so schema and validator agree.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Word = Annotated[
    str,
    Field(min_length=1, json_schema_extra={"pattern": _WORD_PATTERN}),
    AfterValidator(_check_word),
]
"""A name or image passed as its own argv word: non-empty, never option-like."""

CommandText = Annotated[
    str,
    Field(json_schema_extra={"pattern": _TEXT_PATTERN}),
    AfterValidator(_check_command),
]
"""A command line split like a shell would (quotes respected), run without a shell."""


class ToolArgs(BaseModel):
    """Base of every argument model: frozen, strict, unknown fields refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Empty(ToolArgs):
    """Arguments of a tool that takes none."""


class NamedArgs(ToolArgs):
    """Arguments of a tool that acts on one named object."""

    name: Annotated[
        Word,
        Field(description="Exact name of the object, as shown by the matching list tool."),
    ]


class SandboxNameArgs(NamedArgs):
    """Arguments of a tool that acts on one sandbox."""

    name: Annotated[
        Word,
        Field(description="Exact sandbox name, as shown by sandbox_list (e.g. 'dev-box')."),
    ]


class ProviderNameArgs(NamedArgs):
    """Arguments of `provider_get`."""

    name: Annotated[
        Word,
        Field(description="Exact provider name, as shown by provider_list (e.g. 'anthropic')."),
    ]


class SandboxCreateArgs(ToolArgs):
    """Arguments of `sandbox_create`."""

    name: Annotated[
        Word | None,
        Field(
            description=(
                "Name for the new sandbox (lowercase letters, digits and '-'). "
                "Omit to let the gateway pick one."
            )
        ),
    ] = None
    image: Annotated[
        Word | None,
        Field(description="Container image to run. Omit to use the cluster's default image."),
    ] = None
    command: Annotated[
        CommandText | None,
        Field(
            description=(
                "Command to run inside the sandbox once it is Ready; the sandbox is kept "
                "afterwards. Split into words like a shell would (quotes group words, e.g. "
                "\"python3 -c 'print(42)'\") but not run by a shell: for pipes or redirects "
                "use \"sh -c '...'\". Omit to only create the sandbox."
            )
        ),
    ] = None

    @property
    def command_words(self) -> list[str]:
        """The command split into argv words; empty when there is no command."""
        return list(_split_command(self.command)) if self.command else []


class SandboxLogsArgs(SandboxNameArgs):
    """Arguments of `sandbox_logs`."""

    lines: Annotated[
        Annotated[int, Field(ge=0, le=MAX_LOG_LINES)] | None,
        BeforeValidator(_integral_float_to_int),
        Field(
            description=(
                f"How many of the most recent log lines to show, 1 to {MAX_LOG_LINES}; "
                f"0 means all the gateway keeps (up to {MAX_LOG_LINES}). Omit for 200."
            ),
        ),
    ] = None


class _ToolSchemaGenerator(GenerateJsonSchema):
    """Pydantic's generator minus the noise a model does not need.

    No `title` on fields or the object, no `default: null`, and an optional
    field reads `{"type": ["string", "null"]}` instead of an `anyOf` pair.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:  # noqa: ARG002 - interface
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if isinstance(inner.get("type"), str):
            return {**inner, "type": [inner["type"], "null"]}
        return super().nullable_schema(schema)  # pragma: no cover - every nullable is a scalar

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if schema.get("default", ...) is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)  # pragma: no cover - no other defaults


def parameters_schema(model: type[ToolArgs]) -> dict[str, Any]:
    """Return the JSON schema of `model`'s arguments, as sent to the model."""
    schema = model.model_json_schema(schema_generator=_ToolSchemaGenerator)
    schema.pop("title", None)
    schema.pop("description", None)  # the docstring is for us; the tool has its own text
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def json_type(value: object) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int() | float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case _:
            return "object"


def _show(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{text} ({json_type(value)})"


def _expected(prop: dict[str, Any]) -> str:
    """Say in words what a property of the schema accepts."""
    types = prop.get("type", "string")
    main = types[0] if isinstance(types, list) else types
    if main == "integer":
        return f"an integer from {prop['minimum']} to {prop['maximum']}"
    if prop.get("pattern") == _WORD_PATTERN:
        return "a non-empty string that does not start with '-'"
    if prop.get("pattern") == _TEXT_PATTERN:
        return "a command line as one string"
    return "a string"  # pragma: no cover - every string field has a pattern


def describe_validation_error(tool: str, model: type[ToolArgs], error: ValidationError) -> str:
    """Explain why the arguments of a `tool` call do not fit `model`, one line per problem.

    Each line names the field, what it expects and what was given, so the model
    can correct the call; the last line lists the arguments the tool accepts.
    """
    properties: dict[str, Any] = parameters_schema(model)["properties"]
    lines = [f"Invalid arguments for {tool}; nothing was run."]
    for item in error.errors(include_url=False):
        field = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        kind = item["type"]
        prop = properties.get(str(item["loc"][0]), {}) if item["loc"] else {}
        if kind == "missing":
            problem = f"required field is missing; expected {_expected(prop)}"
        elif kind == "extra_forbidden":
            accepted = ", ".join(properties) or "none (send {})"
            problem = f"unknown field, given {_show(item['input'])}; accepted fields: {accepted}"
        elif kind == "value_error":
            problem = f"{item['msg'].removeprefix('Value error, ')}; got {_show(item['input'])}"
        else:
            problem = f"expected {_expected(prop)}, got {_show(item['input'])}"
        lines.append(f"- {field}: {problem}")
    lines.append(f"Expected arguments: {describe_arguments(model)}")
    return "\n".join(lines)


def describe_arguments(model: type[ToolArgs]) -> str:
    """Describe in one line the arguments object `model` accepts, for error messages."""
    properties: dict[str, Any] = parameters_schema(model)["properties"]
    if not properties:
        return "{} (this tool takes no arguments)"
    required = {name for name, field in model.model_fields.items() if field.is_required()}
    parts = [
        f'"{name}": {_expected(prop)}{"" if name in required else ", optional"}'
        for name, prop in properties.items()
    ]
    return "{" + "; ".join(parts) + "}"
