"""The `nav` typer application: wiring only.

Each command group lives in its own module and imports its heavy dependencies
inside the command, so `nav --help` stays fast.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import typer
import typer.main

__all__ = ["app", "main", "tidy_help"]

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


def _show_version(value: bool) -> None:
    if value:
        from navagent.core.version import package_version

        typer.echo(f"nav {package_version()}")
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


def tidy_help(command: Any) -> Any:
    """Drop the `<bool>` type typer shows for on/off flags, in every command's help.

    A flag takes no value, so a type in its help only suggests one. `command`
    is the click command typer builds (typer vendors click, hence `Any`).
    """
    for param in command.params:
        _untyped_flag(param)
    make_help_option = command.get_help_option

    def help_option(ctx: Any) -> Any:
        return _untyped_flag(make_help_option(ctx))

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)
    return command


def _untyped_flag(param: Any) -> Any:
    if getattr(param, "is_flag", False) and not getattr(param, "count", False):
        param.metavar = ""
    return param


def main() -> None:
    """Console-script entry point.

    The gateway logs through `logging`. `nav gateway serve` sends those
    records to stderr through the redacting formatter; everywhere else (an
    in-process gateway in `nav agent` or `nav scenario replay`) they would
    reach Python's last-resort handler, unredacted and in the middle of the
    user's screen: the failures they describe already reach the user as
    error events or replay results, so they go nowhere.
    """
    logging.getLogger("navagent").addHandler(logging.NullHandler())
    tidy_help(typer.main.get_command(app))(prog_name="nav")
