"""Reading and writing YAML with aliases kept small: the one way the package touches YAML.

A YAML alias (`*name`) repeats the value its anchor (`&name`) marks. PyYAML
builds such a value once and shares it, so loading a "billion laughs"
document is quick, but whatever walks the result afterwards (validation,
JSON encoding, a replay comparing bodies) expands every repeat and grows
without bound. Scenario files, cassettes, tool cassettes and the gateway's
routes and callers files therefore go through `load_yaml`, which measures
what the document's aliases repeat before anything is built from it and
refuses, with the line of the alias that crosses `ALIAS_EXPANSION_LIMIT`,
a document that repeats more (or an alias inside the value it names). The
files the package writes never contain aliases (`NoAliasDumper`), so the
limit only ever meets hand-written anchors, which are small.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = [
    "ALIAS_EXPANSION_LIMIT",
    "FAST_SAFE_LOADER",
    "AliasExpansionError",
    "NoAliasDumper",
    "NoAliasSafeDumper",
    "load_yaml",
    "load_yaml_node",
    "yaml_problem",
]

ALIAS_EXPANSION_LIMIT = 100_000
"""What all of a document's aliases together may repeat: each repeated node
counts one, plus the characters of each repeated scalar."""

FAST_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FAST_SAFE_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# An anchor (`&name`) starts the text or follows one of these. Without an
# anchor no alias can resolve, so the measuring walk is skipped (most files:
# every recorded one, which never hold aliases).
_BEFORE_ANCHOR = frozenset(" \t\r\n\x85\u2028\u2029[]{},:?-\ufeff")
_NOT_IN_ANCHOR = frozenset(" \t\r\n[]{},")


class AliasExpansionError(yaml.MarkedYAMLError):
    """The document's aliases repeat too much, or an alias names a value it is inside."""


class _NoAliases:
    def ignore_aliases(self, data: Any) -> bool:  # noqa: ARG002 - every value, whatever it is
        """Never use an alias: a value used twice is written out twice."""
        return True


class NoAliasDumper(_NoAliases, _FAST_SAFE_DUMPER):  # type: ignore[valid-type,misc]
    """libyaml's safe dumper (when built), never writing `&anchor`/`*alias`."""


class NoAliasSafeDumper(_NoAliases, yaml.SafeDumper):
    """`yaml.safe_dump`'s dumper, never writing `&anchor`/`*alias`."""


def yaml_problem(exc: yaml.YAMLError, source: str) -> str:
    """`exc` as one sentence naming `source` and the line: `file:12: what is wrong`."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{source}:{mark.line + 1}" if mark is not None else source
    problem = getattr(exc, "problem", None) or str(exc)
    if isinstance(exc, AliasExpansionError):
        return f"{where}: {problem}"
    return f"{where}: not valid YAML: {problem}"


def load_yaml(text: str, *, loader: type[yaml.SafeLoader] = FAST_SAFE_LOADER) -> Any:
    """The single document in `text`, read with `loader`, its aliases measured first.

    Raises:
        AliasExpansionError: the aliases repeat more than `ALIAS_EXPANSION_LIMIT`,
            or one refers to a value it is inside (its mark is the alias).
        yaml.YAMLError: the text is not YAML (PyYAML's own errors).
    """
    return load_yaml_node(text, loader=loader)[0]


def load_yaml_node(
    text: str, *, loader: type[yaml.SafeLoader] = FAST_SAFE_LOADER
) -> tuple[Any, yaml.Node | None]:
    """As `load_yaml`, with the document's root node too (for the lines of later errors)."""
    reader = loader(text)
    try:
        root = reader.get_single_node()
        if root is None:
            return None, None
        if _may_hold_anchor(text):
            _measure_aliases(root, text, loader)
        return reader.construct_document(root), root
    finally:
        reader.dispose()


def _may_hold_anchor(text: str) -> bool:
    """Whether `text` has an `&` placed as an anchor is (a cheap over-approximation)."""
    at = text.find("&")
    while at != -1:
        after = text[at + 1 : at + 2]
        if (at == 0 or text[at - 1] in _BEFORE_ANCHOR) and after and after not in _NOT_IN_ANCHOR:
            return True
        at = text.find("&", at + 1)
    return False


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _own_size(node: yaml.Node) -> int:
    return 1 + len(node.value) if isinstance(node, yaml.ScalarNode) else 1


def _measure_aliases(root: yaml.Node, text: str, loader: type[yaml.SafeLoader]) -> None:
    """Walk the node graph in document order; a node met again is an alias's use.

    The composer hands every alias the very node its anchor made, so the
    graph's shared nodes are the aliases, met in the order they are written.
    """
    size: dict[int, int] = {}
    inside: set[int] = set()
    repeated = uses = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            size[key] = _own_size(node) + sum(size[id(child)] for child in _children(node))
            inside.discard(key)
            continue
        if key in inside:
            uses += 1
            raise _alias_error(text, loader, uses, "refers to a value it is inside of")
        if key in size:
            uses += 1
            repeated += size[key]
            if repeated > ALIAS_EXPANSION_LIMIT:
                raise _alias_error(
                    text,
                    loader,
                    uses,
                    f"takes what the document's aliases repeat past {ALIAS_EXPANSION_LIMIT:,}"
                    " values and characters; write the repeated part out instead",
                )
            continue
        inside.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(_children(node)))


def _alias_error(
    text: str, loader: type[yaml.SafeLoader], use: int, problem: str
) -> AliasExpansionError:
    """The error at the `use`-th alias written in `text` (found again only now, on failure)."""
    seen = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            seen += 1
            if seen == use:
                at = event.start_mark  # libyaml's own Mark type: copied into PyYAML's
                mark = None if at is None else yaml.Mark("", at.index, at.line, at.column, None, 0)
                return AliasExpansionError(
                    problem=f"the alias *{event.anchor} {problem}", problem_mark=mark
                )
    return AliasExpansionError(problem=f"an alias {problem}")  # pragma: no cover - counted above
