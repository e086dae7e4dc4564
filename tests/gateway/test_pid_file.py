"""The gateway's pid file: private, never written through a link, and proof of its gateway.

A pid is this gateway only when that process holds the pid file's write
lock (taken before the file got its name, dropped by the kernel when the
process dies): a decoy whose command line says `gateway serve`, a reused
pid, or a file naming one process while another holds it prove nothing.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from navagent.gateway._instance import PidFile, running_gateway

pytestmark = pytest.mark.slow  # most tests start a fake gateway or a decoy process

FAKE_GATEWAY = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from navagent.gateway._instance import PidFile\n"
    "PidFile(Path(sys.argv[1])).write()\n"
    "print('ready', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def decoy() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose arguments contain `gateway serve`, and that dies of a SIGHUP."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "gateway", "serve"]
    )
    cmdline = Path(f"/proc/{process.pid}/cmdline")
    deadline = time.monotonic() + 30
    while b"gateway\0serve" not in cmdline.read_bytes():  # set once exec has finished
        assert time.monotonic() < deadline, "the decoy never started"
        time.sleep(0.01)
    yield process
    process.kill()
    process.wait(10)


def start_fake_gateway(pid_file: Path) -> subprocess.Popen[str]:
    """A process that writes and holds `pid_file` as `nav gateway serve` does."""
    process = subprocess.Popen(
        [sys.executable, "-c", FAKE_GATEWAY, str(pid_file)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@pytest.fixture
def fake_gateway(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    pid_file = tmp_path / "gw.pid"
    process = start_fake_gateway(pid_file)
    yield process, pid_file
    process.kill()
    process.wait(10)
    assert process.stdout is not None
    process.stdout.close()


def test_the_writer_holding_the_lock_is_the_running_gateway(
    fake_gateway: tuple[subprocess.Popen[str], Path],
) -> None:
    process, pid_file = fake_gateway
    assert running_gateway(pid_file) == process.pid
    with pytest.raises(RuntimeError, match=f"names gateway {process.pid}, which is running"):
        PidFile(pid_file)
    process.kill()
    process.wait(10)
    # Its lock went with it: the file is stale, a new gateway may take it over.
    with pytest.raises(RuntimeError, match="the gateway is not running"):
        running_gateway(pid_file)
    PidFile(pid_file)


def test_a_decoy_named_in_an_unlocked_pid_file_is_refused(
    tmp_path: Path, decoy: subprocess.Popen[bytes]
) -> None:
    pid_file = tmp_path / "gw.pid"
    pid_file.write_text(f"{decoy.pid}\n")
    with pytest.raises(RuntimeError) as refused:
        running_gateway(pid_file)
    message = str(refused.value)
    assert f"process {decoy.pid}" in message and "nothing holds the file's lock" in message
    assert "time.sleep(120)" in message and "nothing was signalled" in message
    PidFile(pid_file)  # stale: a gateway may write over it


def test_a_file_naming_one_process_while_another_holds_it_is_refused(
    fake_gateway: tuple[subprocess.Popen[str], Path], decoy: subprocess.Popen[bytes]
) -> None:
    process, pid_file = fake_gateway
    with open(pid_file, "r+", encoding="utf-8") as same_file:  # same inode: the lock stays
        same_file.write(f"{decoy.pid}\n")
    with pytest.raises(
        RuntimeError, match=f"names process {decoy.pid}, but process {process.pid} holds its lock"
    ):
        running_gateway(pid_file)


def test_the_pid_file_is_private_and_written_past_planted_links(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    pid_file = tmp_path / "gw.pid"
    planted = tmp_path / f".gw.pid.{os.getpid()}"  # the temporary name earlier versions used
    planted.symlink_to(victim)
    old = os.umask(0o022)
    try:
        written = PidFile(pid_file)
        written.write()
    finally:
        os.umask(old)
    assert victim.read_text() == "precious\n" and planted.is_symlink()
    assert pid_file.read_text() == f"{os.getpid()}\n"
    assert stat.S_IMODE(pid_file.stat().st_mode) == 0o600
    written.remove()
    assert not pid_file.exists() and victim.read_text() == "precious\n"


def test_a_link_at_the_pid_files_name_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    pid_file = tmp_path / "gw.pid"
    pid_file.symlink_to(victim)
    with pytest.raises(RuntimeError, match="symbolic link.*nothing was signalled"):
        running_gateway(pid_file)
    written = PidFile(pid_file)
    written.write()
    assert victim.read_text() == "precious\n"
    assert not pid_file.is_symlink() and pid_file.read_text() == f"{os.getpid()}\n"
    written.remove()
    assert victim.read_text() == "precious\n"


def test_a_gateway_removes_only_the_pid_file_it_wrote(tmp_path: Path) -> None:
    pid_file = tmp_path / "gw.pid"
    first = PidFile(pid_file)
    first.write()
    pid_file.unlink()
    pid_file.write_text("4242\n")  # someone else's file now has the name
    first.remove()
    assert pid_file.read_text() == "4242\n"
