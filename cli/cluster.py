"""Which cluster the agent operates, chosen the way the real `nav` chooses it.

First match wins (reference/nav-cli.md section 2): `--cluster`; then
`NAVIGATOR_CLUSTER` (ignored when blank); then, for a resumed session, the
cluster it was recorded with; then the file
`$XDG_CONFIG_HOME/navigator/active_cluster` (default
`~/.config/navigator/active_cluster`, written by `nav cluster use NAME`),
trimmed, empty counting as unset.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from navagent.core.errors import NavAgentError

__all__ = [
    "CLUSTER_ENV",
    "HIDDEN_CLUSTER_ENDPOINT",
    "ClusterPrivate",
    "NoClusterError",
    "active_cluster_file",
    "cluster_private",
    "explicit_cluster",
    "resolve_cluster",
]

CLUSTER_ENV = "NAVIGATOR_CLUSTER"


class NoClusterError(NavAgentError):
    """No cluster was named anywhere; the message says how to name one."""


HIDDEN_CLUSTER_ENDPOINT = "https://cluster-endpoint.invalid"
"""Stands for the cluster's gateway endpoint in recordings."""
HIDDEN_CLUSTER_HOST = "cluster-host.invalid"
_PEM_LINE = re.compile(r"^[A-Za-z0-9+/=]{32,}$")


def _navigator_config(environ: Mapping[str, str]) -> Path:
    config = environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config) if config else Path(environ.get("HOME", "~")).expanduser() / ".config"
    return base / "navigator"


def active_cluster_file(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/navigator/active_cluster`, `~/.config/...` by default."""
    return _navigator_config(environ) / "active_cluster"


@dataclass(frozen=True)
class ClusterPrivate:
    """What a recording of a session on a cluster must not keep."""

    hidden: Mapping[str, str] = field(default_factory=dict)
    """Values replaced wherever they appear (the endpoint, its hosts) -> their stand-in."""
    secrets: tuple[str, ...] = ()
    """Certificate and key material: a recording holding any of it is refused."""


def cluster_private(name: str, environ: Mapping[str, str] | None = None) -> ClusterPrivate:
    """The endpoint and certificate material of cluster `name`, from nav's own files.

    `clusters/<name>_metadata.json` (`gateway_endpoint`, `remote_host`,
    `resolved_host`) and `clusters/<name>/mtls/*` under
    `$XDG_CONFIG_HOME/navigator`, as the real `nav` lays them out
    (reference/nav-cli.md section 2). Missing files mean nothing to hide.
    """
    env = os.environ if environ is None else environ
    clusters = _navigator_config(env) / "clusters"
    hidden: dict[str, str] = {}
    try:
        metadata = json.loads((clusters / f"{name}_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        metadata = {}
    if isinstance(metadata, dict):
        endpoint = metadata.get("gateway_endpoint")
        if isinstance(endpoint, str) and endpoint.strip():
            hidden[endpoint.strip().rstrip("/")] = HIDDEN_CLUSTER_ENDPOINT
        for key in ("remote_host", "resolved_host"):
            host = metadata.get(key)
            if isinstance(host, str) and len(host.strip()) >= 4:
                hidden[host.strip()] = HIDDEN_CLUSTER_HOST
    secrets: list[str] = []
    folder = clusters / re.sub(r"[^A-Za-z0-9._-]", "_", name) / "mtls"
    for path in sorted(folder.glob("*")) if folder.is_dir() else ():
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        secrets += [line.strip() for line in lines if _PEM_LINE.match(line.strip())]
    return ClusterPrivate(hidden=hidden, secrets=tuple(dict.fromkeys(secrets)))


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
