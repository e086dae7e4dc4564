"""This build's version, the one answer for everything that names it.

`nav --version`, the gateway's ready line and every recorded cassette's
metadata say which build they come from, so a bug report or a cassette can
be traced to a release. The version is the installed distribution's, which
setuptools-scm took from git when it was built (`pyproject.toml`); an
editable install keeps the version it was installed with until it is
installed again.
"""

from __future__ import annotations

import functools

__all__ = ["UNKNOWN_VERSION", "package_version", "recorded_by"]

UNKNOWN_VERSION = "0+unknown"
"""What a tree that is not installed (or built without git metadata) reports."""


@functools.cache
def package_version() -> str:
    """The installed nav-agent's version (`0.2.0`, `0.2.1.dev3+g1a2b3c4`), else `0+unknown`."""
    # Imported here: importlib.metadata costs ~40 ms, and only what shows a version needs it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nav-agent")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return UNKNOWN_VERSION


def recorded_by() -> str:
    """`nav-agent VERSION`: what a cassette's `metadata.recorded_by` says."""
    return f"nav-agent {package_version()}"
