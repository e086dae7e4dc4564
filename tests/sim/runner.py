"""Run the installed `nav-sim` console script against a private state file (test helper)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

CLOCK = "2026-03-04T17:02:11Z"
CLOCK_CREATED = "2026-03-04 17:02:11"
"""CLOCK as the CREATED column shows it."""
ESC = "\x1b["


def nav_sim_binary() -> Path:
    """The console script next to the running interpreter (an editable install puts it there)."""
    path = Path(sys.executable).parent / "nav-sim"
    if not path.exists():
        pytest.fail(f"{path} is missing: install the project (pip install -e .)")
    return path


@dataclass(frozen=True)
class Result:
    """One finished invocation."""

    argv: tuple[str, ...]
    code: int
    stdout_bytes: bytes
    stderr_bytes: bytes

    @property
    def out(self) -> str:
        return self.stdout_bytes.decode()

    @property
    def err(self) -> str:
        return self.stderr_bytes.decode()

    def transcript(self) -> str:
        """A readable, exact record for snapshots: ESC shown as ␛, nothing else changed."""
        return (
            f"$ navigator {' '.join(self.argv)}\n"
            f"exit: {self.code}\n"
            f"--- stdout\n{self.out.replace(chr(27), '␛')}"
            f"--- stderr\n{self.err.replace(chr(27), '␛')}"
        )


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The test process's environment without any navigator or nav-sim settings, plus `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NAVIGATOR_", "NAV_SIM_"))
    }
    env.update(extra)
    return env


class NavSim:
    """`nav-sim` bound to one state file and (by default) the fixed clock."""

    def __init__(self, state: Path, *, clock: str | None = CLOCK) -> None:
        self.state = state
        self.clock = clock
        self.binary = str(nav_sim_binary())

    def env(self, **extra: str) -> dict[str, str]:
        base = {"NAV_SIM_STATE": str(self.state)}
        if self.clock is not None:
            base["NAV_SIM_CLOCK"] = self.clock
        return clean_env({**base, **extra})

    def popen(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [self.binary, *args],
            env=self.env(**env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def run(self, *args: str, timeout: float = 10, **env: str) -> Result:
        completed = subprocess.run(
            [self.binary, *args],
            env=self.env(**env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return Result(args, completed.returncode, completed.stdout, completed.stderr)

    def demo(self, *args: str, timeout: float = 10, **env: str) -> Result:
        """Run against the seeded `demo` cluster, `--cluster` first as the agent does."""
        return self.run("--cluster", "demo", *args, timeout=timeout, **env)
