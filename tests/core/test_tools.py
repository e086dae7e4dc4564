"""The nine tools: validation of what the model sends, argv, and the JSON schemas."""

from __future__ import annotations

import json
import shlex
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from navagent.core.messages import ToolCall
from navagent.core.tools import (
    TOOLS,
    TOOLS_BY_NAME,
    InvalidToolCallError,
    cluster_args,
    prepare_call,
)

NAMES = [
    "cluster_status",
    "sandbox_list",
    "sandbox_get",
    "sandbox_create",
    "sandbox_delete",
    "sandbox_logs",
    "provider_list",
    "provider_get",
    "inference_route_list",
]
NO_ARGS = ["cluster_status", "sandbox_list", "provider_list", "inference_route_list"]
ONE_NAME = ["sandbox_get", "sandbox_delete", "sandbox_logs", "provider_get"]


def call(name: str, arguments: Any = None, *, raw: str | None = None) -> ToolCall:
    text = raw if raw is not None else json.dumps({} if arguments is None else arguments)
    return ToolCall(id="call_1", name=name, arguments=text)


def args_of(name: str, arguments: Any = None, *, raw: str | None = None) -> list[str]:
    return list(prepare_call(call(name, arguments, raw=raw), cluster="demo").args)


def refusal(name: str, arguments: Any = None, *, raw: str | None = None) -> InvalidToolCallError:
    with pytest.raises(InvalidToolCallError) as caught:
        prepare_call(call(name, arguments, raw=raw), cluster="demo")
    return caught.value


# --- the tool list ------------------------------------------------------------------------


def test_tools_have_the_fixed_names_in_order() -> None:
    assert [tool.name for tool in TOOLS] == NAMES
    assert list(TOOLS_BY_NAME) == NAMES


def test_tools_only_create_and_delete_need_confirmation() -> None:
    confirmed = {name for name, spec in TOOLS_BY_NAME.items() if spec.needs_confirmation}
    assert confirmed == {"sandbox_create", "sandbox_delete"}


def test_tool_schemas_snapshot(snapshot: SnapshotAssertion) -> None:
    # Review a diff here as a change to what every model is told.
    assert [tool.model_dump() for tool in TOOLS] == snapshot


def _walk(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value, *(d for v in value.values() for d in _walk(v))]
    if isinstance(value, list):
        return [d for v in value for d in _walk(v)]
    return []


@pytest.mark.parametrize("name", NAMES)
def test_tool_schema_is_clean_and_closed(name: str) -> None:
    schema = TOOLS_BY_NAME[name].tool.parameters
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert not any("title" in node or "anyOf" in node for node in _walk(schema))
    for prop in schema["properties"].values():
        assert len(prop["description"]) > 20


@pytest.mark.parametrize("name", NAMES)
def test_tool_arguments_argument_names_are_fixed(name: str) -> None:
    expected = {
        "sandbox_get": ["name"],
        "sandbox_delete": ["name"],
        "provider_get": ["name"],
        "sandbox_logs": ["name", "lines"],
        "sandbox_create": ["name", "image", "command"],
    }.get(name, [])
    schema = TOOLS_BY_NAME[name].tool.parameters
    assert list(schema["properties"]) == expected
    assert schema.get("required", []) == (["name"] if name in ONE_NAME else [])


# --- argv ---------------------------------------------------------------------------------

