"""Which cluster the agent operates, chosen the way the real `nav` chooses it.

First match wins (reference/nav-cli.md section 2): `--cluster`; then
`NAVIGATOR_CLUSTER` (ignored when blank); then, for a resumed session, the
cluster it was recorded with; then the file
`$XDG_CONFIG_HOME/navigator/active_cluster` (default
`~/.config/navigator/active_cluster`, written by `nav cluster use NAME`),
trimmed, empty counting as unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from navagent.core.errors import NavAgentError

__all__ = [
    "CLUSTER_ENV",
    "NoClusterError",
    "active_cluster_file",
    "explicit_cluster",
    "resolve_cluster",
]

CLUSTER_ENV = "NAVIGATOR_CLUSTER"


class NoClusterError(NavAgentError):
    """No cluster was named anywhere; the message says how to name one."""


def active_cluster_file(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/navigator/active_cluster`, `~/.config/...` by default."""
    config = environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config) if config else Path(environ.get("HOME", "~")).expanduser() / ".config"
    return base / "navigator" / "active_cluster"


def explicit_cluster(flag: str | None, environ: Mapping[str, str]) -> str | None:
    """The cluster named by `--cluster` or `NAVIGATOR_CLUSTER`, if any."""
    for value in (flag, environ.get(CLUSTER_ENV)):
        if value is not None and value.strip():
            return value.strip()
    return None


def resolve_cluster(
    flag: str | None,
    *,
    session_cluster: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Return the cluster to operate.

    Raises:
        NoClusterError: nothing names a cluster.
    """
    env = os.environ if environ is None else environ
    chosen = explicit_cluster(flag, env) or (session_cluster or "").strip()
    if chosen:
        return chosen
    path = active_cluster_file(env)
    try:
        active = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        active = ""
    if active:
        return active
    raise NoClusterError(
        f"no cluster selected: pass --cluster NAME, set {CLUSTER_ENV}, or run"
        " `nav cluster use NAME` (or try the simulated one with `nav agent --demo`)"
    )
