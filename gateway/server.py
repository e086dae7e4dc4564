"""The gateway process: a `grpc.aio` server with Chat, health and reflection.

`Gateway` owns the lifecycle (start, graceful stop) and is embeddable: the
`nav agent --demo` and the tests run it in-process on port 0. `serve` is the
long-running entry point behind `nav gateway serve`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import random
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from navagent.core.version import package_version
from navagent.gateway import metrics
from navagent.gateway._loop import settle
from navagent.gateway._network import preload, upstream_transport
from navagent.gateway._slots import Slots, WorkerSlots
from navagent.gateway.caller_store import CallerStore
from navagent.gateway.callers import SLOT_COUNTERS, CallerAuthInterceptor, CallerTable
from navagent.gateway.config import Config, load_callers_of, reload_config, summary
from navagent.gateway.dispatch import Dispatcher, RetryPolicy
from navagent.gateway.routes import RouteTable
from navagent.gateway.service import SERVICE_NAME, ChatService, StreamLimits, chat_rpc_handler
from navagent.gateway.settings import UNIX_PREFIX, GatewaySettings
from navagent.gateway.upstream import Timeouts, Upstream

__all__ = [
    "Gateway",
    "check_bindable",
    "serve",
    "server_credentials",
    "summary",
    "watch_reload_signal",
]

log = logging.getLogger("navagent.gateway")


def server_credentials(settings: GatewaySettings) -> grpc.ServerCredentials | None:
    """The TLS credentials the settings ask for; None for plaintext.

    Raises:
        ValueError: TLS files missing, unreadable or inconsistent.
    """
    if settings.tls_cert is None and settings.tls_key is None:
        if settings.tls_client_ca is not None:
            raise ValueError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if settings.tls_cert is None or settings.tls_key is None:
        raise ValueError("TLS needs both --tls-cert and --tls-key")
    client_ca = _read(settings.tls_client_ca) if settings.tls_client_ca else None
    return grpc.ssl_server_credentials(
        [(_read(settings.tls_key), _read(settings.tls_cert))],
        root_certificates=client_ca,
        require_client_auth=client_ca is not None,
    )


def check_bindable(listen: str) -> None:
    """Fail with a plain sentence when `listen` cannot be bound.

    gRPC core reports a failed bind as a burst of its own `E...` log lines and
    "Failed to bind"; binding a probe socket first names the real cause.

    Raises:
        RuntimeError: "address already in use: HOST:PORT" and the like.
    """
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(
            host or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise RuntimeError(f"cannot listen on {listen}: unknown host {host!r} ({exc})") from None
    except OverflowError:
        raise RuntimeError(f"cannot listen on {listen}: port out of range") from None
    failures: list[OSError] = []
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise RuntimeError(f"address already in use: {listen}") from None
                failures.append(exc)
    # gRPC binds every address it can; it fails only when none can be bound.
    if failures and len(failures) == len(infos):
        reason = failures[0].strerror or str(failures[0])
        raise RuntimeError(f"cannot listen on {listen}: {reason}")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None


class Gateway:
    """One gateway server: start it, serve, stop it gracefully."""

    def __init__(
        self,
        settings: GatewaySettings,
        routes: RouteTable,
        *,
        http_client: httpx.AsyncClient | None = None,
        slots: WorkerSlots | None = None,
        reuse_port: bool = False,
        callers: CallerTable | None | Literal["from settings"] = "from settings",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        caller_store: CallerStore | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """Set up the servicer; `slots`, `reuse_port` and `callers` are for supervised workers.

        A worker (`navagent.gateway.workers`) counts its streams in slots
        shared across workers, shares the listening port with them, and is
        handed its callers by the supervisor instead of reading the file.
        `sleep` waits out the retry back-off (the fault sweep skips the wait), and
        `rng` draws its jitter (the sweep draws the top, to check the bound).
        `caller_store` counts callers' limits across replicas; by default one
        is made from `settings.caller_store` when that is set (each worker
        makes its own client).
        """
        self.settings = settings
        self.routes = routes
        self._owns_client = http_client is None
        transport = None
        if http_client is None:
            transport = upstream_transport(
                httpx.Limits(
                    max_connections=settings.max_upstream_connections,
                    max_keepalive_connections=settings.max_upstream_connections,
                )
            )
        self._http = http_client or httpx.AsyncClient(transport=transport)
        timeouts = Timeouts(
            connect_s=settings.connect_timeout_s,
            first_token_s=settings.first_token_timeout_s,
            idle_s=settings.idle_timeout_s,
        )
        self._slots = slots or Slots.local(counters=SLOT_COUNTERS).worker(0)
        if caller_store is None and settings.caller_store is not None:
            caller_store = CallerStore(settings.caller_store)
        self.caller_store = caller_store
        self.dispatcher = Dispatcher(
            routes,
            Upstream(self._http, timeouts=timeouts, transport=transport),
            policy=RetryPolicy(attempts_per_route=settings.attempts_per_route),
            sleep=sleep,
            rng=rng,
        )
        self.service = ChatService(
            self.dispatcher,
            limits=StreamLimits(
                max_concurrent_streams=settings.max_concurrent_streams,
                max_duration_s=settings.max_stream_duration_s,
                max_message_bytes=settings.max_message_bytes,
            ),
            slots=self._slots,
            caller_store=caller_store,
        )
        self._reuse_port = reuse_port
        self._given_callers = callers
        self.callers: CallerTable | None = None
        """Who may call, when auth is on (`--callers`, `--auth-token-env`)."""
        self._health = HealthServicer()
        self._reloading = asyncio.Lock()
        self._server: grpc.aio.Server | None = None
        self._health_server: grpc.aio.Server | None = None
        self.port: int | None = None

    def slots_held(self) -> dict[int, int]:
        """Stream slots held now, by counter (0: `--max-concurrent-streams`; then callers').

        Zero everywhere once every stream has ended, however it ended (the fault
        sweep checks that after each replay).
        """
        return {
            counter: held
            for counter in range(SLOT_COUNTERS)
            if (held := self._slots.in_use(counter))
        }

    @property
    def address(self) -> str:
        """`host:port` the server is bound to (after `start`), or its `unix:` socket."""
        if self.settings.listen.startswith(UNIX_PREFIX):
            return self.settings.listen
        host = self.settings.listen.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    async def start(self, *, announce: bool = True) -> None:
        """Bind and start serving; log the routes and the ready line when `announce`.

        Raises:
            ValueError: TLS files missing or inconsistent, or the token unusable.
            CallersError: the callers file cannot be used.
            RuntimeError: the address cannot be bound.
        """
        interceptors = []
        if self._given_callers == "from settings":
            self.callers = load_callers_of(self.settings, None, self._slots.in_use)
        else:
            self.callers = self._given_callers
        if self.callers is not None:
            interceptors.append(CallerAuthInterceptor(self._current_callers))
        server = grpc.aio.server(
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", self.settings.max_request_bytes),
                # Off unless supervised: a port in use must fail, not be shared.
                ("grpc.so_reuseport", 1 if self._reuse_port else 0),
            ],
        )
        server.add_generic_rpc_handlers((chat_rpc_handler(self.service),))
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection.enable_server_reflection(
            (
                SERVICE_NAME,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ),
            server,
        )
        credentials = server_credentials(self.settings)
        if not self._reuse_port and not self.settings.listen.startswith(UNIX_PREFIX):
            check_bindable(self.settings.listen)
        try:
            if credentials is None:
                port = server.add_insecure_port(self.settings.listen)
            else:
                port = server.add_secure_port(self.settings.listen, credentials)
        except RuntimeError as exc:
            raise RuntimeError(f"cannot listen on {self.settings.listen}: {exc}") from None
        await server.start()
        self._server = server
        self.port = port
        if self.settings.health_listen is not None:
            self._health_server = await self._serve_health(self.settings.health_listen)
        await self.set_serving(True)
        if announce:
            self._announce(credentials is not None)

    def _announce(self, tls: bool) -> None:
        for warning in self.routes.warnings:
            log.warning("routes: %s", warning)
        log.info(
            "gateway ready on %s%s: %s; nav-agent %s",
            self.address,
            " (tls)" if tls else "",
            summary(self.routes),
            package_version(),
        )

    async def _serve_health(self, listen: str) -> grpc.aio.Server:
        """A plaintext server with only the health service, for probes of a TLS gateway.

        It answers from the same health state as the gateway, so it says
        NOT_SERVING whenever the gateway does.

        Raises:
            RuntimeError: the address cannot be bound.
        """
        server = grpc.aio.server(options=[("grpc.so_reuseport", 1 if self._reuse_port else 0)])
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        if not self._reuse_port:
            check_bindable(listen)
        try:
            server.add_insecure_port(listen)
        except RuntimeError as exc:
            raise RuntimeError(f"cannot serve health on {listen}: {exc}") from None
        await server.start()
        return server

    async def set_serving(self, serving: bool) -> None:
        """Answer health checks SERVING or NOT_SERVING (no change once shutting down)."""
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        await self._health.set(SERVICE_NAME, status)
        await self._health.set("", status)

    def apply(self, config: Config) -> None:
        """Serve new calls with `config` (streams in flight keep the routes they started with)."""
        self.routes = self.dispatcher.routes = config.routes
        if self.callers is not None:  # auth cannot be switched on by a reload
            self.callers = config.callers

    def _current_callers(self) -> CallerTable:
        assert self.callers is not None
        return self.callers

    async def reload(self) -> bool:
        """Re-read the routes (and callers) file and swap them in; True when all were swapped.

        Each swap is one assignment: streams in flight keep the table they
        started with (the dispatcher reads it once per stream), new calls get
        the new one. A file that cannot be used leaves its old table in place
        and says why in one log line (`navagent.gateway.config`).
        """
        async with self._reloading:
            current = Config(self.routes, self.callers)
            config, ok = await asyncio.to_thread(
                reload_config, self.settings, current, self._slots.in_use
            )
            self.apply(config)
            return ok

    async def stop(self, grace_s: float | None = None) -> None:
        """Stop accepting calls, let streams finish within the grace period, then end them.

        Streams still running when the grace period ends receive an `error`
        event (code `cancelled`, retryable) before the server closes.
        """
        server = self._server
        if server is None:
            return
        grace = self.settings.grace_period_s if grace_s is None else grace_s
        await self._health.enter_graceful_shutdown()
        # stop() refuses new calls at once; its own grace is a backstop only.
        stopping = asyncio.create_task(server.stop(grace + 5.0))
        if not await self.service.wait_idle(grace):
            log.info("grace period over: ending %d stream(s)", self.service.active_streams)
            self.service.cancel_all()
        await stopping
        self._server = None
        if self._health_server is not None:
            await self._health_server.stop(0)
            self._health_server = None
        if self._owns_client:
            await self._http.aclose()
        if self.caller_store is not None:
            await self.caller_store.aclose()

    async def wait_for_termination(self) -> None:
        """Block until the server stops."""
        if self._server is not None:
            await self._server.wait_for_termination()


def watch_reload_signal(gateway: Gateway) -> None:
    """Reload `gateway`'s routes on every SIGHUP (call from the loop that serves it)."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[bool]] = set()

    def reload() -> None:
        task = loop.create_task(gateway.reload())
        pending.add(task)  # keep a reference until it is done
        task.add_done_callback(pending.discard)

    loop.add_signal_handler(signal.SIGHUP, reload)


async def serve(
    settings: GatewaySettings,
    routes: RouteTable,
    *,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Run a single-process gateway until SIGTERM or SIGINT, then shut down gracefully.

    `on_ready` runs once the port is bound and every signal handler is in
    place (the CLI writes the pid file there); only then is SIGHUP, blocked
    by the CLI from the first instant, let through.
    """
    if settings.metrics_listen is not None:
        metrics.enable()
        metrics.serve_http(settings.metrics_listen)
    gateway = Gateway(settings, routes)
    await gateway.start()
    preload()
    settle()
    watch_reload_signal(gateway)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
    if on_ready is not None:
        on_ready()
    await stop.wait()
    log.info("shutting down: %d stream(s) in flight", gateway.service.active_streams)
    await gateway.stop()
    log.info("gateway stopped")
