"""`nav --version` names the installed build (setuptools-scm's version from git)."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.version import package_version, recorded_by


def test_nav_version_prints_the_installed_build() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"nav {version('nav-agent')}\n"
    assert package_version() == version("nav-agent") != "0.1.0"  # not the old fixed number
    assert recorded_by() == f"nav-agent {version('nav-agent')}"
