"""Files only this user may read or steer: 0700 folders, 0600 files, whatever the umask.

The agent's state (sessions, captures, line history) and the gateway's state
(its folders under `$TMPDIR`, its pid file) hold conversations, tool output
and what a provider echoed. Every writer of such a file goes through here, so
the modes do not depend on the umask, a folder or file left looser by an older
version is tightened, and nothing is opened through a symbolic link or taken
over from another user (`UnsafePathError` says which path and what is wrong).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "UnsafePathError",
    "append_private",
    "create_temporary",
    "private_dir",
    "private_file",
    "tighten_if_present",
    "write_private",
]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class UnsafePathError(PermissionError):
    """A private path that cannot be trusted: a link, someone else's, open to others.

    A `PermissionError` (so an `OSError`), for the callers that already turn a
    failed write into a sentence; its text is that sentence's reason.
    """


def private_dir(path: Path, *, loose: Literal["tighten", "refuse"] = "tighten") -> Path:
    """Make `path` a folder only this user can use (0700), or check the one there.

    Missing parents are made with the usual modes (`~/.local/state` is not
    ours to restrict). An existing folder must be owned by this user; group
    and others lose their access to it. A link to it is followed only when
    the link too is this user's (a state folder moved to another disk).

    `loose="refuse"` is for a folder in a place others can write (`/tmp`):
    there a link is never followed, and a folder others could write into
    (which may already hold their files) is refused instead of tightened.

    Raises:
        UnsafePathError: `path` is a link (another user's, or any with
            `loose="refuse"`), not a folder, someone else's, a shared folder
            (sticky, like `/tmp`), or (with `loose="refuse"`) writable by others.
        OSError: it cannot be made.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, PRIVATE_DIR_MODE)
    follow = loose == "tighten" and _own_link(path)
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | (0 if follow else _NOFOLLOW) | _CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafePathError(f"{path} is a symbolic link, not a folder") from None
        if not os.path.isdir(path):
            raise UnsafePathError(f"{path} is not a folder") from None
        raise UnsafePathError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        _check_owner(path, info)
        if info.st_mode & stat.S_ISVTX:  # /tmp itself, say: never ours to close
            raise UnsafePathError(
                f"{path} is a shared folder (mode {_mode(info)}); use a folder of your own"
            )
        if loose == "refuse" and info.st_mode & 0o022:
            raise UnsafePathError(
                f"{path} can be written by other users (mode {_mode(info)}); "
                "remove it or make it 0700"
            )
        if stat.S_IMODE(info.st_mode) != PRIVATE_DIR_MODE:
            os.fchmod(fd, PRIVATE_DIR_MODE)
    finally:
        os.close(fd)
    return path


def _own_link(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISLNK(info.st_mode) and info.st_uid == os.geteuid()


def private_file(path: Path) -> Path:
    """Make sure the file at `path` exists and is 0600 (its content is kept).

    For files another library opens (SQLite's database, prompt_toolkit's
    history): made private here first, they stay so when that library writes.

    Raises:
        UnsafePathError: `path` is a link, not a regular file, or someone else's.
        OSError: it cannot be made.
    """
    os.close(_open(path, os.O_WRONLY | os.O_CREAT))
    return path


def tighten_if_present(path: Path) -> None:
    """Make an existing file at `path` 0600; nothing when there is none.

    Raises:
        UnsafePathError: `path` is a link, not a regular file, or someone else's.
    """
    with contextlib.suppress(FileNotFoundError):
        os.close(_open(path, os.O_RDONLY))


def append_private(path: Path, text: str) -> None:
    """Append `text` to the 0600 file at `path` (made if missing).

    Raises:
        UnsafePathError: `path` is a link, not a regular file, or someone else's.
        OSError: it cannot be written.
    """
    with os.fdopen(_open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8") as f:
        f.write(text)


def write_private(path: Path, data: str | bytes) -> None:
    """Replace the file at `path` with `data`, atomically, as a 0600 file.

    A reader sees the old file or the new one, never half of one. A link at
    `path` is replaced (its target is left alone), and the temporary file is
    always a new one (`create_temporary`).

    Raises:
        OSError: the file cannot be written.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, temporary = create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def create_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty 0600 file beside `path` (to be renamed onto it), open for writing.

    Created with `O_CREAT | O_EXCL | O_NOFOLLOW`: whatever sits at a name
    already (a link planted where an earlier version wrote its temporary
    file) is never opened, the next name is tried.

    Raises:
        OSError: no file can be made in the folder.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    for name in _temporary_names(path):
        candidate = path.with_name(name)
        try:
            fd = os.open(candidate, flags, PRIVATE_FILE_MODE)
        except FileExistsError:
            continue
        os.fchmod(fd, PRIVATE_FILE_MODE)  # a umask such as 0o277 would leave it unwritable
        return fd, candidate
    raise FileExistsError(f"cannot make a temporary file beside {path}")


def _temporary_names(path: Path) -> Iterator[str]:
    """`.NAME.PID`, then names no one can guess."""
    yield f".{path.name}.{os.getpid()}"
    for _ in range(100):
        yield f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}"


def _open(path: Path, flags: int) -> int:
    """Open the regular file at `path` without following a link, owned by us, 0600."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC, PRIVATE_FILE_MODE)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafePathError(f"{path} is a symbolic link, not a file") from None
        raise exc from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(f"{path} is not a regular file")
        _check_owner(path, info)
        if stat.S_IMODE(info.st_mode) != PRIVATE_FILE_MODE:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_owner(path: Path, info: os.stat_result) -> None:
    if info.st_uid != os.geteuid():
        raise UnsafePathError(
            f"{path} belongs to user id {info.st_uid}, not to you (user id {os.geteuid()})"
        )


def _mode(info: os.stat_result) -> str:
    return f"{stat.S_IMODE(info.st_mode):04o}"
