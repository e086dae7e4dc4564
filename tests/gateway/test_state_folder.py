"""The gateway's state folder: a sweep removes exactly the folders of dead gateways.

A folder under its final name is always locked by a live gateway, so a free
lock is proof of death however young the folder is (no age guess that a fast
restart could beat); only a folder still being made gets time.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

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
