"""`nav gateway serve`: run the Chat gRPC gateway."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

__all__ = ["gateway_app"]


class LogLevel(StrEnum):
    """The log levels `--log-level` accepts."""

    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


gateway_app = typer.Typer(help="Run the Chat gRPC gateway.", no_args_is_help=True)


@gateway_app.command(
    "serve",
    epilog=(
        "Examples:\n\n"
        "  nav gateway serve --routes routes.yaml\n\n"
        "  NAV_GATEWAY_TOKEN=s3cret nav gateway serve --routes routes.yaml"
        " --listen 0.0.0.0:50051 --auth-token-env NAV_GATEWAY_TOKEN"
        " --tls-cert server.pem --tls-key server-key.pem"
    ),
)
def serve(
    listen: Annotated[
        str | None,
        typer.Option(
            help="HOST:PORT to listen on. Env: NAV_GATEWAY_LISTEN. Default: 127.0.0.1:50051."
        ),
    ] = None,
    routes: Annotated[
        Path | None,
        typer.Option(help="Routes YAML file. Env: NAV_GATEWAY_ROUTES."),
    ] = None,
    auth_token_env: Annotated[
        str | None,
        typer.Option(
            help="Require `authorization: Bearer <token>`, the token read from this variable."
        ),
    ] = None,
    tls_cert: Annotated[Path | None, typer.Option(help="Server certificate (PEM).")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="Server private key (PEM).")] = None,
    tls_client_ca: Annotated[
        Path | None,
        typer.Option(help="Require client certificates signed by this CA (mutual TLS)."),
    ] = None,
    max_concurrent_streams: Annotated[
        int | None, typer.Option(help="Streams served at once; more get RESOURCE_EXHAUSTED.")
    ] = None,
    max_request_bytes: Annotated[int | None, typer.Option(help="Largest request accepted.")] = None,
    grace_period: Annotated[
        float | None, typer.Option(help="Seconds in-flight streams get to finish on shutdown.")
    ] = None,
    connect_timeout: Annotated[
        float | None, typer.Option(help="Seconds to connect to a provider (default 10).")
    ] = None,
    first_token_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds from request to the provider's first output (default 60)."),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a provider stream may stay silent (default 60)."),
    ] = None,
    attempts_per_route: Annotated[
        int | None,
        typer.Option(help="Tries per route on retryable errors before failing over (default 3)."),
    ] = None,
    max_stream_duration: Annotated[
        float | None,
        typer.Option(help="Seconds a stream may last, however busy (default 1800)."),
    ] = None,
    max_message_bytes: Annotated[
        int | None,
        typer.Option(
            help="Largest message sent to a client; a longer final answer is an error "
            "(default 4 MiB - 64 KiB, under gRPC's default 4 MiB receive limit)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Server processes sharing the port, one event loop each; 1 runs a single "
            "process without a supervisor. Env: NAV_GATEWAY_WORKERS. Default: one per CPU this "
            "process may use (affinity, cgroup quota); more than 4 per CPU is refused."
        ),
    ] = None,
    worker_timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds a worker may go without a heartbeat (stopped or wedged) before it "
            "is killed and replaced. Env: NAV_GATEWAY_WORKER_TIMEOUT. Default: 30."
        ),
    ] = None,
    health_listen: Annotated[
        str | None,
        typer.Option(
            help="HOST:PORT serving only gRPC health in plaintext, for probes of a TLS "
            "gateway. Env: NAV_GATEWAY_HEALTH_LISTEN. Default: off."
        ),
    ] = None,
    metrics_listen: Annotated[
        str | None,
        typer.Option(
            help="HOST:PORT serving Prometheus metrics (summed over workers). "
            "Env: NAV_GATEWAY_METRICS_LISTEN. Default: off."
        ),
    ] = None,
    callers: Annotated[
        Path | None,
        typer.Option(
            help="Callers YAML file: each caller's token hash, routing hints and stream "
            "limit. Env: NAV_GATEWAY_CALLERS."
        ),
    ] = None,
    caller_store: Annotated[
        str | None,
        typer.Option(
            help="Redis URL (redis://HOST:PORT/DB, rediss://, unix:///PATH) where callers' "
            "max_concurrent_streams are counted across replicas; fails open to each "
            "replica's own count while unreachable. Env: NAV_GATEWAY_CALLER_STORE. "
            "Default: off (counted per replica).",
        ),
    ] = None,
    pid_file: Annotated[
        Path | None,
        typer.Option(
            help="Write the gateway's pid here, for `nav gateway reload`. "
            "Env: NAV_GATEWAY_PID_FILE."
        ),
    ] = None,
    log_level: Annotated[
        LogLevel, typer.Option(help="debug, info, warning or error.", case_sensitive=False)
    ] = LogLevel.info,
) -> None:
    """Serve navigator.chat.v1.Chat, translating to the routes' providers."""
    import logging
    import os
    import signal
    from functools import partial

    from pydantic import ValidationError

    # A reload asked for before the handlers are in place waits for them (the
    # mask is inherited by every thread and worker started from here).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})

    from navagent.gateway._instance import PidFile
    from navagent.gateway._loop import run as run_on_fastest_loop
    from navagent.gateway.callers import CallersError
    from navagent.gateway.config import load_config
    from navagent.gateway.routes import RoutesError
    from navagent.gateway.server import serve as run_gateway
    from navagent.gateway.server import server_credentials
    from navagent.gateway.settings import GatewaySettings, environment_warnings
    from navagent.gateway.workers import Supervisor

    overrides: dict[str, Any] = {
        "listen": listen,
        "routes": routes,
        "auth_token_env": auth_token_env,
        "tls_cert": tls_cert,
        "tls_key": tls_key,
        "tls_client_ca": tls_client_ca,
        "max_concurrent_streams": max_concurrent_streams,
        "max_request_bytes": max_request_bytes,
        "grace_period_s": grace_period,
        "connect_timeout_s": connect_timeout,
        "first_token_timeout_s": first_token_timeout,
        "idle_timeout_s": idle_timeout,
        "attempts_per_route": attempts_per_route,
        "max_stream_duration_s": max_stream_duration,
        "max_message_bytes": max_message_bytes,
        "workers": workers,
        "worker_timeout": worker_timeout,
        "health_listen": health_listen,
        "metrics_listen": metrics_listen,
        "pid_file": pid_file,
        "callers": callers,
        "caller_store": caller_store,
    }
    try:
        settings = GatewaySettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        _fail(f"invalid setting {'.'.join(map(str, first['loc']))}: {message}")
    if settings.routes is None:
        _fail("no routes file: pass --routes FILE or set NAV_GATEWAY_ROUTES")
    _configure_logging(log_level)
    gateway_log = logging.getLogger("navagent.gateway")
    named_token = {settings.auth_token_env} if settings.auth_token_env else set()
    for warning in environment_warnings(os.environ, also_known=named_token):
        gateway_log.warning("environment: %s", warning)
    pid = None
    try:
        count = settings.worker_count
        pid = PidFile(settings.pid_file) if settings.pid_file is not None else None
        on_ready = pid.write if pid is not None else None
        if count == 1:
            config = load_config(settings, lambda _counter: 0)  # fail before binding
            run_on_fastest_loop(run_gateway(settings, config.routes, on_ready=on_ready))
            return
        server_credentials(settings)  # fail here once, not in every worker
        config = load_config(settings, lambda _counter: 0)
        for warning in config.routes.warnings:
            gateway_log.warning("routes: %s", warning)
        Supervisor(
            settings,
            workers=count,
            config=config,
            configure_logging=partial(_configure_logging, log_level),
            on_ready=on_ready,
        ).run()
    except (RoutesError, CallersError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    finally:
        if pid is not None:
            pid.remove()


@gateway_app.command("health")
def health(
    address: Annotated[str, typer.Option(help="HOST:PORT of the gateway.")] = "127.0.0.1:50051",
    service: Annotated[
        str, typer.Option(help="Service to ask about; empty for the whole server.")
    ] = "navigator.chat.v1.Chat",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the answer.")] = 3.0,
    tls_ca: Annotated[
        Path | None,
        typer.Option(help="CA bundle (PEM) that signs the gateway's certificate; enables TLS."),
    ] = None,
    tls_cert: Annotated[
        Path | None, typer.Option(help="Client certificate (PEM) for mutual TLS.")
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option(help="Client private key (PEM) for mutual TLS.")
    ] = None,
    tls_server_name: Annotated[
        str | None,
        typer.Option(help="Name to verify the certificate against (a gateway reached by IP)."),
    ] = None,
) -> None:
    """Exit 0 when the gateway answers SERVING over gRPC health (the container's probe).

    A TLS gateway is checked with the same TLS options as `nav agent`, or
    through its plaintext `--health-listen` port.
    """
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from navagent.core.chat_client import TlsConfig
    from navagent.core.chat_client import _channel_credentials as channel_credentials
    from navagent.core.errors import NavAgentError

    request = health_pb2.HealthCheckRequest(service=service)
    try:
        if tls_ca or tls_cert or tls_key or tls_server_name:
            tls = TlsConfig(
                ca_file=tls_ca, cert_file=tls_cert, key_file=tls_key, server_name=tls_server_name
            )
            options = (
                [("grpc.ssl_target_name_override", tls_server_name)] if tls_server_name else []
            )
            channel = grpc.secure_channel(address, channel_credentials(tls), options=options)
        else:
            channel = grpc.insecure_channel(address)
    except NavAgentError as exc:
        _fail(str(exc), command="health")
    try:
        with channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(request, timeout=timeout)
    except grpc.RpcError as exc:
        code_of = getattr(exc, "code", None)  # a failed call is also a grpc.Call
        code = code_of().name if callable(code_of) else "UNAVAILABLE"
        typer.echo(f"nav gateway health: {address}: {code}", err=True)
        raise typer.Exit(1) from None
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        typer.echo(f"nav gateway health: {address}: {status}", err=True)
        raise typer.Exit(1)
    typer.echo(f"{address}: {status}")


_MIN_TOKEN_CHARS = 16


@gateway_app.command("hash-token")
def hash_token() -> None:
    """Print the `token_hash` of the token read from stdin, for the callers file.

    Make a token with e.g. `python -c "import secrets; print(secrets.token_urlsafe(32))"`.
    """
    import sys

    from navagent.core.redaction import header_safe_problem
    from navagent.gateway.callers import hash_token as digest

    if sys.stdin.isatty():
        token = typer.prompt("token", hide_input=True)
    else:
        token = sys.stdin.read()
    token = token.strip()
    problem = header_safe_problem(token)
    if not token:
        _fail("no token on stdin", command="hash-token")
    if problem is not None:
        _fail(f"the token cannot be sent as a bearer token: {problem}", command="hash-token")
    if len(token) < _MIN_TOKEN_CHARS:
        _fail(
            f"the token has {len(token)} characters; use a random one of at least "
            f"{_MIN_TOKEN_CHARS} (a short token's hash can be guessed)",
            command="hash-token",
        )
    typer.echo(digest(token))


@gateway_app.command("reload")
def reload(
    pid_file: Annotated[
        Path,
        typer.Option(
            envvar="NAV_GATEWAY_PID_FILE",
            help="The pid file `serve --pid-file` wrote. Env: NAV_GATEWAY_PID_FILE.",
        ),
    ],
) -> None:
    """Make a running gateway re-read its routes file (sends it SIGHUP).

    The pid is signalled only when that process holds the pid file's lock,
    which the gateway that wrote the file holds while it runs (a reused pid,
    or any other process, does not). The gateway logs whether the new routes
    were taken or, when the file cannot be used, why it kept the old ones.
    """
    import os
    import signal

    from navagent.gateway._instance import running_gateway

    # Hold the process from before the proof to the signal, so a pid freed
    # and reused in between is never signalled (Linux: a pidfd).
    try:
        pid = running_gateway(pid_file)
        handle = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        if handle is not None and running_gateway(pid_file) != pid:
            os.close(handle)
            raise RuntimeError(f"the gateway of {pid_file} changed while it was checked")
    except RuntimeError as exc:
        _fail(str(exc), command="reload")
    except ProcessLookupError:
        _fail(f"no process {pid} (from {pid_file}): the gateway is not running", command="reload")
    except OSError as exc:
        _fail(f"cannot reach process {pid}: {exc.strerror or exc}", command="reload")
    try:
        if handle is not None:
            signal.pidfd_send_signal(handle, signal.SIGHUP)
        else:
            os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:
        _fail(f"no process {pid} (from {pid_file}): the gateway is not running", command="reload")
    except PermissionError:
        _fail(f"not allowed to signal process {pid} (from {pid_file})", command="reload")
    finally:
        if handle is not None:
            os.close(handle)
    typer.echo(f"asked gateway {pid} to reload its routes; its log says the result")


def _configure_logging(level: LogLevel) -> None:
    """Every log line, ours and the libraries', through the redacting formatter.

    httpx logs a line per upstream request at INFO: noise at the default
    level, kept for `--log-level debug` (as are aiohttp's and grpc's).
    """
    import logging

    from navagent.core.redaction import RedactingFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.value.upper())
    quiet = logging.DEBUG if level is LogLevel.debug else logging.WARNING
    for name in ("httpx", "httpcore", "aiohttp", "hpack", "grpc"):
        logging.getLogger(name).setLevel(max(quiet, root.level))


def _fail(message: str, *, command: str = "serve") -> NoReturn:
    typer.echo(f"nav gateway {command}: {message}", err=True)
    raise typer.Exit(2)
