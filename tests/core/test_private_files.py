"""Private files: 0700 folders and 0600 files whatever the umask; no link, no stranger's file.

Every writer of user data goes through `core.private_files`, so these tests
cover the class: each helper under several umasks, a looser file or folder an
older version left, a planted link (its target never touched), a folder or
file owned by someone else.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from navagent.core.private_files import (
    UnsafePathError,
    append_private,
    create_temporary,
    private_dir,
    private_file,
    tighten_if_present,
    write_private,
)

UMASKS = (0o000, 0o002, 0o022, 0o077)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture(params=UMASKS, ids=lambda m: f"umask{m:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


FileWriter = Callable[[Path], object]
WRITERS: dict[str, FileWriter] = {
    "private_file": private_file,
    "append_private": lambda path: append_private(path, "line\n"),
    "write_private": lambda path: write_private(path, "text"),
}


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_every_writer_makes_0600_files_in_0700_folders_whatever_the_umask(
    tmp_path: Path, umask: int, writer: FileWriter
) -> None:
    folder = private_dir(tmp_path / "state" / "nested")
    writer(folder / "file")
    assert mode(folder) == 0o700
    assert mode(folder / "file") == 0o600
    assert list(folder.iterdir()) == [folder / "file"]  # no temporary file left behind


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_a_looser_file_and_folder_are_tightened(tmp_path: Path, writer: FileWriter) -> None:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o777)
    (folder / "file").write_text("kept\n")
    os.chmod(folder / "file", 0o666)
    private_dir(folder)
    writer(folder / "file")
    assert mode(folder) == 0o700
    assert mode(folder / "file") == 0o600


def test_tightening_keeps_the_content_and_ignores_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "db-wal").write_bytes(b"journal")
    os.chmod(tmp_path / "db-wal", 0o644)
    tighten_if_present(tmp_path / "db-wal")
    tighten_if_present(tmp_path / "db-shm")
    assert (tmp_path / "db-wal").read_bytes() == b"journal"
    assert mode(tmp_path / "db-wal") == 0o600
    assert not (tmp_path / "db-shm").exists()


@pytest.mark.parametrize(
    "opener",
    [
        private_file,
        lambda path: append_private(path, "stolen\n"),
        tighten_if_present,
    ],
    ids=["private_file", "append_private", "tighten_if_present"],
)
def test_a_link_in_place_of_a_file_is_refused_and_its_target_untouched(
    tmp_path: Path, opener: FileWriter
) -> None:
    target = tmp_path / "victim"
    target.write_text("precious\n")
    os.chmod(target, 0o644)
    (tmp_path / "file").symlink_to(target)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        opener(tmp_path / "file")
    assert target.read_text() == "precious\n"
    assert mode(target) == 0o644


def test_a_link_in_place_of_a_folder_is_refused_where_others_can_write(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    (tmp_path / "state").symlink_to(target)
    with pytest.raises(UnsafePathError, match=r"state is a symbolic link"):
        private_dir(tmp_path / "state", loose="refuse")
    assert mode(target) == 0o755


def test_only_a_link_of_this_user_to_a_folder_of_this_user_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "other-disk"
    target.mkdir()
    os.chmod(target, 0o755)
    (tmp_path / "state").symlink_to(target)
    private_dir(tmp_path / "state")  # the user moved the state folder: followed
    assert mode(target) == 0o700
    if os.geteuid() != 0:
        return  # making a link another user's takes root
    os.chmod(target, 0o755)
    os.lchown(tmp_path / "state", 4242, 4242)
    with pytest.raises(UnsafePathError, match=r"state is a symbolic link"):
        private_dir(tmp_path / "state")
    assert mode(target) == 0o755
    os.lchown(tmp_path / "state", os.geteuid(), os.getegid())
    os.chown(target, 4242, 4242)  # our link to someone else's folder
    with pytest.raises(UnsafePathError, match="belongs to user id 4242"):
        private_dir(tmp_path / "state")


def test_write_private_replaces_a_link_and_never_writes_through_it(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("precious\n")
    (tmp_path / "file").symlink_to(target)
    write_private(tmp_path / "file", "ours\n")
    assert target.read_text() == "precious\n"
    assert not (tmp_path / "file").is_symlink()
    assert (tmp_path / "file").read_text() == "ours\n"


def test_a_link_planted_at_the_temporary_name_is_skipped(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("precious\n")
    planted = tmp_path / f".file.{os.getpid()}"  # the name an earlier version always used
    planted.symlink_to(target)
    write_private(tmp_path / "file", "ours\n")
    assert target.read_text() == "precious\n"
    assert planted.is_symlink()
    assert (tmp_path / "file").read_text() == "ours\n"
    fd, temporary = create_temporary(tmp_path / "file")
    os.close(fd)
    assert temporary != planted and mode(temporary) == 0o600


def test_a_folder_others_can_write_is_refused_where_asked(tmp_path: Path) -> None:
    root = tmp_path / "shared-root"
    root.mkdir()
    os.chmod(root, 0o777)
    (root / "theirs").mkdir()
    with pytest.raises(
        UnsafePathError, match=r"shared-root can be written by other users \(mode 0777\)"
    ):
        private_dir(root, loose="refuse")
    assert mode(root) == 0o777 and (root / "theirs").is_dir()
    os.chmod(root, 0o755)  # readable, not writable, by others: only tightened
    private_dir(root, loose="refuse")
    assert mode(root) == 0o700


def test_a_file_or_folder_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "file").write_text("theirs\n")
    real_uid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real_uid + 4242)  # as if another user made them
    with pytest.raises(UnsafePathError, match=f"belongs to user id {real_uid}, not to you"):
        private_dir(folder)
    with pytest.raises(UnsafePathError, match="belongs to user id"):
        append_private(folder / "file", "ours\n")
    assert (folder / "file").read_text() == "theirs\n"


def test_a_shared_folder_is_never_closed(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # as /tmp is: NAV_AGENT_STATE_DIR=/tmp must not close it
    with pytest.raises(UnsafePathError, match=r"tmp is a shared folder \(mode 1777\)"):
        private_dir(shared)
    assert mode(shared) == 0o1777


def test_something_else_in_place_of_a_folder_or_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    with pytest.raises(UnsafePathError, match="plain is not a folder"):
        private_dir(tmp_path / "plain")
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError, match="dir"):
        private_file(tmp_path / "dir")
