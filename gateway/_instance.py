"""What a running gateway holds on its machine: its port's lock, its state folder, its pid file.

- The port lock: the workers share the port through `SO_REUSEPORT`, so a
  second gateway on the same port would join them instead of failing. Each
  gateway therefore first takes a lock keyed by its port: on Linux an
  abstract Unix socket named after the port (bound atomically, released by
  the kernel when the process dies, shared by everything in the network
  namespace whatever its temp dir), elsewhere an `flock`ed file.
- The state folder: the stream slots' lock file and the metrics files live in
  one folder per gateway, locked while it runs. At start a gateway removes
  every folder whose lock is free (its gateway died without cleaning up, e.g.
  `kill -9` or a container restart over an `emptyDir`). Their root,
  `$TMPDIR/nav-gateway-<uid>`, is refused unless it is a real folder of this
  user that others cannot write, and no link is followed in it.
- The pid file: written once the port is bound and the signal handlers are
  in place, refused when it names a live gateway, and removed on exit only if
  it still holds this gateway's pid.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from navagent.core.private_files import UnsafePathError, private_dir

__all__ = [
    "PidFile",
    "PortLock",
    "StateFolder",
    "check_root",
    "describe_process",
    "is_gateway",
]

_ABSTRACT_SOCKETS: bool = sys.platform == "linux"
"""Linux names sockets outside the file system; elsewhere the port lock is a file."""
_ROOT_NAME = "nav-gateway"
_LOCK_NAME = ".lock"
_MAKING = ".making-"
"""Prefix of a state folder whose lock is not taken yet."""
_MAKING_GRACE_S = 60.0


class PortLock:
    """Held while a gateway runs on a TCP port; a second gateway on that port is refused."""

    def __init__(self, port: int) -> None:
        """Take the lock for `port`.

        Raises:
            RuntimeError: another nav gateway holds it ("address already in use").
        """
        self.port = port
        self._socket: socket.socket | None = None
        self._fd: int | None = None
        if _ABSTRACT_SOCKETS:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self._socket.bind(f"\0nav-gateway-port-{port}")
            except OSError as exc:
                self._socket.close()
                if exc.errno == errno.EADDRINUSE:
                    raise RuntimeError(_taken(port)) from None
                raise RuntimeError(f"cannot lock port {port}: {exc.strerror or exc}") from None
            return
        path = _root() / f"port-{port}.lock"
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise RuntimeError(_taken(port)) from None

    def close(self) -> None:
        """Let the port go (the process's end does it too)."""
        if self._socket is not None:
            self._socket.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _taken(port: int) -> str:
    return f"address already in use: another nav gateway is serving port {port}"


class StateFolder:
    """This gateway's folder for its slots' lock file and metrics; removed at exit.

    The folder is made under a hidden name, its lock taken inside it, and only
    then renamed into place (the lock stays with the open file). So every
    folder a sweep sees under its final name is locked for as long as its
    gateway lives: a free lock means a dead gateway, with no guess by age.
    """

    def __init__(self, root: Path | None = None) -> None:
        """Make the folder, after removing those of gateways that died without doing so.

        Raises:
            RuntimeError: the root is a link, someone else's or writable by
                others (`check_root`).
        """
        base = check_root(root or _default_root())
        sweep(base)
        making = Path(tempfile.mkdtemp(prefix=f"{_MAKING}{os.getpid()}-", dir=base))
        self._fd: int | None = os.open(making / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.path = base / making.name.removeprefix(_MAKING)
        making.rename(self.path)

    def close(self) -> None:
        """Remove the folder and everything in it."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def sweep(root: Path) -> list[Path]:
    """Remove the folders under `root` whose gateway is gone (their lock is free).

    A folder still being made (hidden name) is left alone unless it is a
    minute old: its gateway died between making it and renaming it. No link
    is followed: not a `root` that is one, nor an entry of it (whose target
    could be anyone's folder), nor a `.lock` that is one.
    """
    if root.is_symlink() or not root.is_dir():
        return []
    removed = []
    with os.scandir(root) as entries:
        folders = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        if _abandoned(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _abandoned(folder: Path) -> bool:
    if folder.name.startswith(_MAKING):
        try:
            return folder.stat().st_mtime < time.time() - _MAKING_GRACE_S
        except OSError:
            return False
    try:
        fd = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return True  # its gateway's clean-up stopped half-way
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False  # its gateway is running
    finally:
        os.close(fd)  # closing also lets our probe lock go


def _default_root() -> Path:
    """`$TMPDIR/nav-gateway-<uid>`: one per user, so no one else's files are touched."""
    return Path(tempfile.gettempdir()) / f"{_ROOT_NAME}-{os.getuid()}"


def _root() -> Path:
    return check_root(_default_root())


def check_root(root: Path) -> Path:
    """Make `root` (0700), or check the one there before anything is made or removed in it.

    It sits in a folder everyone can write (`/tmp`), so someone else may have
    made it first: it must be a real folder (a link would send the sweep
    elsewhere), this user's, and not writable by others (it could hold their
    planted files); otherwise it is refused, not repaired.

    Raises:
        RuntimeError: it is refused; the text names the path and what is wrong.
    """
    try:
        return private_dir(root, loose="refuse")
    except UnsafePathError as exc:
        raise RuntimeError(f"refusing the gateway's state folder: {exc}") from None
    except OSError as exc:
        raise RuntimeError(
            f"cannot make the gateway's state folder {root}: {exc.strerror or exc}"
        ) from None


def is_gateway(pid: int) -> bool:
    """Whether process `pid` is a running `nav gateway serve` (or one of its workers)."""
    argv = _argv(pid)
    return argv is not None and any(
        a == "gateway" and b == "serve" for a, b in zip(argv, argv[1:], strict=False)
    )


def describe_process(pid: int) -> str:
    """What process `pid` runs, for an error text ("python3 -m http.server", or "no process")."""
    argv = _argv(pid)
    if argv is None:
        return "no such process" if not _alive(pid) else "a process this user cannot inspect"
    shown = " ".join(argv)
    return shown if len(shown) <= 80 else shown[:80] + "…"


def _argv(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part] or None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PidFile:
    """A gateway's pid file: refused while it names a live gateway, removed only by its writer."""

    def __init__(self, path: Path) -> None:
        """Check `path` may be ours (before binding anything).

        Raises:
            RuntimeError: it names another running gateway.
        """
        self.path = path
        self._written: int | None = None
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise RuntimeError(f"cannot read pid file {path}: {exc.strerror or exc}") from None
        # The same pid as ours is a previous life of this container (pid 1 again): stale.
        if text.isdigit() and int(text) != os.getpid() and is_gateway(int(text)):
            raise RuntimeError(
                f"pid file {path} names gateway {text}, which is running; stop it first "
                "or give this gateway another --pid-file"
            )

    def write(self) -> None:
        """Write our pid (atomically: a reader never sees half a file).

        Raises:
            RuntimeError: the file cannot be written.
        """
        pid = os.getpid()
        temporary = self.path.with_name(f".{self.path.name}.{pid}")
        try:
            temporary.write_text(f"{pid}\n", encoding="utf-8")
            temporary.replace(self.path)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise RuntimeError(
                f"cannot write pid file {self.path}: {exc.strerror or exc}"
            ) from None
        self._written = pid

    def remove(self) -> None:
        """Remove the file if we wrote it and it still holds our pid."""
        if self._written is None:
            return
        with contextlib.suppress(OSError):
            if self.path.read_text(encoding="utf-8").strip() == str(self._written):
                self.path.unlink()
        self._written = None
