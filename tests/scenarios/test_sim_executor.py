"""nav-sim in process gives what its process gives; real processes stay where they must."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from navagent.core._process import run_process
from navagent.fixtures import nav_sim
from navagent.fixtures.harness import SimulatedCluster
from navagent.fixtures.harness.replay._sim_executor import NavSimExecutor
from navagent.fixtures.harness.scenarios._model import ClusterSpec, SandboxSpec

# One session of command lines: reads, writes (create, delete, the Deleting
# state seen once), errors of every kind (clap usage, help, unknown cluster
# and sandbox, gateway down, not simulated) and the faults that do not wait.
SESSION: tuple[tuple[tuple[str, ...], str], ...] = (
    (("--cluster", "demo", "cluster", "status"), ""),
    (("--cluster", "demo", "sandbox", "list"), ""),
    (("--cluster", "demo", "sandbox", "get", "dev-box"), ""),
    (("--cluster", "demo", "sandbox", "logs", "gpu-trainer", "-n", "3"), ""),
    (
        ("--cluster", "demo", "sandbox", "create", "--name", "web-2", "--keep", "--", "echo", "hi"),
        "",
    ),
    (("--cluster", "demo", "sandbox", "delete", "py-worker"), ""),
    (("--cluster", "demo", "sandbox", "list"), ""),
    (("--cluster", "demo", "sandbox", "list"), ""),
    (("--cluster", "demo", "sandbox", "get", "no-such-box"), ""),
    (("--cluster", "demo", "provider", "list"), ""),
    (("--cluster", "demo", "provider", "get", "nvidia"), ""),
    (("--cluster", "demo", "inference", "list"), ""),
    (("--cluster", "offline", "cluster", "status"), ""),
    (("--cluster", "nowhere", "sandbox", "list"), ""),
    (("sandbox", "list"), ""),
    (("--cluster", "demo", "sandbox", "lisst"), ""),
    (("--cluster", "demo", "sandbox", "get"), ""),
    (("--cluster", "demo", "sandbox", "--help"), ""),
    (("--version",), ""),
    (("--cluster", "demo", "cluster", "admin", "deploy"), ""),
    (("--cluster", "demo", "sandbox", "list"), "sandbox list=exit:7"),
    (("--cluster", "demo", "sandbox", "list"), "*=garbage"),
    (("--cluster", "demo", "sandbox", "list"), "sandbox list=huge:300000"),
    (("--cluster", "demo", "sandbox", "list"), "not a rule"),
)


def _state(cluster: SimulatedCluster, folder: Path) -> Path:
    folder.mkdir()
    spec = ClusterSpec(add_sandboxes=(SandboxSpec(name="intl-box", logs=("Überprüfung ✓",)),))
    run = cluster.prepare(spec, folder)
    assert run.state_path is not None
    return run.state_path


async def test_in_process_results_and_state_are_the_process_results_and_state(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    real_state, here_state = _state(cluster, tmp_path / "real"), _state(cluster, tmp_path / "here")
    executor = NavSimExecutor(cluster.binary)
    executor.processes = 1  # the first real process has run: everything below runs here
    binary = str(cluster.binary)
    for args, fault in SESSION:
        results = []
        for state in (real_state, here_state):
            env = {**cluster._base_env(), "NAV_SIM_STATE": str(state), "NAV_SIM_FAULT": fault}
            run = run_process if state == real_state else executor
            results.append(
                await run(
                    (binary, *args), timeout_s=30, output_cap_bytes=4096, cwd=tmp_path, env=env
                )
            )
        real, here = results
        assert here.argv == real.argv == (binary, *args)
        assert (here.returncode, here.timed_out) == (real.returncode, real.timed_out), args
        assert here.stdout == real.stdout, args
        assert here.stderr == real.stderr, args
        assert json.loads(here_state.read_text()) == json.loads(real_state.read_text()), args
    assert (executor.processes, executor.in_process) == (1, len(SESSION))


@pytest.mark.parametrize(
    ("args", "fault", "waits"),
    [
        (("sandbox", "list"), "sandbox list=slow:0.2", True),
        (("sandbox", "list"), "*=hang", True),
        (("sandbox", "list"), "sandbox get=hang", False),
        (("sandbox", "list"), "sandbox list=exit:3", False),
        (("sandbox", "logs", "dev-box", "--tail"), "", True),
        (("sandbox", "logs", "dev-box", "-n", "3"), "", False),
        (("sandbox", "list", "--bogus"), "*=hang", False),
        (("sandbox", "list"), "bad rule", False),
    ],
)
def test_what_would_wait_is_known_before_it_runs(
    args: tuple[str, ...], fault: str, waits: bool
) -> None:
    assert nav_sim.waits(("--cluster", "demo", *args), {"NAV_SIM_FAULT": fault}) is waits


async def test_the_first_command_waiting_commands_and_other_programs_start_processes(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    state = _state(cluster, tmp_path / "s")
    env = {**cluster._base_env(), "NAV_SIM_STATE": str(state)}
    executor = NavSimExecutor(cluster.binary)
    binary = str(cluster.binary)

    async def run(*argv: str, timeout_s: float = 30, **extra: str) -> tuple[int, int]:
        await executor(argv, timeout_s=timeout_s, output_cap_bytes=4096, env={**env, **extra})
        return executor.processes, executor.in_process

    assert await run(binary, "--cluster", "demo", "sandbox", "list") == (1, 0)
    assert await run(binary, "--cluster", "demo", "sandbox", "list") == (1, 1)
    slow = await executor(
        (binary, "--cluster", "demo", "sandbox", "list"),
        timeout_s=0.5,
        output_cap_bytes=4096,
        env={**env, "NAV_SIM_FAULT": "*=hang"},
    )
    assert slow.timed_out and slow.returncode is None  # really killed at its timeout
    assert (executor.processes, executor.in_process) == (2, 1)
    copy = tmp_path / "nav-sim-copy"
    shutil.copyfile(cluster.binary, copy)
    copy.chmod(0o755)
    assert await run(str(copy), "--cluster", "demo", "sandbox", "list") == (3, 1)
    assert await run(sys.executable, "-c", "pass") == (4, 1)


async def test_every_command_starts_a_process_when_asked(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    state = _state(cluster, tmp_path / "s")
    env = {**cluster._base_env(), "NAV_SIM_STATE": str(state)}
    executor = NavSimExecutor(cluster.binary, real_processes="every")
    for _ in range(2):
        await executor(
            (str(cluster.binary), "--cluster", "demo", "cluster", "status"),
            timeout_s=30,
            output_cap_bytes=4096,
            env=env,
        )
    assert (executor.processes, executor.in_process) == (2, 0)
    with pytest.raises(ValueError, match="real_processes must be one of first, every"):
        NavSimExecutor(cluster.binary, real_processes="some")  # type: ignore[arg-type]


async def test_in_process_fails_to_start_where_a_process_would(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    executor = NavSimExecutor(cluster.binary)
    executor.processes = 1
    argv = (str(cluster.binary), "--cluster", "demo", "cluster", "status")
    for run in (run_process, executor):
        with pytest.raises(FileNotFoundError):
            await run(argv, timeout_s=30, output_cap_bytes=4096, cwd=tmp_path / "missing")


async def test_a_nav_sim_bug_in_process_ends_as_an_uncaught_exception_ends_python(
    cluster: SimulatedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> int:
        raise KeyError("boom")

    monkeypatch.setattr(nav_sim, "run", broken)
    executor = NavSimExecutor(cluster.binary)
    executor.processes = 1
    result = await executor(
        (str(cluster.binary), "--cluster", "demo", "cluster", "status"),
        timeout_s=30,
        output_cap_bytes=4096,
    )
    assert result.returncode == 1 and not result.timed_out
    assert result.stderr.text().startswith("Traceback (most recent call last):")
    assert result.stderr.text().rstrip().endswith("KeyError: 'boom'")