ARGV_CASES = [
    ("cluster_status", {}, ["cluster", "status"]),
    ("sandbox_list", {}, ["sandbox", "list"]),
    ("sandbox_get", {"name": "dev-box"}, ["sandbox", "get", "dev-box"]),
    ("sandbox_delete", {"name": "py-worker"}, ["sandbox", "delete", "py-worker"]),
    ("sandbox_logs", {"name": "dev-box"}, ["sandbox", "logs", "dev-box"]),
    ("sandbox_logs", {"name": "dev-box", "lines": None}, ["sandbox", "logs", "dev-box"]),
    ("sandbox_logs", {"name": "dev-box", "lines": 50}, ["sandbox", "logs", "dev-box", "-n", "50"]),
    ("sandbox_logs", {"name": "dev-box", "lines": 0}, ["sandbox", "logs", "dev-box", "-n", "0"]),
    ("sandbox_logs", {"name": "x", "lines": 2000}, ["sandbox", "logs", "x", "-n", "2000"]),
    ("sandbox_logs", {"name": "x", "lines": 50.0}, ["sandbox", "logs", "x", "-n", "50"]),
    ("provider_list", {}, ["provider", "list"]),
    ("provider_get", {"name": "anthropic"}, ["provider", "get", "anthropic"]),
    ("inference_route_list", {}, ["inference", "list"]),
    ("sandbox_create", {}, ["sandbox", "create"]),
    ("sandbox_create", {"name": "a", "image": None}, ["sandbox", "create", "--name", "a"]),
    (
        "sandbox_create",
        {"name": "py", "image": "python:3.12"},
        ["sandbox", "create", "--name", "py", "--image", "python:3.12"],
    ),
    (
        "sandbox_create",
        {"command": "echo hello"},
        ["sandbox", "create", "--keep", "--", "echo", "hello"],
    ),
    (
        "sandbox_create",
        {"name": "py", "command": "python3 -c 'print(1 + 1)'"},
        ["sandbox", "create", "--name", "py", "--keep", "--", "python3", "-c", "print(1 + 1)"],
    ),
    (
        "sandbox_create",
        {"command": 'sh -c "ls -la | wc -l"'},
        ["sandbox", "create", "--keep", "--", "sh", "-c", "ls -la | wc -l"],
    ),
    ("sandbox_create", {"command": "-v"}, ["sandbox", "create", "--keep", "--", "-v"]),
    ("sandbox_create", {"command": "   "}, ["sandbox", "create"]),
    ("sandbox_get", {"name": "a b;rm -rf /"}, ["sandbox", "get", "a b;rm -rf /"]),
]


@pytest.mark.parametrize(
    ("name", "arguments", "command"),
    ARGV_CASES,
    ids=[f"{name}-{json.dumps(arguments)}" for name, arguments, _ in ARGV_CASES],
)
def test_prepare_call_builds_argv(name: str, arguments: dict[str, Any], command: list[str]) -> None:
    assert args_of(name, arguments) == ["--cluster", "demo", *command]


@pytest.mark.parametrize("raw", ["", "  ", "{}"], ids=["empty", "blank", "empty-object"])
def test_prepare_call_no_arguments_means_empty_object(raw: str) -> None:
    assert args_of("sandbox_list", raw=raw) == ["--cluster", "demo", "sandbox", "list"]


def test_prepare_call_uses_the_given_cluster() -> None:
    prepared = prepare_call(call("sandbox_list"), cluster="staging-2")
    assert prepared.args[:2] == ("--cluster", "staging-2")
    assert prepared.spec is TOOLS_BY_NAME["sandbox_list"]


@pytest.mark.parametrize("cluster", ["", " ", "-x", "--help", "a\x00b"])
def test_cluster_args_refuses_unusable_names(cluster: str) -> None:
    with pytest.raises(ValueError, match="invalid cluster name"):
        cluster_args(cluster)


# --- what the model gets wrong ------------------------------------------------------------
# (tool, arguments, field named, expectation stated, given value shown)

WORD = "expected a non-empty string that does not start with '-'"

