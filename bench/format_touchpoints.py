"""Count the places a new wire format (or a new tool) would have to touch.

Issue 22 asked for the number of files and places a new wire format touches,
and the same for a tenth tool; issue 30 asked that the count come from the
code, tests and scenario files included, not from a word list of its own. So
the words are read from the measured checkout's own registry
(`core/wire_formats.py`, loaded from that checkout, standard library only):

* a *format word* is a row's id, route protocol, request path, key variable,
  default endpoint or scenario `models:` key; a *format module* is a row's
  gateway package or simulator plug-in;
* a *place* is a line, outside the files that belong to one format, that
  spells a format: in Python, a string constant equal to a format word or
  holding one as a token (`"scenarios/x.yaml::anthropic"`; docstrings are
  prose, not places), an attribute or
  class field named after a format (`models.openai_responses`), or an import
  of a format module; in a YAML file of `scenarios/` or `tests/`, a line with
  a format word as a token (a key, a list item: `thinking: [anthropic, ...]`).
  Each is somewhere a new format may have to be added by hand;
* a file *belongs to one format* when it is the registry, lives in a row's
  gateway package, simulator package or transcript folder
  (`fixtures/sse/<id>/`), or is a test named after one format
  (`test_anthropic_stream.py`, `test_gemini_request.py`): adding a format
  adds files like these. Cassettes are recordings, never places;
* a *test list* is a list, tuple, set or dict literal in `tests/` naming two
  or more formats: a hard-coded parametrisation a new format would miss;
* for tools, a place is a string literal equal to one of the nine tool names
  outside `core/tools.py` and `core/_tool_args.py` (where a tool is defined).

`fixtures/nav_sim/` is left out: "anthropic" there is a cluster credential
provider and the protocols are the seeded cluster's route data, not a wire
format the code speaks.

Usage: `.venv/bin/python bench/format_touchpoints.py [ROOT] [-v] [--places]`
(ROOT defaults to this checkout; `-v` lists every place; `--places` prints
one `file:line` per place, for diffing two checkouts).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

TOOL_NAMES = frozenset(
    {
        "cluster_status",
        "sandbox_list",
        "sandbox_get",
        "sandbox_create",
        "sandbox_delete",
        "sandbox_logs",
        "provider_list",
        "provider_get",
        "inference_route_list",
    }
)
SOURCE_DIRS = ("core", "gateway", "cli", "fixtures", "tests")
YAML_DIRS = ("scenarios", "tests")
_TOKEN = re.compile(r"[\s:/\[\]{}(),=#'\"`<>|;]+")
"""What separates tokens in a string or a YAML line (not `-`, `_` or `.`)."""


class Registry:
    """The format words of one checkout, read from its own `core/wire_formats.py`."""

    def __init__(self, root: Path) -> None:
        spec = importlib.util.spec_from_file_location(
            "_measured_wire_formats", root / "core" / "wire_formats.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        rows: list[Any] = list(module.WIRE_FORMATS.values())
        self.ids = tuple(row.id for row in rows)
        self.words = frozenset(
            word
            for row in rows
            for word in (
                row.id,
                row.protocol,
                row.path,
                row.key_env,
                row.default_endpoint,
                row.id.replace("-", "_"),
            )
        )
        self.fields = frozenset(row.id.replace("-", "_") for row in rows)
        self.modules = tuple(
            dict.fromkeys(module for row in rows for module in (row.gateway, row.simulator))
        )
        self.own_folders = tuple(
            dict.fromkeys(
                folder
                for row in rows
                for folder in (
                    _folder(row.gateway),
                    _folder(row.simulator),
                    f"fixtures/sse/{row.id}/",
                )
            )
        )
        self.names = tuple(
            dict.fromkeys(
                name
                for row in rows
                for name in (row.id.replace("-", "_"), row.gateway.rsplit(".", 1)[1])
            )
        )

    def owns(self, relative: str) -> bool:
        """True for a file that belongs to one format (see the module docstring)."""
        if relative == "core/wire_formats.py" or relative.startswith(self.own_folders):
            return True
        name = relative.rsplit("/", 1)[-1]
        if not (relative.startswith("tests/") and name.startswith("test_")):
            return False
        stem = name.removeprefix("test_").removesuffix(".py")
        return any(stem == n or stem.startswith(f"{n}_") for n in self.names)

    def spelled(self, text: str) -> bool:
        """True when `text` is a format word or holds one as a token."""
        return text in self.words or any(
            token in self.words for token in _TOKEN.split(text) if token
        )


def _folder(module: str) -> str:
    """`navagent.gateway.anthropic` -> `gateway/anthropic/` (the checkout's layout)."""
    return "/".join(module.split(".")[1:]) + "/"


def _excluded(relative: str) -> bool:
    return relative.startswith("fixtures/nav_sim/") or "_proto" in relative


def _format_lines(tree: ast.AST, registry: Registry) -> set[int]:
    lines: set[int] = set()
    # Docstrings and other bare strings document, they are not places to edit.
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if id(node) in prose:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if registry.spelled(node.value):
                lines.add(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in registry.fields:
            lines.add(node.lineno)
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                target = (
                    statement.target
                    if isinstance(statement, ast.AnnAssign)
                    else statement.targets[0]
                    if isinstance(statement, ast.Assign)
                    else None
                )
                if isinstance(target, ast.Name) and target.id in registry.fields:
                    lines.add(statement.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
            if any(name.startswith(registry.modules) for name in names):
                lines.add(node.lineno)
    return lines


def _test_lists(tree: ast.AST, registry: Registry) -> int:
    count = 0
    for node in ast.walk(tree):
        items: list[ast.expr | None] = []
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        named = {
            item.value
            for item in items
            if isinstance(item, ast.Constant) and item.value in registry.words
        }
        count += len(named) >= 2
    return count


def _tool_lines(tree: ast.AST) -> set[int]:
    return {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in TOOL_NAMES
    }


def _yaml_lines(path: Path, registry: Registry) -> set[int]:
    lines = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        content = line.split(" #", 1)[0]
        if not content.lstrip().startswith("#") and registry.spelled(content.strip()):
            lines.add(number)
    return lines


def places(root: Path) -> tuple[dict[str, set[int]], dict[str, set[int]], dict[str, int]]:
    """Format places, tool places and test lists under `root`, by file."""
    registry = Registry(root)
    format_places: dict[str, set[int]] = defaultdict(set)
    tool_places: dict[str, set[int]] = defaultdict(set)
    test_lists: dict[str, int] = {}
    for folder in SOURCE_DIRS:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if _excluded(relative):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if folder == "tests" and (found := _test_lists(tree, registry)):
                test_lists[relative] = found
            if not registry.owns(relative) and (lines := _format_lines(tree, registry)):
                format_places[relative] = lines
            if (
                folder != "tests"
                and relative not in ("core/tools.py", "core/_tool_args.py")
                and (tools := _tool_lines(tree))
            ):
                tool_places[relative] = tools
    for folder in YAML_DIRS:
        for path in sorted((root / folder).rglob("*.yaml")):
            relative = path.relative_to(root).as_posix()
            if "__snapshots__" not in relative and (lines := _yaml_lines(path, registry)):
                format_places[relative] = lines
    return format_places, tool_places, test_lists


def measure(root: Path, *, verbose: bool = False) -> dict[str, int]:
    """Count format places (code, tests, scenario files), test lists and tool places."""
    format_places, tool_places, test_lists = places(root)
    if verbose:
        for title, table in (("format places", format_places), ("tool places", tool_places)):
            print(f"-- {title}")
            for relative, lines in table.items():
                print(f"  {relative}: {len(lines)} (lines {', '.join(map(str, sorted(lines)))})")
        print("-- test files with hard-coded format lists")
        for relative, found in test_lists.items():
            print(f"  {relative}: {found}")
    source = {k: v for k, v in format_places.items() if not k.startswith(("tests/", "scenarios/"))}
    tests = {k: v for k, v in format_places.items() if k.startswith("tests/")}
    yaml = {k: v for k, v in format_places.items() if k.startswith("scenarios/")}
    return {
        "format_files": len(format_places),
        "format_places": sum(len(lines) for lines in format_places.values()),
        "format_places_in_source": sum(len(lines) for lines in source.values()),
        "format_places_in_tests": sum(len(lines) for lines in tests.values()),
        "format_places_in_scenarios": sum(len(lines) for lines in yaml.values()),
        "test_files_with_format_lists": len(test_lists),
        "test_format_lists": sum(test_lists.values()),
        "tool_files": len(tool_places),
        "tool_places": sum(len(lines) for lines in tool_places.values()),
    }


def main() -> None:
    """Print the counts for the checkout named on the command line (default: this one)."""
    flags = {argument for argument in sys.argv[1:] if argument.startswith("-")}
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("-")]
    root = Path(arguments[0]) if arguments else Path(__file__).resolve().parent.parent
    if "--places" in flags:
        format_places, _, _ = places(root)
        for relative, lines in sorted(format_places.items()):
            for line in sorted(lines):
                print(f"{relative}:{line}")
        return
    counts = measure(root, verbose="-v" in flags)
    width = max(map(len, counts))
    for name, value in counts.items():
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
