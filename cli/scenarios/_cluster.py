"""The simulated cluster a scenario's tools run against: `nav-sim` and its state file.

Each replay gets its own state file in a temporary folder, so a create in one
scenario never shows up in another. The starting point is nav-sim's own seeded
state, produced by running nav-sim once (with the scenario clock) and reused
for every scenario of the run; the scenario's `cluster:` section then removes
and adds sandboxes. Going through nav-sim rather than its private seeding code
keeps the state exactly what the tool binary would create itself.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from navagent.cli.scenarios._model import ClusterSpec, SandboxSpec
from navagent.core.errors import NavAgentError

__all__ = [
    "SCENARIO_CLOCK",
    "ClusterError",
    "ClusterRun",
    "SimulatedCluster",
    "find_nav_sim",
]

SCENARIO_CLOCK = "2026-03-04T17:02:11Z"
""""Now" for nav-sim and the simulated provider in every scenario: output,
ids and timestamps are then the same on every run, which cassettes need."""

_NAV_SIM_ENV = ("NAV_SIM_STATE", "NAV_SIM_CLOCK", "NAV_SIM_FAULT", "NAVIGATOR_CLUSTER")


class ClusterError(NavAgentError):
    """nav-sim cannot be found or run, or a scenario's cluster section does not fit its state."""


def find_nav_sim() -> Path:
    """The `nav-sim` console script of this installation (next to Python), else on PATH.

    Raises:
        ClusterError: it is in neither place.
    """
    beside = Path(sys.executable).parent / "nav-sim"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("nav-sim")
    if found is None:
        raise ClusterError(
            "cannot find the nav-sim binary next to Python or on PATH; "
            "install nav-agent (pip install -e .) in this environment"
        )
    return Path(found)


@dataclass(frozen=True)
class ClusterRun:
    """One replay's cluster: where its state lives and how to run nav-sim on it."""

    binary: Path
    name: str
    """The cluster the agent targets (`--cluster`)."""
    state_path: Path
    env: Mapping[str, str]
    """The environment for every nav-sim run: ours plus state, clock and fault."""


def _clock_ms(clock: str) -> int:
    return round(datetime.fromisoformat(clock.replace("Z", "+00:00")).timestamp() * 1000)


class SimulatedCluster:
    """Prepares nav-sim state files for scenarios; nav-sim seeds once per instance."""

    def __init__(self, *, binary: Path | None = None, clock: str = SCENARIO_CLOCK) -> None:
        """Use `binary` (default: `find_nav_sim()`) with the fixed `clock`."""
        self.binary = binary or find_nav_sim()
        self.clock = clock
        self._seed: dict[str, Any] | None = None

    def _base_env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in _NAV_SIM_ENV}
        env["NAV_SIM_CLOCK"] = self.clock
        return env

    def seeded_state(self) -> dict[str, Any]:
        """nav-sim's seeded state at the scenario clock (a copy; computed once).

        Raises:
            ClusterError: nav-sim failed to run.
        """
        if self._seed is None:
            with tempfile.TemporaryDirectory(prefix="nav-scenario-seed-") as folder:
                state = Path(folder) / "state.json"
                env = {**self._base_env(), "NAV_SIM_STATE": str(state)}
                try:
                    done = subprocess.run(
                        [str(self.binary), "--cluster", "demo", "cluster", "status"],
                        env=env,
                        capture_output=True,
                        timeout=30,
                        check=False,
                    )
                except (OSError, subprocess.TimeoutExpired) as exc:
                    raise ClusterError(f"cannot run {self.binary}: {exc}") from None
                if done.returncode != 0 or not state.is_file():
                    stderr = done.stderr.decode("utf-8", "replace").strip()
                    raise ClusterError(
                        f"{self.binary} did not seed a state (exit {done.returncode}): {stderr}"
                    )
                self._seed = json.loads(state.read_text(encoding="utf-8"))
        return copy.deepcopy(self._seed)

    def build_state(self, spec: ClusterSpec) -> dict[str, Any]:
        """The state file content for `spec`: the seed with its changes applied.

        Raises:
            ClusterError: the cluster, or a sandbox to remove, does not exist,
                or a sandbox to add already does.
        """
        state = self.seeded_state()
        clusters: dict[str, Any] = state["clusters"]
        if spec.name not in clusters:
            raise ClusterError(
                f"cluster: name: nav-sim has no cluster {spec.name!r}"
                f" (it has: {', '.join(clusters)})"
            )
        cluster = clusters[spec.name]
        if spec.start == "empty":
            cluster.update(sandboxes=[], providers=[], inference_routes=[])
        sandboxes: list[dict[str, Any]] = cluster["sandboxes"]
        names = [sandbox["name"] for sandbox in sandboxes]
        for name in spec.remove_sandboxes:
            if name not in names:
                raise ClusterError(
                    f"cluster: remove_sandboxes: no sandbox {name!r} in cluster {spec.name!r}"
                    f" (it has: {', '.join(names) or 'none'})"
                )
            names.remove(name)
        sandboxes[:] = [sandbox for sandbox in sandboxes if sandbox["name"] in names]
        for added in spec.add_sandboxes:
            if added.name in names:
                raise ClusterError(
                    f"cluster: add_sandboxes: sandbox {added.name!r} already exists in"
                    f" cluster {spec.name!r}"
                )
            names.append(added.name)
            sandboxes.append(self._sandbox(spec.name, added))
        return state

    def _sandbox(self, cluster: str, spec: SandboxSpec) -> dict[str, Any]:
        now = _clock_ms(self.clock)
        count = len(spec.logs)
        return {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"nav-scenario:{cluster}:{spec.name}")),
            "name": spec.name,
            "namespace": "navigator",
            "created_at_ms": now - spec.age_minutes * 60_000,
            "phase": spec.phase,
            "image": spec.image,
            "providers": list(spec.providers),
            "policy": None,
            "logs": [
                {
                    "ts_ms": now - (count - index) * 60_000,
                    "source": "sandbox",
                    "level": "INFO",
                    "target": "navigator_sandbox",
                    "message": message,
                    "fields": {},
                }
                for index, message in enumerate(spec.logs)
            ],
        }

    def prepare(self, spec: ClusterSpec, folder: Path) -> ClusterRun:
        """Write the state for `spec` into `folder` and describe how to run nav-sim on it.

        Raises:
            ClusterError: see `build_state`.
        """
        state_path = folder / "nav-sim-state.json"
        state_path.write_text(
            json.dumps(self.build_state(spec), ensure_ascii=False, indent=1), encoding="utf-8"
        )
        env = {**self._base_env(), "NAV_SIM_STATE": str(state_path)}
        if spec.fault:
            env["NAV_SIM_FAULT"] = spec.fault
        return ClusterRun(binary=self.binary, name=spec.name, state_path=state_path, env=env)