BAD_ARGUMENTS: list[tuple[str, Any, str, str, str]] = [
    *[(t, {"verbose": True}, "verbose", "accepted fields: none", "true (bool") for t in NO_ARGS],
    *[(t, {"name": "x", "all": 1}, "all", "accepted fields: name", "1 (number)") for t in ONE_NAME],
    *[(t, {}, "name", "required field is missing", "") for t in ONE_NAME],
    *[(t, {"name": 7}, "name", WORD, "7 (number)") for t in ONE_NAME],
    *[(t, {"name": None}, "name", WORD, "null (null)") for t in ONE_NAME],
    *[(t, {"name": ["a"]}, "name", WORD, '["a"] (array)') for t in ONE_NAME],
    *[(t, {"name": ""}, "name", WORD, '"" (string)') for t in ONE_NAME],
    *[(t, {"name": "-rf"}, "name", "must not start with '-'", '"-rf" (string)') for t in ONE_NAME],
    *[(t, {"name": "--all"}, "name", "read '--all' as an option", '"--all"') for t in ONE_NAME],
    *[(t, {"name": "a\x00b"}, "name", "must not contain NUL", '"a\\u0000b"') for t in ONE_NAME],
    ("sandbox_logs", {"name": "x", "lines": "50"}, "lines", "integer from 0 to 2000", '"50"'),
    ("sandbox_logs", {"name": "x", "lines": True}, "lines", "integer from 0 to 2000", "true"),
    ("sandbox_logs", {"name": "x", "lines": 1.5}, "lines", "integer from 0 to 2000", "1.5"),
    ("sandbox_logs", {"name": "x", "lines": -1}, "lines", "integer from 0 to 2000", "-1"),
    ("sandbox_logs", {"name": "x", "lines": 2001}, "lines", "integer from 0 to 2000", "2001"),
    ("sandbox_create", {"name": "-x"}, "name", "must not start with '-'", '"-x"'),
    ("sandbox_create", {"name": 3}, "name", "non-empty string", "3 (number)"),
    ("sandbox_create", {"image": "--privileged"}, "image", "must not start with '-'", '"--pri'),
    ("sandbox_create", {"image": ""}, "image", "non-empty string", '"" (string)'),
    ("sandbox_create", {"command": "echo 'hi"}, "command", "No closing quotation", '"echo \'hi"'),
    ("sandbox_create", {"command": "echo \\"}, "command", "No escaped character", '"echo \\\\"'),
    ("sandbox_create", {"command": ["ls"]}, "command", "a command line as one string", '["ls"]'),
    ("sandbox_create", {"command": "ls\x00"}, "command", "must not contain NUL", '"ls\\u0000"'),
    ("sandbox_create", {"nmae": "x"}, "nmae", "accepted fields: name, image, command", '"x"'),
]


@pytest.mark.parametrize(
    ("name", "arguments", "field", "expected", "given"),
    BAD_ARGUMENTS,
    ids=[f"{case[0]}-{json.dumps(case[1])}" for case in BAD_ARGUMENTS],
)
def test_prepare_call_explains_bad_arguments(
    name: str, arguments: Any, field: str, expected: str, given: str
) -> None:
    error = refusal(name, arguments)
    assert error.status == "invalid"
    message = str(error)
    assert message.startswith(f"Invalid arguments for {name}; nothing was run.")
    [line] = [line for line in message.splitlines() if line.startswith(f"- {field}: ")]
    assert expected in line
    assert given in line
    assert message.splitlines()[-1].startswith("Expected arguments: {")


def test_prepare_call_reports_every_problem_at_once() -> None:
    message = str(refusal("sandbox_logs", {"name": "-x", "lines": "5", "extra": 1}))
    fields = [line.split(":")[0] for line in message.splitlines() if line.startswith("- ")]
    assert fields == ["- name", "- lines", "- extra"]


RAW_CASES = [
    ('{"name": "a" "b"}', "not valid JSON (Expecting ',' delimiter"),
    ("{name: 'a'}", "not valid JSON (Expecting property name enclosed in double quotes"),
    ('{"name": "a"', "not valid JSON"),
    ('["dev-box"]', "must be a JSON object, got array"),
    ('"dev-box"', "must be a JSON object, got string"),
    ("42", "must be a JSON object, got number"),
    ("null", "must be a JSON object, got null"),
    ('{"name": "a", "name": "b"}', "field 'name' is given more than once"),
]


@pytest.mark.parametrize("tool", ["sandbox_get", "sandbox_list"])
@pytest.mark.parametrize(("raw", "problem"), RAW_CASES, ids=[raw for raw, _ in RAW_CASES])
def test_prepare_call_explains_arguments_that_are_not_an_object(
    tool: str, raw: str, problem: str
) -> None:
    error = refusal(tool, raw=raw)
    assert error.status == "invalid"
    assert problem in str(error)
    assert f"given: {raw}" in str(error)


def test_prepare_call_shortens_a_huge_raw_argument_string() -> None:
    message = str(refusal("sandbox_get", raw="[" + "1," * 10_000 + "1]"))
    assert len(message) < 500
    assert "..." in message


