"""What the gateway's two YAML files (routes, callers) share: reading them, and naming typos."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from navagent.core.errors import NavAgentError
from navagent.core.safe_yaml import load_yaml

__all__ = ["nearest_key", "read_yaml_file"]


def read_yaml_file(path: Path, *, what: str, error: type[NavAgentError]) -> Any:
    """The parsed document of `path`, or `error` naming the file and where it broke.

    `what` names the file in the text ("routes file"). A YAML error says the
    line and column, never the text around it (the file may hold secrets).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise error(f"{path}: not valid YAML{at}: {problem}") from None


def nearest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` is most likely a typo of, if any."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return close[0] if close else None
