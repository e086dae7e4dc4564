"""`nav gateway serve --workers N`: N server processes on one port, supervised.

One Python process saturates one core, so the gateway runs a worker process
per core, each a whole `Gateway` with its own event loop and upstream
connection pool. They share the listening port through `SO_REUSEPORT`: the
kernel spreads new connections across them. The supervisor (this module, in
the parent process) owns what must be shared or must outlive a worker:

- the port: it binds a reserve socket first (which also picks the port for
  `HOST:0`) and keeps it while the gateway runs, so a restarted worker can
  always rebind and no other program can take the port meanwhile;
- the stream slots (`navagent.gateway._slots`), created before any worker, so
  `--max-concurrent-streams` counts every worker's streams;
- the metrics directory of prometheus-client's multiprocess mode;
- the workers' lives: a worker that dies is logged and restarted (a worker
  that keeps dying at once is restarted with growing delays); SIGTERM and
  SIGINT are passed on, and every worker drains within the grace period;
  SIGHUP is passed on to every worker.

Workers are started with `spawn`, not `fork`: gRPC's core must not be forked
once it runs threads, and a fresh interpreter loads the routes file itself,
registering its keys with its own redaction path.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from navagent.core.redaction import clip
from navagent.gateway import metrics
from navagent.gateway._slots import Slots
from navagent.gateway.callers import SLOT_COUNTERS
from navagent.gateway.settings import GatewaySettings

__all__ = ["Supervisor"]

log = logging.getLogger("navagent.gateway")

_SPAWN = multiprocessing.get_context("spawn")
_START_TIMEOUT_S = 60.0
_QUICK_DEATH_S = 5.0
"""A worker that dies sooner than this after starting counts as a crash loop."""
_MAX_RESTART_DELAY_S = 30.0
_PR_SET_PDEATHSIG = 1
_EXTRA_DRAIN_S = 10.0
"""Beyond the grace period, how long a worker gets to close before it is killed."""


@dataclass
class _Worker:
    index: int
    process: BaseProcess
    started: float
    quick_deaths: int = 0


class Supervisor:
    """Starts `workers` gateway processes on one port and keeps them running until told to stop."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        workers: int,
        summary: str,
        configure_logging: Callable[[], None],
    ) -> None:
        """Prepare, without starting anything yet.

        `summary` is the routes part of the ready line; `configure_logging`
        runs first in every worker (it must pickle: a module-level function).
        """
        self.settings = settings
        self.workers = workers
        self._summary = summary
        self._configure_logging = configure_logging
        # The gateway's own counter, then one per caller with its own limit.
        self._slots = Slots.shared(workers=workers, counters=SLOT_COUNTERS)
        self._running: dict[int, _Worker] = {}
        self._restart_at: dict[int, tuple[float, int]] = {}
        """Workers waiting to be restarted: when, and how many quick deaths so far."""
        self._signals: list[int] = []
        self._metrics_dir: Path | None = None
        self.address = ""

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT, then drain every worker.

        Raises:
            RuntimeError: the port cannot be bound, or a worker failed to start
                (its reason, as the worker said it).
        """
        reserve = _reserve(self.settings.listen)
        host = self.settings.listen.rpartition(":")[0]
        self.address = f"{host}:{reserve.getsockname()[1]}"
        if self.settings.metrics_listen is not None:
            self._metrics_dir = metrics.multiprocess_directory()
            metrics.serve_http(self.settings.metrics_listen, self._metrics_dir)
        wake_read, wake_write = socket.socketpair()
        wake_write.setblocking(False)
        previous = self._install_signals(wake_write)
        try:
            self._start_all(wake_read)
            log.info(
                "gateway ready on %s%s: %s; %d workers",
                self.address,
                " (tls)" if self.settings.tls_cert is not None else "",
                self._summary,
                self.workers,
            )
            self._supervise(wake_read)
        except _Interrupted:
            log.info("interrupted while the workers were starting")
        finally:
            self._stop_all()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            signal.set_wakeup_fd(-1)
            wake_read.close()
            wake_write.close()
            reserve.close()
            self._slots.close()
            if self._metrics_dir is not None:
                metrics.remove_directory(self._metrics_dir)
        log.info("gateway stopped")

    def _install_signals(self, wake: socket.socket) -> dict[int, Any]:
        signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False)
        previous: dict[int, Any] = {}
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._signals.append(signum)

    def _start_all(self, wake: socket.socket) -> None:
        """Start every worker and wait until each says it is serving."""
        pending = {index: self._spawn(index) for index in range(self.workers)}
        deadline = time.monotonic() + _START_TIMEOUT_S
        while pending:
            if signal.SIGTERM in self._signals or signal.SIGINT in self._signals:
                raise _Interrupted()
            waiting: list[Connection | socket.socket] = [*pending.values(), wake]
            ready = wait(waiting, timeout=max(0.0, deadline - time.monotonic()))
            if wake in ready:
                wake.recv(512)
                continue
            if not ready:
                raise RuntimeError(f"workers did not start within {_START_TIMEOUT_S:g}s")
            for index, conn in list(pending.items()):
                if conn in ready:
                    message = _receive(conn)
                    conn.close()
                    del pending[index]
                    if message != "ready":
                        raise RuntimeError(message)

    def _spawn(self, index: int, quick_deaths: int = 0) -> Connection:
        receive, send = _SPAWN.Pipe(duplex=False)
        process = _SPAWN.Process(
            target=_worker_main,
            args=(index, self.settings, self.address, self._slots, self._configure_logging, send),
            name=f"nav-gateway-worker-{index}",
        )
        process.start()
        send.close()
        self._running[index] = _Worker(index, process, time.monotonic(), quick_deaths)
        return receive

    def _supervise(self, wake: socket.socket) -> None:
        while True:
            while self._signals:
                signum = self._signals.pop(0)
                if signum == signal.SIGHUP:
                    log.info("SIGHUP: passing it on to %d worker(s)", len(self._running))
                    self._signal_all(signal.SIGHUP)
                else:
                    log.info("%s: draining the workers", signal.Signals(signum).name)
                    return
            now = time.monotonic()
            for index, (when, quick) in list(self._restart_at.items()):
                if when <= now:
                    del self._restart_at[index]
                    self._spawn(index, quick).close()
            timeout = min((when for when, _ in self._restart_at.values()), default=now + 1.0)
            sentinels = {w.process.sentinel: w for w in self._running.values() if w.process.pid}
            ready = wait([*sentinels, wake], timeout=max(0.0, timeout - now))
            if wake in ready:
                wake.recv(512)
            for sentinel in ready:
                if isinstance(sentinel, int) and sentinel in sentinels:
                    self._on_death(sentinels[sentinel])

    def _on_death(self, worker: _Worker) -> None:
        process = worker.process
        process.join()
        self._slots.reset_worker(worker.index)
        if process.pid is not None:
            metrics.mark_process_dead(process.pid, self._metrics_dir)
        del self._running[worker.index]
        lived = time.monotonic() - worker.started
        quick = worker.quick_deaths + 1 if lived < _QUICK_DEATH_S else 0
        delay = 0.0 if quick == 0 else min(_MAX_RESTART_DELAY_S, 0.5 * 2 ** (quick - 1))
        log.error(
            "worker %d (pid %s) %s after %.1fs; restarting it%s",
            worker.index,
            process.pid,
            _how_it_ended(process.exitcode),
            lived,
            f" in {delay:g}s" if delay else "",
        )
        self._restart_at[worker.index] = (time.monotonic() + delay, quick)

    def _signal_all(self, signum: int) -> None:
        for worker in self._running.values():
            if worker.process.pid is not None and worker.process.exitcode is None:
                _kill(worker.process.pid, signum)

    def _stop_all(self) -> None:
        """SIGTERM every worker, wait out the grace period, then kill what is left."""
        self._restart_at.clear()
        live = [w.process for w in self._running.values() if w.process.pid is not None]
        for process in live:
            if process.exitcode is None:
                _kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.grace_period_s + _EXTRA_DRAIN_S
        for process in live:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.exitcode is None:
                log.error("worker pid %s did not stop in time; killing it", process.pid)
                process.kill()
                process.join()


class _Interrupted(Exception):
    """SIGTERM or SIGINT arrived while the workers were starting."""


def _kill(pid: int | None, signum: int) -> None:
    if pid is not None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _receive(conn: Connection) -> str:
    try:
        message = conn.recv()
    except EOFError:
        return "a worker exited while starting (its log says why)"
    return str(message)


def _how_it_ended(exitcode: int | None) -> str:
    if exitcode is None:
        return "vanished"
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


def _reserve(listen: str) -> socket.socket:
    """A bound (not listening) socket holding the port for the workers; picks it for port 0.

    Raises:
        RuntimeError: the address cannot be bound.
    """
    from navagent.gateway.server import check_bindable

    check_bindable(listen)  # a plain sentence when the port is taken
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        reserve = socket.socket(family, kind, proto)
        reserve.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        reserve.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reserve.bind(address)
    except OSError as exc:
        raise RuntimeError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    return reserve


def _end_with_parent() -> None:
    """Ask Linux to SIGTERM this worker if the supervisor dies (so it drains, not lingers)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: a lost supervisor leaves its workers serving until stopped


