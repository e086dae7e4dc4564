"""`nav sim ...`: run the simulators standalone.

Heavy imports happen inside the commands so `nav --help` stays fast.
"""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

__all__ = ["parse_listen", "sim_app"]

sim_app = typer.Typer(
    help="Run the simulated LLM provider (and other simulators) standalone.",
    no_args_is_help=True,
)


def parse_listen(value: str) -> tuple[str, int]:
    """Split `HOST:PORT` (`[::1]:PORT` for IPv6); port 0 picks a free port.

    Raises:
        typer.BadParameter: The value is not HOST:PORT with a port in 0-65535.
    """
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise typer.BadParameter(f"expected HOST:PORT (e.g. 127.0.0.1:8787), got {value!r}")
    return host.strip("[]"), int(port)


def _raise_file_limit() -> None:
    """Let one process hold the sockets of hundreds of concurrent streams."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


@sim_app.command("provider")
def provider(
    listen: Annotated[
        str,
        typer.Option(help="Address to listen on, HOST:PORT; port 0 picks a free one."),
    ] = "127.0.0.1:8787",
    pacing_ms: Annotated[
        float,
        typer.Option(min=0, help="Delay between streamed events in ms; 0 = as fast as possible."),
    ] = 0.0,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Print each plan's decision trace (the rules that fired) on stderr.",
        ),
    ] = False,
) -> None:
    r"""Serve the simulated OpenAI (Chat Completions, Responses) + Anthropic API until interrupted.

    OpenAI clients use base URL http://HOST:PORT/v1, Anthropic clients
    http://HOST:PORT; any non-empty API key is accepted. Set NAV_SIM_CLOCK
    (ISO-8601 UTC) to freeze timestamps.

    Faults: a marker such as \[sim-fault: http-429] or \[sim-fault: stall after=3]
    in the last user message makes that request fail (kinds http-401, http-429,
    http-500, http-529, error-mid-stream, reset, stall, invalid-json). A marker
    fires once per conversation: while it runs, the simulator remembers each
    conversation (every message up to the marked one) whose marker has fired,
    so a retry of the same request, or the same conversation sent again, gets
    a normal answer. times=N fails N requests (times=always: every one);
    step=N fails the Nth request of the turn instead of the first. Restart the
    simulator to make a marker fire again. Grammar: fixtures/provider/wire/_faults.py.
    """
    from navagent.fixtures.provider import SimulatedProvider

    if explain:
        import logging

        trace = logging.getLogger("navagent.fixtures.provider.model")
        trace.setLevel(logging.DEBUG)
        trace.addHandler(logging.StreamHandler())
    host, port = parse_listen(listen)
    _raise_file_limit()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        sim = SimulatedProvider(host=host, port=port, pacing_ms=pacing_ms).start()
    except OSError as error:
        typer.echo(f"nav sim provider: cannot listen on {listen}: {error.strerror}", err=True)
        raise typer.Exit(1) from None
    typer.echo(
        f"Simulated provider listening on {sim.base_url} "
        f"(OpenAI base URL {sim.openai_base_url}, Anthropic base URL {sim.base_url})"
    )
    try:
        stop.wait()
    finally:
        sim.stop()
    typer.echo("Simulated provider stopped.")
