"""`nav agent` and `nav agent sessions`: typer wiring only.

The group's callback runs the agent when no subcommand is given. Everything
heavy (grpc, the gateway, prompt_toolkit) is imported inside the functions so
`nav --help` stays fast; the work happens in `navagent.cli.launch`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from navagent.core.wire_formats import FORMAT_IDS, WIRE_FORMATS

__all__ = ["agent_app"]

if TYPE_CHECKING:
    DemoFormat = str
else:  # typer offers the registered wire formats as the choices
    DemoFormat = Literal[FORMAT_IDS]

agent_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
    subcommand_metavar="[sessions ...]",
)
_EXAMPLES = (
    "Examples:\n\n"
    "  nav agent --demo                              # try it: simulated model and cluster\n\n"
    "  NAV_AGENT_CLI=/usr/local/bin/nav nav agent --cluster prod\n\n"
    '  nav agent -p "list my sandboxes" > answer.txt  # one message, answer only on stdout\n\n'
    "  nav agent --session incident-42               # resume (or start) a named conversation\n\n"
    "  nav agent --continue                          # resume the most recent one\n\n"
    "  nav agent --routes routes.yaml --record gpu-logs   # gateway in process; write a test\n\n"
    "  nav agent sessions export incident-42 -o incident-42.md"
)

_CONNECTION = "Gateway connection"
_SESSION = "Sessions"
_MODE = "Input and output"
_DEMO = "Demo"
_RECORD = "Turning the conversation into a test"


@agent_app.callback(epilog=_EXAMPLES)
def agent(
    ctx: typer.Context,
    cluster: Annotated[
        str | None,
        typer.Option(
            help="Cluster the tools operate (else $NAVIGATOR_CLUSTER, else the"
            " active_cluster file that `nav cluster use` writes).",
            show_default=False,
        ),
    ] = None,
    gateway: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="The Chat gateway to talk to (else $NAV_AGENT_GATEWAY).",
            show_default="127.0.0.1:50051",
            rich_help_panel=_CONNECTION,
        ),
    ] = None,
    routes: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Run the gateway inside nav agent with this routes file (as `nav gateway"
            " serve --routes` reads it; keys from the environment) instead of connecting"
            " to one.",
            rich_help_panel=_CONNECTION,
        ),
    ] = None,
    tls_ca: Annotated[
        Path | None,
        typer.Option(
            help="CA bundle (PEM) that signs the gateway's certificate; enables TLS.",
            rich_help_panel=_CONNECTION,
        ),
    ] = None,
    tls_cert: Annotated[
        Path | None,
        typer.Option(help="Client certificate (PEM) for mutual TLS.", rich_help_panel=_CONNECTION),
    ] = None,
    tls_key: Annotated[
        Path | None,
        typer.Option(help="Client private key (PEM) for mutual TLS.", rich_help_panel=_CONNECTION),
    ] = None,
    auth_token_env: Annotated[
        str | None,
        typer.Option(
            metavar="VAR",
            help="Send `authorization: Bearer <token>`, the token read from this variable.",
            rich_help_panel=_CONNECTION,
        ),
    ] = None,
    connect_timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds to wait for the gateway at start-up.",
            rich_help_panel=_CONNECTION,
        ),
    ] = 5.0,
    routing_hint: Annotated[
        str, typer.Option(help="Which gateway route answers.", rich_help_panel=_CONNECTION)
    ] = "agent",
    system_prompt: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Use this file's text as the system prompt."),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Create and delete sandboxes without asking first."),
    ] = False,
    max_iterations: Annotated[
        int, typer.Option(min=1, help="Model calls per message before the agent stops.")
    ] = 20,
    session: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Resume the session NAME, or start one with that name.",
            rich_help_panel=_SESSION,
        ),
    ] = None,
    continue_last: Annotated[
        bool,
        typer.Option(
            "--continue", help="Resume the most recent session.", rich_help_panel=_SESSION
        ),
    ] = False,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            "-p",
            metavar="MESSAGE",
            help="Answer one message and exit.",
            rich_help_panel=_MODE,
        ),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the event stream as JSON lines (for scripts).",
            rich_help_panel=_MODE,
        ),
    ] = False,
    no_markdown: Annotated[
        bool,
        typer.Option(
            "--no-markdown",
            help="Print answers as raw text, not rendered markdown (piped output always is).",
            rich_help_panel=_MODE,
        ),
    ] = False,
    record: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="When the conversation ends, write it as scenario NAME with its provider and"
            " tool cassettes, to replay offline in CI (needs --routes or --demo; /record NAME"
            " does the same from the REPL).",
            rich_help_panel=_RECORD,
        ),
    ] = None,
    scenario_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Where --record and /record write the scenario (its cassettes go to"
            " cassettes/ beside DIR).",
            show_default="nav_scenarios in ./pyproject.toml, else ./scenarios",
            rich_help_panel=_RECORD,
        ),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Run everything locally, simulated: no keys, no network.",
            rich_help_panel=_DEMO,
        ),
    ] = False,
    demo_provider: Annotated[
        DemoFormat,
        typer.Option(
            help="Wire format the simulated model speaks ("
            + ", ".join(f"{row.id}: {row.display_name}" for row in WIRE_FORMATS.values())
            + ").",
            rich_help_panel=_DEMO,
        ),
    ] = FORMAT_IDS[0],
) -> None:
    """Chat with an agent that operates your Navigator cluster through `nav`.

    Interactive when stdin and stdout are terminals; otherwise each stdin line
    is one message and only answers go to stdout. Try `nav agent --demo`.
    """
    if ctx.invoked_subcommand is not None:
        return
    from navagent.cli.launch import AgentOptions, run_agent

    code = run_agent(
        AgentOptions(
            cluster=cluster,
            gateway=gateway,
            routes=routes,
            record=record,
            scenario_dir=scenario_dir,
            tls_ca=tls_ca,
            tls_cert=tls_cert,
            tls_key=tls_key,
            auth_token_env=auth_token_env,
            routing_hint=routing_hint,
            system_prompt=system_prompt,
            assume_yes=yes,
            max_iterations=max_iterations,
            session=session,
            continue_last=continue_last,
            prompt=prompt,
            json_output=json_output,
            markdown=not no_markdown,
            demo=demo,
            demo_provider=demo_provider,
            connect_timeout_s=connect_timeout,
        )
    )
    raise typer.Exit(code)


sessions_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
    subcommand_metavar="[rm|rename|export ...]",
    help="List saved conversations, most recent first (resume one with --session).",
)
agent_app.add_typer(sessions_app, name="sessions")


@sessions_app.callback()
def sessions(
    ctx: typer.Context,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print a JSON array instead of a table.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 50,
) -> None:
    """List saved conversations, most recent first (resume one with --session)."""
    if ctx.invoked_subcommand is not None:
        return
    from navagent.cli.sessions_view import show_sessions

    raise typer.Exit(show_sessions(json_output=json_output, limit=limit))


_SESSION_ARG = typer.Argument(metavar="SESSION", help="A session's name, id, or id prefix.")


@sessions_app.command("rm")
def sessions_rm(session: Annotated[str, _SESSION_ARG]) -> None:
    """Delete a saved conversation."""
    from navagent.cli.sessions_view import remove_session

    raise typer.Exit(remove_session(session))


@sessions_app.command("rename")
def sessions_rename(
    session: Annotated[str, _SESSION_ARG],
    new_name: Annotated[str, typer.Argument(metavar="NEW_NAME", help="The new name.")],
) -> None:
    """Give a saved conversation a (new) name, to resume it with --session NEW_NAME."""
    from navagent.cli.sessions_view import rename_session

    raise typer.Exit(rename_session(session, new_name))


@sessions_app.command("export")
def sessions_export(
    session: Annotated[str, _SESSION_ARG],
    json_output: Annotated[
        bool, typer.Option("--json", help="JSON (metadata and messages), not markdown.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write here instead of stdout."),
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Write it as scenario NAME with its provider and tool cassettes instead (for a"
            " session run with --routes or --demo, whose bytes were recorded).",
        ),
    ] = None,
    scenario_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Where --scenario writes.",
            show_default="nav_scenarios in ./pyproject.toml, else ./scenarios",
        ),
    ] = None,
) -> None:
    """Print a saved conversation as a markdown transcript (or JSON), or write it as a scenario."""
    from navagent.cli.sessions_view import export_scenario, export_session

    if scenario is not None:
        if json_output or output is not None:
            typer.echo("--scenario writes files of its own: drop --json and --output", err=True)
            raise typer.Exit(2)
        raise typer.Exit(export_scenario(session, scenario, scenario_dir=scenario_dir))
    raise typer.Exit(export_session(session, as_json=json_output, output=output))
