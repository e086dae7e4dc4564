"""The gateway's state folder: a sweep removes exactly the folders of dead gateways.

A folder under its final name is always locked by a live gateway, so a free
lock is proof of death however young the folder is (no age guess that a fast
restart could beat); only a folder still being made gets time.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
import time
from pathlib import Path

import pytest

from navagent.gateway._instance import StateFolder, sweep


def test_a_running_gateways_folder_is_kept_and_a_dead_ones_removed_at_once(
    tmp_path: Path,
) -> None:
    alive = StateFolder(tmp_path)
    dead = StateFolder(tmp_path)
    assert not alive.path.name.startswith(".")
    assert dead._fd is not None
    os.close(dead._fd)  # the process "died": its lock is gone, the folder stays
    dead._fd = None
    assert sweep(tmp_path) == [dead.path]  # a moment old, still removed
    assert alive.path.is_dir() and not dead.path.exists()
    alive.close()
    assert list(tmp_path.iterdir()) == []


def test_a_folder_whose_clean_up_stopped_half_way_is_removed(tmp_path: Path) -> None:
    half = tmp_path / "123-abc"
    half.mkdir()
    (half / "metrics-1.db").write_bytes(b"")
    assert sweep(tmp_path) == [half]


def test_a_folder_being_made_gets_a_minute(tmp_path: Path) -> None:
    making = tmp_path / ".making-123-abc"
    making.mkdir()
    assert sweep(tmp_path) == []
    old = time.time() - 120
    os.utime(making, (old, old))
    assert sweep(tmp_path) == [making]


def test_the_lock_is_held_before_the_folder_has_its_final_name(tmp_path: Path) -> None:
    state = StateFolder(tmp_path)
    fd = os.open(state.path / ".lock", os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            held = True
        else:
            held = False
        assert held, "a sweep could take a live gateway's folder"
    finally:
        os.close(fd)
        state.close()


# --- the root in $TMPDIR: someone else may have made it first ------------------


def _folders_with_a_dead_gateways_look(where: Path) -> list[Path]:
    """Subfolders a sweep would take for dead gateways' (no lock held in them)."""
    made = [where / "123-abc", where / "photos"]
    for folder in made:
        folder.mkdir(parents=True)
        (folder / "keep.txt").write_text("precious\n")
    return made


def test_a_root_planted_as_a_link_is_refused_and_nothing_is_deleted(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    kept = _folders_with_a_dead_gateways_look(victim)
    root = tmp_path / "nav-gateway-1000"
    root.symlink_to(victim)
    with pytest.raises(RuntimeError, match=f"{root} is a symbolic link"):
        StateFolder(root)
    assert sweep(root) == []
    assert all((folder / "keep.txt").is_file() for folder in kept)


def test_a_link_inside_the_root_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    kept = _folders_with_a_dead_gateways_look(victim)
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    (root / "456-def").symlink_to(kept[0])
    (root / "789-ghi").symlink_to(victim)
    state = StateFolder(root)
    try:
        assert sweep(root) == []
        assert all((folder / "keep.txt").is_file() for folder in kept)
    finally:
        state.close()


def test_a_root_others_can_write_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    root = tmp_path / "nav-gateway-1000"
    kept = _folders_with_a_dead_gateways_look(root)
    os.chmod(root, 0o777)
    with pytest.raises(RuntimeError, match=r"can be written by other users \(mode 0777\)"):
        StateFolder(root)
    assert all((folder / "keep.txt").is_file() for folder in kept)
    assert stat.S_IMODE(root.stat().st_mode) == 0o777


def test_a_root_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "nav-gateway-1000"
    kept = _folders_with_a_dead_gateways_look(root)
    os.chmod(root, 0o700)
    if os.geteuid() == 0:
        os.chown(root, 4242, 4242)  # really another user's
    else:
        real = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: real + 4242)
    with pytest.raises(RuntimeError, match=rf"{root} belongs to user id \d+, not to you"):
        StateFolder(root)
    assert all((folder / "keep.txt").is_file() for folder in kept)


def test_the_default_root_is_made_private_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    old = os.umask(0o022)
    try:
        state = StateFolder()
    finally:
        os.umask(old)
    try:
        root = tmp_path / f"nav-gateway-{os.getuid()}"
        assert state.path.parent == root
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
        assert stat.S_IMODE(state.path.stat().st_mode) == 0o700
    finally:
        state.close()
