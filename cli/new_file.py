"""Writing a file the user named (`/export FILE`, `sessions export -o FILE`): a new one only.

The same rule as `--record`: what is already there is never overwritten, and
a symbolic link at the name is never written through (`O_CREAT | O_EXCL |
O_NOFOLLOW`), so a link planted where an export will go cannot steer it onto
another file. The file is 0600: it is a copy of the private session log.
Every failure is one `NewFileError` sentence naming the path, and a failed
write leaves no partial file behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from navagent.core.errors import NavAgentError

__all__ = ["NewFileError", "free_name", "write_new_file"]

_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_MODE = 0o600


class NewFileError(NavAgentError):
    """The file cannot be written; the text says why and what to do instead."""


def free_name(path: Path) -> Path:
    """The first of `path`, `NAME-2.ext`, `NAME-3.ext`, ... that nothing occupies."""
    candidate, number = path, 1
    while os.path.lexists(candidate) and number < 1000:
        number += 1
        candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
    return candidate


def _shown(path: Path | str) -> str:
    """The path for a message, with a NUL or other invisible character escaped."""
    text = str(path)
    return text if text.isprintable() else repr(text)[1:-1]


def write_new_file(path: Path, text: str) -> None:
    """Create `path` holding `text`; refuse one that exists (a link included).

    Raises:
        NewFileError: it exists (naming a free name to use instead), the name
            is not a usable file name (a NUL in it), or the write failed.
    """
    shown = _shown(path)
    try:
        fd = os.open(path, _FLAGS, _MODE)
    except FileExistsError:
        what = (
            "a symbolic link"
            if os.path.islink(path)
            else "a folder"
            if os.path.isdir(path)
            else "a file"
        )
        raise NewFileError(
            f"{shown} already exists ({what}) and is left as it is: choose another name,"
            f" e.g. {_shown(free_name(path))}"
        ) from None
    except ValueError:  # a NUL, or a character the file system's encoding cannot take
        raise NewFileError(
            f"{shown} is not a usable file name (it holds a NUL or another character a"
            " file name cannot have): type the name again"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a link, where O_EXCL did not say so
            raise NewFileError(f"{shown} is a symbolic link: choose another name") from None
        raise NewFileError(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except (OSError, ValueError) as exc:  # ValueError: text the encoding cannot take
        with contextlib.suppress(OSError):
            path.unlink()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise NewFileError(f"cannot write {shown}: {reason}") from None
