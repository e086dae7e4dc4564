"""Count the places a new wire format (or a new tool) would have to touch.

Issue 22 asks for the number of files and places a fourth wire format
touches, and the same for a tenth tool, before and after the wire-format
registry. This script measures both the same way on any checkout, so the
two figures are comparable:

* a *place* is a source line, outside the files that belong to one format
  (its gateway package, its simulator plug-in, its registry row), that
  spells a format by name: a string literal equal to a format id, a route
  protocol name, a request path, a key variable or a default endpoint; an
  attribute or class field named after a format (`models.openai_responses`);
  or an import of one format's module. Each such line is somewhere a new
  format must be added by hand;
* a *test list* is a list, tuple, set or dict literal in `tests/` naming two
  or more formats: a hard-coded parametrisation a new format would miss;
* for tools, a place is a string literal equal to one of the nine tool names
  outside `core/tools.py` and `core/_tool_args.py` (where a tool is defined).

`fixtures/nav_sim/` is left out: "anthropic" there is a cluster credential
provider and the protocols are the seeded cluster's route data, not a wire
format the code speaks.

Usage: `.venv/bin/python bench/format_touchpoints.py [ROOT] [-v]` (ROOT
defaults to this checkout; `-v` lists every place).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

FORMAT_WORDS = frozenset(
    {
        "openai",
        "openai-responses",
        "anthropic",
        "openai_chat_completions",
        "openai_responses",
        "anthropic_messages",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/messages",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "https://api.openai.com",
        "https://api.anthropic.com",
    }
)
FIELD_WORDS = frozenset({"openai", "openai_responses", "anthropic"})
"""Attribute and class-field names that stand for a format (`models.openai_responses`)."""
FORMAT_MODULES = (
    "navagent.gateway.openai",
    "navagent.gateway.openai_responses",
    "navagent.gateway.anthropic",
    "navagent.fixtures.provider._openai_",
    "navagent.fixtures.provider._anthropic_",
    "navagent.fixtures.provider._responses_",
    "navagent.fixtures.provider.formats.",
)
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
SOURCE_DIRS = ("core", "gateway", "cli", "fixtures")


def _own_format_file(relative: str) -> bool:
    """A file that belongs to one format: adding a format adds a file like it."""
    parts = relative.split("/")
    name = parts[-1]
    return (
        relative == "core/wire_formats.py"
        or (parts[0] == "gateway" and len(parts) > 2 and parts[1] != "__pycache__")
        or (
            parts[:2] == ["fixtures", "provider"]
            and (name.startswith(("_openai_", "_anthropic_", "_responses_")) or "formats" in parts)
        )
    )


def _excluded(relative: str) -> bool:
    return relative.startswith("fixtures/nav_sim/") or relative == "core/_tool_args.py"


def _format_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in FORMAT_WORDS:
            lines.add(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in FIELD_WORDS:
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
                if isinstance(target, ast.Name) and target.id in FIELD_WORDS:
                    lines.add(statement.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
            if any(name.startswith(FORMAT_MODULES) for name in names):
                lines.add(node.lineno)
    return lines


def _test_lists(tree: ast.AST) -> int:
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
            if isinstance(item, ast.Constant) and item.value in FORMAT_WORDS
        }
        count += len(named) >= 2
    return count


def _tool_lines(tree: ast.AST) -> set[int]:
    return {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in TOOL_NAMES
    }


def measure(root: Path, *, verbose: bool = False) -> dict[str, int]:
    """Count format places, test lists and tool places under `root`."""
    format_places: dict[str, set[int]] = defaultdict(set)
    tool_places: dict[str, set[int]] = defaultdict(set)
    test_lists: dict[str, int] = {}
    for folder in (*SOURCE_DIRS, "tests"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if "_proto" in relative or _excluded(relative):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if folder == "tests":
                if found := _test_lists(tree):
                    test_lists[relative] = found
                continue
            if not _own_format_file(relative) and (lines := _format_lines(tree)):
                format_places[relative] = lines
            if relative not in ("core/tools.py", "core/_tool_args.py") and (
                tools := _tool_lines(tree)
            ):
                tool_places[relative] = tools
    if verbose:
        for title, table in (("format places", format_places), ("tool places", tool_places)):
            print(f"-- {title}")
            for relative, lines in table.items():
                print(f"  {relative}: {len(lines)} (lines {', '.join(map(str, sorted(lines)))})")
        print("-- test files with hard-coded format lists")
        for relative, found in test_lists.items():
            print(f"  {relative}: {found}")
    return {
        "format_files": len(format_places),
        "format_places": sum(len(lines) for lines in format_places.values()),
        "test_files_with_format_lists": len(test_lists),
        "test_format_lists": sum(test_lists.values()),
        "tool_files": len(tool_places),
        "tool_places": sum(len(lines) for lines in tool_places.values()),
    }


def main() -> None:
    """Print the counts for the checkout named on the command line (default: this one)."""
    arguments = [argument for argument in sys.argv[1:] if argument != "-v"]
    root = Path(arguments[0]) if arguments else Path(__file__).resolve().parent.parent
    counts = measure(root, verbose="-v" in sys.argv[1:])
    width = max(map(len, counts))
    for name, value in counts.items():
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
