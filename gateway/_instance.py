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
  in place, and write-locked by the gateway for as long as it runs, so
  `nav gateway reload` signals a pid only when that process holds the lock
  (`running_gateway`); refused when a live gateway holds it, and removed on
  exit only if it is still the file this gateway wrote.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import socket
import stat
import struct
import sys
import tempfile
import time
from pathlib import Path

from navagent.core.private_files import UnsafePathError, create_temporary, private_dir

__all__ = [
    "PidFile",
    "PortLock",
    "PrivateSocket",
    "StateFolder",
    "check_root",
    "describe_process",
    "running_gateway",
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
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
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


class PrivateSocket:
    """A Unix socket's path in a state folder of its own, for a gateway only this user reaches.

    For the gateways run in process (`nav agent --routes`, `--demo`, the
    scenario harness): a loopback port would let any local process stream
    through the user's route keys; the socket's folders are 0700. Close it
    after the gateway stops (a killed process's folder goes in the next sweep).
    """

    NAME = "chat.sock"
    MAX_PATH_BYTES = 107
    """What a Unix socket's path may hold (`sun_path` is 108 bytes with its NUL on Linux)."""

    def __init__(self, root: Path | None = None) -> None:
        """Make the folder.

        Raises:
            RuntimeError: the root is refused (`check_root`), or the path is too long.
        """
        self._state = StateFolder(root)
        self.path = self._state.path / self.NAME
        if len(os.fsencode(self.path)) > self.MAX_PATH_BYTES:
            self._state.close()
            raise RuntimeError(
                f"the gateway's socket path {self.path} is longer than a Unix socket's "
                f"{self.MAX_PATH_BYTES} bytes; set TMPDIR to a shorter folder"
            )

    def close(self) -> None:
        """Remove the folder (and the socket, if the server left it)."""
        self._state.close()


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


def describe_process(pid: int) -> str:
    """What process `pid` runs, for an error text ("python3 -m http.server", or "no process")."""
    argv = _argv(pid)
    if argv is None:
        return "no such process" if not _alive(pid) else "a process this user cannot inspect"
    shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", " ".join(argv))
    return shown if len(shown) <= 80 else shown[:80] + "…"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Shown visibly in a stranger's command line, never sent to the terminal as they are."""


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


# struct flock, as F_GETLK reads and fills it (the field order differs by system).
_FLOCK_LAYOUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "linux": ("hhqqi4x", ("type", "whence", "start", "len", "pid")),
    "darwin": ("qqihh", ("start", "len", "pid", "type", "whence")),
}


def _write_lock_holder(fd: int) -> int | None:
    """The pid of the process holding a write lock on the file open as `fd`, if any.

    A gateway holds one on its pid file for as long as it runs (`PidFile`):
    the kernel drops it when the process dies, and only a process that can
    write the 0600 file could take one, so its holder is the gateway.

    Raises:
        OSError: the lock cannot be asked about on this system.
    """
    layout = _FLOCK_LAYOUTS.get(sys.platform)
    if layout is None:
        raise OSError(errno.ENOSYS, f"cannot ask who holds a lock on {sys.platform}")
    fmt, names = layout
    values = {"type": fcntl.F_RDLCK, "whence": os.SEEK_SET, "start": 0, "len": 0, "pid": 0}
    answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, *(values[n] for n in names)))
    found = dict(zip(names, struct.unpack(fmt, answer), strict=True))
    return None if found["type"] == fcntl.F_UNLCK else int(found["pid"])


def _read_locked(path: Path) -> tuple[str, int | None]:
    """The pid file's text and the pid holding its lock (None: no gateway holds it).

    Raises:
        OSError: it cannot be read, or is a link (a gateway never writes one).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        if path.is_symlink():
            raise UnsafePathError(
                f"{path} is a symbolic link, and a gateway's pid file never is"
            ) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        text = os.read(fd, 64).decode("utf-8", "replace").strip()
        return text, _write_lock_holder(fd)
    finally:
        os.close(fd)


def running_gateway(path: Path) -> int:
    """The pid of the gateway that wrote the pid file `path` and is running now.

    Proven by the file's lock, never guessed from a command line: the pid in
    the file must be the process holding the write lock on it.

    Raises:
        RuntimeError: no running gateway is proven; one sentence says why.
    """
    try:
        text, holder = _read_locked(path)
    except UnsafePathError as exc:
        raise RuntimeError(f"{exc}, so nothing was signalled") from None
    except OSError as exc:
        raise RuntimeError(f"cannot read pid file {path}: {exc.strerror or exc}") from None
    if not text.isdigit() or int(text) == 0:  # 1 is fine: the gateway in a container
        raise RuntimeError(f"{path} does not hold a gateway's pid (found {text[:20]!r})")
    pid = int(text)
    if holder is None:
        if not _alive(pid):
            raise RuntimeError(f"no process {pid} (from {path}): the gateway is not running")
        raise RuntimeError(
            f"process {pid} (from {path}) is not a nav gateway that wrote this file (it runs: "
            f"{describe_process(pid)}, and nothing holds the file's lock); the pid file is "
            "stale, so nothing was signalled"
        )
    if holder != pid:
        raise RuntimeError(
            f"{path} names process {pid}, but process {holder or 'in another pid namespace'} "
            "holds its lock, so nothing was signalled"
        )
    return pid


class PidFile:
    """A gateway's pid file, locked while the gateway runs; removed only by its writer.

    The file is made under a new temporary name (`create_temporary`: never
    through a link), write-locked, filled and renamed into place; the gateway
    keeps it open, so the lock lasts exactly as long as the gateway. A lock
    is per process and goes when any descriptor of the file is closed: so
    nothing else in the gateway opens it.
    """

    def __init__(self, path: Path) -> None:
        """Check `path` may be ours (before binding anything).

        Raises:
            RuntimeError: it names another running gateway.
        """
        self.path = path
        self._fd: int | None = None
        try:
            text, holder = _read_locked(path)
        except FileNotFoundError:
            return
        except UnsafePathError:
            return  # a link is replaced by the rename, its target left alone
        except OSError as exc:
            raise RuntimeError(f"cannot read pid file {path}: {exc.strerror or exc}") from None
        if holder is not None:
            raise RuntimeError(
                f"pid file {path} names gateway {holder or text}, which is running; stop it "
                "first or give this gateway another --pid-file"
            )

    def write(self) -> None:
        """Write our pid, locked for as long as we run (atomically: never half a file).

        Raises:
            RuntimeError: the file cannot be written.
        """
        pid = os.getpid()
        try:
            fd, temporary = create_temporary(self.path)
        except OSError as exc:
            raise RuntimeError(
                f"cannot write pid file {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, f"{pid}\n".encode())
            os.replace(temporary, self.path)
        except OSError as exc:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise RuntimeError(
                f"cannot write pid file {self.path}: {exc.strerror or exc}"
            ) from None
        self._fd = fd

    def remove(self) -> None:
        """Remove the file if it is still the one we wrote, and let its lock go."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            ours, there = os.fstat(fd), os.stat(self.path, follow_symlinks=False)
            if (ours.st_dev, ours.st_ino) == (there.st_dev, there.st_ino):
                self.path.unlink()
        os.close(fd)
