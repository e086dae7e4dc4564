"""`nav gateway serve --workers N`: N server processes on one port, supervised.

One Python process saturates one core, so the gateway runs a worker process
per usable CPU, each a whole `Gateway` with its own event loop and upstream
connection pool. They share the listening port through `SO_REUSEPORT`: the
kernel spreads new connections across them. The supervisor (this module, in
the parent process) owns what must be shared or must outlive a worker:

- the configuration: the routes and callers it last accepted (`Config`), read
  from the files at start and on SIGHUP only, and handed as such to every
  worker it starts and to every running worker after a reload, over the
  worker's control pipe. A restarted worker serves exactly what its siblings
  serve, whatever happened to the files meanwhile;
- the port: it binds a reserve socket first (which also picks the port for
  `HOST:0`) and keeps it while the gateway runs, so a restarted worker can
  always rebind and no other program can take the port meanwhile, and holds
  the port's lock (`_instance.PortLock`) so no second gateway joins it;
- the stream slots (`navagent.gateway._slots`), created before any worker, so
  `--max-concurrent-streams` counts every worker's streams;
- the metrics directory of prometheus-client's multiprocess mode, in the
  gateway's state folder;
- the workers' lives: each worker sends a heartbeat from its event loop; one
  that dies is logged and restarted (one that keeps dying at once, with
  growing delays), and one whose heartbeat stops for `--worker-timeout`
  seconds (stopped, or wedged in a blocking call) is killed and replaced, as
  gunicorn's arbiter does. While fewer workers serve than were asked for,
  every worker's health says NOT_SERVING. SIGTERM and SIGINT are passed on,
  and every worker drains within the grace period.

Workers are started with `spawn`, not `fork`: gRPC's core must not be forked
once it runs threads. SIGHUP is blocked while a worker is spawned (the mask
is inherited), and the worker ignores it before letting it through: a SIGHUP
sent to the whole process group cannot kill a worker that is still starting.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from navagent.core.redaction import clip
from navagent.core.version import package_version
from navagent.gateway import metrics
from navagent.gateway._instance import PortLock, StateFolder
from navagent.gateway._slots import Slots, WorkerSlots
from navagent.gateway.callers import SLOT_COUNTERS
from navagent.gateway.config import Config, reload_config, summary
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
_READY = "ready"
_BEAT = "beat"


def heartbeat_interval(worker_timeout: float) -> float:
    """How often a worker beats: several times per timeout, at most once a second."""
    return min(1.0, worker_timeout / 4)


@dataclass
class _Worker:
    index: int
    process: BaseProcess
    control: Connection
    """Duplex pipe: the worker says ready, failed or beat; the supervisor sends
    config and health."""
    started: float
    quick_deaths: int = 0
    ready: bool = False
    last_beat: float = field(default_factory=time.monotonic)
    failure: str | None = None
    """What the worker said when it could not start."""
    watchdog: str | None = None
    """Why the watchdog killed it, if it did."""


class Supervisor:
    """Starts `workers` gateway processes on one port and keeps them running until told to stop."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        workers: int,
        config: Config,
        configure_logging: Callable[[], None],
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        """Prepare, without starting anything yet.

        `config` is what the CLI read from the files at start;
        `configure_logging` runs first in every worker (it must pickle: a
        module-level function); `on_ready` runs once every worker serves and
        the signal handlers are in place (the CLI writes the pid file there).
        """
        self.settings = settings
        self.workers = workers
        self.config = config
        self._configure_logging = configure_logging
        self._on_ready = on_ready
        self._slots: Slots | None = None
        self._running: dict[int, _Worker] = {}
        self._restart_at: dict[int, tuple[float, int]] = {}
        """Workers waiting to be restarted: when, and how many quick deaths so far."""
        self._signals: list[int] = []
        self._serving = False
        self._starting = True
        self._metrics_dir: Path | None = None
        self.address = ""

    @property
    def slots(self) -> Slots:
        """The stream slots every worker counts in (once `run` has created them)."""
        assert self._slots is not None
        return self._slots

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT, then drain every worker.

        Raises:
            RuntimeError: the port cannot be bound or is another gateway's, or a
                worker failed to start (its reason, as the worker said it).
        """
        state = StateFolder()
        lock: PortLock | None = None
        reserve: socket.socket | None = None
        wake_read, wake_write = socket.socketpair()
        wake_write.setblocking(False)
        previous: dict[int, Any] = {}
        try:
            self._slots = Slots.shared(
                workers=self.workers, counters=SLOT_COUNTERS, directory=state.path
            )
            reserve = _reserve(self.settings.listen)
            port = reserve.getsockname()[1]
            lock = PortLock(port)
            host = self.settings.listen.rpartition(":")[0]
            self.address = f"{host}:{port}"
            if self.settings.metrics_listen is not None:
                self._metrics_dir = metrics.multiprocess_directory(state.path)
                metrics.serve_http(self.settings.metrics_listen, self._metrics_dir)
            previous = self._install_signals(wake_write)
            self._start_all(wake_read)
            self._starting = False
            if self._on_ready is not None:
                self._on_ready()
            log.info(
                "gateway ready on %s%s: %s; %d workers; nav-agent %s",
                self.address,
                " (tls)" if self.settings.tls_cert is not None else "",
                summary(self.config.routes),
                self.workers,
                package_version(),
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
            if reserve is not None:
                reserve.close()
            if lock is not None:
                lock.close()
            if self._slots is not None:
                self._slots.close()
            if self._metrics_dir is not None:
                metrics.remove_directory(self._metrics_dir)
            state.close()
        log.info("gateway stopped")

    def _install_signals(self, wake: socket.socket) -> dict[int, Any]:
        signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False)
        previous: dict[int, Any] = {}
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous[signum] = signal.signal(signum, self._on_signal)
        # The CLI blocked SIGHUP from its first instant; a reload asked for meanwhile arrives now.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
        return previous

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._signals.append(signum)

    def _start_all(self, wake: socket.socket) -> None:
        """Start every worker and wait until each says it is serving."""
        for index in range(self.workers):
            self._spawn(index)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not all(worker.ready for worker in self._running.values()):
            if signal.SIGTERM in self._signals or signal.SIGINT in self._signals:
                raise _Interrupted()
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start within {_START_TIMEOUT_S:g}s")
            self._poll(wake, timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        self._update_health()

    def _spawn(self, index: int, quick_deaths: int = 0) -> None:
        mine, theirs = _SPAWN.Pipe(duplex=True)
        process = _SPAWN.Process(
            target=_worker_main,
            args=(
                index,
                self.settings,
                self.address,
                self.slots,
                self.config,
                self._serving,
                self._configure_logging,
                theirs,
            ),
            name=f"nav-gateway-worker-{index}",
        )
        # The worker inherits the mask: SIGHUP stays blocked until it ignores it.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        theirs.close()
        self._running[index] = _Worker(index, process, mine, time.monotonic(), quick_deaths)

    def _supervise(self, wake: socket.socket) -> None:
        while True:
            while self._signals:
                signum = self._signals.pop(0)
                if signum == signal.SIGHUP:
                    self._reload()
                else:
                    log.info("%s: draining the workers", signal.Signals(signum).name)
                    return
            now = time.monotonic()
            for index, (when, quick) in list(self._restart_at.items()):
                if when <= now:
                    del self._restart_at[index]
                    self._spawn(index, quick)
            self._watch(now)
            tick = heartbeat_interval(self.settings.worker_timeout)
            timeout = min((when for when, _ in self._restart_at.values()), default=now + tick)
            self._poll(wake, timeout=max(0.0, min(tick, timeout - now)))

    def _poll(self, wake: socket.socket, *, timeout: float) -> None:
        """Wait up to `timeout` for a signal, a worker's message or a worker's end; handle them."""
        controls = {w.control: w for w in self._running.values() if not w.control.closed}
        sentinels = {w.process.sentinel: w for w in self._running.values() if w.process.pid}
        ready = wait([*controls, *sentinels, wake], timeout=timeout)
        if wake in ready:
            wake.recv(512)
        for item in ready:
            if isinstance(item, Connection) and item in controls:
                self._receive(controls[item])
        for item in ready:
            if isinstance(item, int) and item in sentinels:
                self._on_death(sentinels[item])

    def _receive(self, worker: _Worker) -> None:
        """Read what the worker said: ready, beats, or why it cannot start."""
        try:
            while worker.control.poll():
                message = worker.control.recv()
                worker.last_beat = time.monotonic()
                if message == _READY:
                    worker.ready = True
                    if not self._starting:
                        log.info("worker %d (pid %s) is serving", worker.index, worker.process.pid)
                        self._update_health()
                elif isinstance(message, tuple) and message[:1] == ("failed",):
                    worker.failure = str(message[1])
        except (EOFError, OSError):
            worker.control.close()  # the worker is gone: its sentinel says how

    def _watch(self, now: float) -> None:
        """Kill a worker that stopped beating (stopped, wedged) or never started."""
        timeout = self.settings.worker_timeout
        for worker in self._running.values():
            if worker.watchdog is not None or worker.process.exitcode is not None:
                continue
            if worker.ready and now - worker.last_beat > timeout:
                worker.watchdog = (
                    f"sent no heartbeat for {now - worker.last_beat:.1f}s "
                    f"(--worker-timeout {timeout:g}s: stopped or wedged)"
                )
            elif not worker.ready and now - worker.started > _START_TIMEOUT_S:
                worker.watchdog = f"did not start within {_START_TIMEOUT_S:g}s"
            else:
                continue
            log.error(
                "worker %d (pid %s) %s; killing it",
                worker.index,
                worker.process.pid,
                worker.watchdog,
            )
            _kill(worker.process.pid, signal.SIGKILL)

    def _on_death(self, worker: _Worker) -> None:
        process = worker.process
        process.join()
        self._receive(worker)  # a last message: why it could not start
        worker.control.close()
        self.slots.reset_worker(worker.index)
        if process.pid is not None:
            metrics.mark_process_dead(process.pid, self._metrics_dir)
        del self._running[worker.index]
        if self._starting:
            raise RuntimeError(
                worker.failure
                or f"worker {worker.index} {_how_it_ended(process.exitcode)} while starting"
            )
        lived = time.monotonic() - worker.started
        quick = worker.quick_deaths + 1 if lived < _QUICK_DEATH_S else 0
        delay = 0.0 if quick == 0 else min(_MAX_RESTART_DELAY_S, 0.5 * 2 ** (quick - 1))
        how = (
            "cannot start: " + worker.failure if worker.failure else _how_it_ended(process.exitcode)
        )
        log.error(
            "worker %d (pid %s) %s after %.1fs; restarting it%s",
            worker.index,
            process.pid,
            how,
            lived,
            f" in {delay:g}s" if delay else "",
        )
        self._restart_at[worker.index] = (time.monotonic() + delay, quick)
        self._update_health()

    def _update_health(self) -> None:
        """Tell every worker whether the gateway serves at its full worker count."""
        ready = sum(1 for w in self._running.values() if w.ready)
        serving = ready == self.workers
        if serving == self._serving:
            return
        self._serving = serving
        if self._starting:
            pass  # the ready line says it
        elif serving:
            log.info("all %d workers serving: health says SERVING", self.workers)
        else:
            log.warning(
                "%d of %d workers serving: health says NOT_SERVING until the rest are back",
                ready,
                self.workers,
            )
        self._send_all(("serving", serving))

    def _reload(self) -> None:
        """SIGHUP: re-read the files; hand what was accepted to every worker."""
        log.info("SIGHUP: reloading the routes and callers files")
        self.config, _ok = reload_config(self.settings, self.config, self.slots.in_use)
        self._send_all(("config", self.config))

    def _send_all(self, message: object) -> None:
        for worker in self._running.values():
            if worker.control.closed:
                continue
            try:
                worker.control.send(message)
            except OSError:
                pass  # it is dying: its replacement gets the current state at start

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
        for worker in self._running.values():
            worker.control.close()


class _Interrupted(Exception):
    """SIGTERM or SIGINT arrived while the workers were starting."""


def _kill(pid: int | None, signum: int) -> None:
    if pid is not None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


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
    config: Config,
    serving: bool,
    configure_logging: Callable[[], None],
    control: Connection,
) -> None:
    """One worker process: serve `config` on the shared port, report ready, beat."""
    import sys

    from navagent.core.errors import NavAgentError
    from navagent.gateway import _loop

    # The supervisor reloads and stops the workers: a SIGHUP or SIGINT sent to the
    # whole process group (a closed terminal, Ctrl-C) must not kill or cut one.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
    _end_with_parent()
    configure_logging()
    try:
        config.register_secrets()
        settings.auth_token()  # registers the token with this process's redaction
        own = settings.model_copy(update={"listen": address})
        _loop.run(_serve(own, config, slots.worker(index), control, serving))
    except (NavAgentError, ValueError, RuntimeError, OSError) as exc:  # TLS, bind
        _tell(control, ("failed", clip(str(exc), 1024)))
        sys.exit(2)
    except Exception as exc:  # never a traceback: one line, redacted by the formatter
        _tell(control, ("failed", f"internal error: {type(exc).__name__}: {clip(str(exc), 1024)}"))
        log.debug("worker %d traceback", index, exc_info=exc)
        sys.exit(2)


def _tell(control: Connection, message: object) -> None:
    """Send to the supervisor; a supervisor that is gone hears nothing."""
    try:
        control.send(message)
    except OSError:
        pass


async def _serve(
    settings: GatewaySettings,
    config: Config,
    slots: WorkerSlots,
    control: Connection,
    serving: bool,
) -> None:
    """Serve until SIGTERM (or the supervisor's end), beating and taking new config meanwhile."""
    from navagent.gateway import _loop
    from navagent.gateway._network import preload
    from navagent.gateway.server import Gateway

    if settings.metrics_listen is not None:
        metrics.enable()
    gateway = Gateway(settings, config.routes, callers=config.callers, slots=slots, reuse_port=True)
    await gateway.start(announce=False)
    await gateway.set_serving(serving)
    preload()
    _loop.settle()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    pending: set[asyncio.Task[None]] = set()

    def on_message() -> None:
        try:
            while control.poll():
                message = control.recv()
                if isinstance(message, tuple) and message[0] == "config":
                    new: Config = message[1]
                    new.register_secrets()
                    gateway.apply(new)
                elif isinstance(message, tuple) and message[0] == "serving":
                    task = loop.create_task(gateway.set_serving(bool(message[1])))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
        except (EOFError, OSError):  # the supervisor is gone: drain and leave
            loop.remove_reader(control.fileno())
            stop.set()

    async def beat() -> None:
        interval = heartbeat_interval(settings.worker_timeout)
        while True:
            try:
                control.send(_BEAT)
            except OSError:
                stop.set()
                return
            await asyncio.sleep(interval)

    control.send(_READY)
    loop.add_reader(control.fileno(), on_message)
    beating = loop.create_task(beat())
    await stop.wait()
    log.info("shutting down: %d stream(s) in flight", gateway.service.active_streams)
    await gateway.stop()
    beating.cancel()
    log.info("worker stopped")
