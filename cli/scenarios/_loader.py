"""Reading scenario files, with errors a contributor can act on.

A malformed scenario fails with the file, the line, the path inside the
document (`turns[2].expect.tools[0].arguments`) and what was expected there,
for every problem at once. pydantic finds the problems; this module only says
them in the file's terms: it maps a validation error's location back to the
YAML node it came from (for the line) and rewrites pydantic's wording
("Extra inputs are not permitted") as what the format allows.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from navagent.cli.scenarios._model import Scenario
from navagent.core.errors import NavAgentError

__all__ = ["ScenarioError", "discover_scenarios", "load_scenario", "parse_scenario"]

SCENARIO_SUFFIXES = (".yaml", ".yml")


class ScenarioError(NavAgentError):
    """A scenario file that cannot be used; one line per problem, each naming file and path."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _render_location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _node_at(root: yaml.Node | None, loc: Sequence[int | str]) -> yaml.Node | None:
    """The deepest YAML node along `loc` (for its line number)."""
    node = root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next((value for key, value in node.value if key.value == part), None)
            if found is None:
                key = next((key for key, _ in node.value if key.value == part), None)
                return key or node
            node = found
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return node
            node = node.value[part]
        else:
            return node
    return node


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The scenario model class that the mapping at `loc` is validated as."""
    annotation: Any = Scenario
    for part in loc:
        model = _unwrap(annotation)
        if isinstance(part, int):
            annotation = model
            continue
        if model is None or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
    return _unwrap(annotation)


def _unwrap(annotation: Any) -> type[BaseModel] | None:
    """Find the model inside `X | None`, `tuple[X, ...]` and `Annotated[...]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, tuple, list, typing.Annotated):
        for argument in typing.get_args(annotation):
            found = _unwrap(argument)
            if found is not None:
                return found
    return None


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        kind = "a mapping"
    elif isinstance(value, list):
        kind = "a list"
    else:
        kind = type(value).__name__
    text = repr(value)
    return f"{kind}: {text if len(text) <= 60 else text[:57] + '...'}"


_EXPECTED = {
    "dict_type": "a mapping (key: value lines)",
    "model_type": "a mapping (key: value lines)",
    "tuple_type": "a list",
    "list_type": "a list",
    "string_type": "a string",
    "bool_type": "true or false (yes/no)",
    "bool_parsing": "true or false (yes/no)",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
}


def _problem(error: ErrorDetails) -> str:
    kind = error["type"]
    loc = error["loc"]
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = f" (allowed keys: {', '.join(model.model_fields)})" if model else ""
        return f"unknown key {loc[-1]!r}{allowed}"
    if kind == "too_short":
        minimum = (error.get("ctx") or {}).get("min_length", 1)
        return f"expected at least {minimum} item{'s' if minimum != 1 else ''}, got none"
    if kind == "string_too_short":
        return "expected a non-empty string"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_shown(error['input'])}"
    message = error["msg"].removeprefix("Value error, ")
    if message.startswith("Input should be"):
        message = "expected" + message.removeprefix("Input should be")
        return f"{message}, got {_shown(error['input'])}"
    return message


def _validation_problems(
    error: ValidationError, *, source: str, root: yaml.Node | None
) -> list[str]:
    details = error.errors()
    locations = [tuple(detail["loc"]) for detail in details]
    problems = []
    for detail in details:
        loc = list(detail["loc"])
        if detail["type"] == "too_short" and any(
            other[: len(loc)] == tuple(loc) and len(other) > len(loc) for other in locations
        ):
            continue  # pydantic counts only the items that validated; the items' errors say why
        node = _node_at(root, loc)
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        problems.append(f"{source}{line}: {_render_location(loc)}: {_problem(detail)}")
    return problems


def parse_scenario(text: str, *, source: str, expected_id: str | None = None) -> Scenario:
    """Validate one scenario document.

    Args:
        text: The YAML text.
        source: Where it came from, for messages (usually the file path).
        expected_id: The file name stem; the scenario's `id` must equal it.

    Raises:
        ScenarioError: the text is not YAML, or not a valid scenario; one
            line per problem, each `source:line: path: what was expected`.
    """
    try:
        root = yaml.compose(text, Loader=_UniqueKeyLoader)
        document = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ScenarioError([f"{source}{line}: not valid YAML: {exc.problem}"]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([f"{source}: not valid YAML: {exc}"]) from None
    if not isinstance(document, dict):
        raise ScenarioError(
            [f"{source}: expected a mapping with id, description and turns, got {_shown(document)}"]
        )
    try:
        scenario = Scenario.model_validate(document)
    except ValidationError as exc:
        raise ScenarioError(_validation_problems(exc, source=source, root=root)) from None
    if expected_id is not None and scenario.id != expected_id:
        node = _node_at(root, ["id"])
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        raise ScenarioError(
            [
                f"{source}{line}: id: expected {expected_id!r} (the file name), "
                f"got {scenario.id!r}; the id names the cassettes, so the two must agree"
            ]
        )
    return scenario.with_source(source)


def load_scenario(path: Path) -> Scenario:
    """Read and validate one scenario file; its `id` must be the file name.

    Raises:
        ScenarioError: unreadable, not YAML, or not a valid scenario.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError([f"{path}: cannot read the scenario: {reason}"]) from None
    return parse_scenario(text, source=str(path), expected_id=path.stem)


def discover_scenarios(paths: Iterable[Path]) -> list[Scenario]:
    """Load every scenario named by `paths` (files, or folders searched for `*.yaml`).

    Scenarios are returned sorted by id; every file is read, so all the
    problems of all the files are reported together.

    Raises:
        ScenarioError: a path does not exist, a file is invalid, two files
            share an id, or nothing was found.
    """
    roots = list(paths)
    files: list[Path] = []
    problems: list[str] = []
    for path in roots:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in SCENARIO_SUFFIXES)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{path}: no such scenario file or folder")
    scenarios: dict[str, Scenario] = {}
    for file in files:
        try:
            scenario = load_scenario(file)
        except ScenarioError as exc:
            problems += exc.problems
            continue
        if scenario.id in scenarios:
            first = scenarios[scenario.id].source
            problems.append(f"{file}: id {scenario.id!r} is already used by {first}")
            continue
        scenarios[scenario.id] = scenario
    if problems:
        raise ScenarioError(problems)
    if not scenarios:
        raise ScenarioError([f"no scenario files (*.yaml) in {', '.join(map(str, roots))}"])
    return [scenarios[key] for key in sorted(scenarios)]
