"""The `nav` typer application: wiring only.

Each command group lives in its own module and imports its heavy dependencies
inside the command, so `nav --help` stays fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="nav",
    help="Operate a Navigator cluster with an LLM agent.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_commands() -> None:
    from navagent.cli.agent_cmd import agent_app
    from navagent.cli.gateway_cmd import gateway_app
    from navagent.cli.scenario_cmd import scenario_app
    from navagent.cli.sim_cmd import sim_app

    app.add_typer(agent_app, name="agent")
    app.add_typer(gateway_app, name="gateway")
    app.add_typer(scenario_app, name="scenario")
    app.add_typer(sim_app, name="sim")


def _package_version() -> str:
    # Imported here: importlib.metadata costs ~40 ms, and only --version needs it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nav-agent")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "0+unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"nav {_package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Show the version and exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Operate a Navigator cluster with an LLM agent."""


_register_commands()


def main() -> None:
    """Console-script entry point."""
    app()