@pytest.mark.parametrize("name", ["sandbox_restart", "bash", "", "SANDBOX_LIST"])
def test_prepare_call_unknown_tool_lists_the_real_ones(name: str) -> None:
    error = refusal(name)
    assert error.status == "unknown_tool"
    assert f"Unknown tool {name!r}" in str(error)
    assert all(tool in str(error) for tool in NAMES)


# --- the schema says exactly what the validator accepts -----------------------------------


def _accepts(name: str, arguments: dict[str, Any]) -> bool:
    try:
        prepare_call(call(name, arguments), cluster="demo")
    except InvalidToolCallError:
        return False
    return True


def _splits(arguments: dict[str, Any]) -> bool:
    """The one rule a JSON schema cannot state: the command must split like a shell line."""
    command = arguments.get("command")
    if not isinstance(command, str):
        return True
    try:
        shlex.split(command)
    except ValueError:
        return False
    return True


# hypothesis-jsonschema would do this, but 0.23 breaks on current hypothesis internals; our
# schemas use few keywords, and the generator refuses any keyword it does not know.
_UNDERSTOOD = {"type", "description", "minLength", "pattern", "minimum", "maximum"}


def _value_from(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    assert set(prop) <= _UNDERSTOOD, f"teach _value_from about {set(prop) - _UNDERSTOOD}"
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    options: list[st.SearchStrategy[Any]] = []
    for kind in types:
        if kind == "null":
            options.append(st.none())
        elif kind == "integer":
            options.append(st.integers(prop.get("minimum"), prop.get("maximum")))
        else:
            assert kind == "string"
            text = st.from_regex(prop.get("pattern", ""), fullmatch=True)
            options.append(text.filter(lambda s: len(s) >= prop.get("minLength", 0)))
    return st.one_of(options)


def _object_from(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    assert set(schema) <= {"type", "properties", "required", "additionalProperties"}
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {key: _value_from(prop) for key, prop in schema["properties"].items() if key in required},
        optional={
            key: _value_from(prop)
            for key, prop in schema["properties"].items()
            if key not in required
        },
    )


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_objects_generated_from_the_schema_are_accepted(name: str, data: st.DataObject) -> None:
    schema = TOOLS_BY_NAME[name].tool.parameters
    arguments = data.draw(_object_from(schema))
    assert jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert _accepts(name, arguments) == _splits(arguments)


_TRICKY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2003),
    st.sampled_from([0.0, 50.0, 1.5, -1.0, 2000.0, 2001.0, 1e300]),
    st.sampled_from(["", "-", "-x", "--all", "dev-box", "a\x00b", "x-", "echo 'hi", "ls -la"]),
    st.text(max_size=8),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_validator_agrees_with_the_schema_on_any_object(name: str, data: st.DataObject) -> None:
    schema = TOOLS_BY_NAME[name].tool.parameters
    keys = st.sampled_from([*schema["properties"], "extra", "Name"])
    # Start from a valid object so most examples sit next to the boundary.
    arguments: dict[str, Any] = data.draw(_object_from(schema))
    arguments |= data.draw(st.dictionaries(keys, _TRICKY))
    drop: bool = data.draw(st.booleans())
    if arguments and drop:
        del arguments[data.draw(st.sampled_from(sorted(arguments)))]
    valid = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert _accepts(name, arguments) == (valid and _splits(arguments))


_BOUNDARY_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 50, 2000, 2001, 0.0, 50.0, 2000.0, 2001.0, 1.5, 1e300,
    "", " ", "-", "-x", "--all", "x-", "dev-box", "a\x00b", "echo 'hi", "ls -la", "é\n", [], {},
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_validator_agrees_with_the_schema_next_to_every_boundary(name: str) -> None:
    schema = TOOLS_BY_NAME[name].tool.parameters
    validator = jsonschema.Draft202012Validator(schema)
    base = {"name": "dev-box"} if name in ONE_NAME else {}
    disagreements = [
        (key, value)
        for key in [*schema["properties"], "extra"]
        for value in _BOUNDARY_VALUES
        if _accepts(name, base | {key: value})
        != (validator.is_valid(base | {key: value}) and _splits({key: value}))
    ]
    assert not disagreements