def _worker_main(
    index: int,
    settings: GatewaySettings,
    address: str,
    slots: Slots,
    configure_logging: Callable[[], None],
    ready: Connection,
) -> None:
    """One worker process: load the routes, serve on the shared port, report ready."""
    import sys

    from navagent.core.errors import NavAgentError
    from navagent.gateway import _loop
    from navagent.gateway.routes import load_routes
    from navagent.gateway.server import serve

    _end_with_parent()
    configure_logging()
    # Until the worker installs its own SIGHUP handler, a reload signal must not kill it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if settings.routes is None:
        ready.send("no routes file")
        sys.exit(2)
    try:
        routes = load_routes(settings.routes)
        settings.auth_token()  # registers the token with this process's redaction
        own = settings.model_copy(update={"listen": address})

        def report_ready() -> None:
            try:
                ready.send("ready")
            except OSError:
                pass  # a restarted worker: the supervisor is not waiting for it
            ready.close()

        _loop.run(serve(own, routes, worker=slots.worker(index), on_ready=report_ready))
    except (NavAgentError, ValueError, RuntimeError) as exc:  # routes, callers, TLS, bind
        if not ready.closed:
            ready.send(clip(str(exc), 1024))
        log.error("worker %d: %s", index, exc)
        sys.exit(2)
    except Exception as exc:  # never a traceback: one line, redacted by the formatter
        if not ready.closed:
            ready.send(f"internal error: {clip(str(exc), 1024)}")
        log.error("worker %d failed: %s: %s", index, type(exc).__name__, exc)
        log.debug("worker %d traceback", index, exc_info=exc)
        sys.exit(2)
