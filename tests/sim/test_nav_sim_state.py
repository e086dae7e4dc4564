"""The state file: seeding, isolation, locking, atomic replacement, corruption, the clock."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from navagent.fixtures.nav_sim._state import write_atomically
from tests.sim.runner import NavSim


def test_state_is_created_and_seeded_on_first_use(sim: NavSim) -> None:
    assert not sim.state.exists()
    assert sim.demo("sandbox", "list").code == 0
    state = json.loads(sim.state.read_text(encoding="utf-8"))
    assert state["format"] == "nav-sim/1" and state["active_cluster"] is None
    demo = state["clusters"]["demo"]
    assert {s["name"]: s["phase"] for s in demo["sandboxes"]} == {
        "dev-box": "Ready",
        "gpu-trainer": "Error",
        "py-worker": "Provisioning",
    }
    assert [(p["name"], p["type"]) for p in demo["providers"]] == [
        ("anthropic", "claude"),
        ("gh", "github"),
        ("nvidia", "nvidia"),
    ]
    assert any(r["spec"]["routing_hint"] == "agent" for r in demo["inference_routes"])
    assert state["clusters"]["offline"]["gateway"] == "down"
    # Key names only: no field anywhere can hold a secret value.
    assert "credentials" not in json.dumps(state) and "api_key" not in json.dumps(state)


def test_active_cluster_from_the_state_file(sim: NavSim) -> None:
    sim.demo("sandbox", "list")
    state = json.loads(sim.state.read_text(encoding="utf-8"))
    state["active_cluster"] = "demo\n"  # trimmed, like ~/.config/navigator/active_cluster
    sim.state.write_text(json.dumps(state), encoding="utf-8")
    assert sim.run("sandbox", "list", "--names").out == "dev-box\ngpu-trainer\npy-worker\n"


def test_routes_without_spec_and_empty_cluster(sim: NavSim) -> None:
    sim.demo("sandbox", "list")
    state = json.loads(sim.state.read_text(encoding="utf-8"))
    demo = state["clusters"]["demo"]
    demo["inference_routes"] = [{"id": "r1", "name": "abcdef", "spec": None}]
    demo["sandboxes"] = []
    sim.state.write_text(json.dumps(state), encoding="utf-8")
    routes = sim.demo("inference", "list").out.splitlines()
    assert routes[1] == "  ".join(
        cell.ljust(width)
        for cell, width in zip(
            ["abcdef", "<missing>", "", "", "", "false"], [12, 16, 40, 30, 30, 8], strict=True
        )
    )
    assert sim.demo("sandbox", "list").out == "No sandboxes found.\n"
    assert sim.demo("sandbox", "list", "--ids").out == ""


def test_two_state_files_never_mix(tmp_path: Path) -> None:
    first, second = NavSim(tmp_path / "a.json"), NavSim(tmp_path / "b.json")
    assert first.demo("sandbox", "create", "--name", "only-in-a", "--keep").code == 0
    assert second.demo("sandbox", "delete", "dev-box").code == 0
    assert "only-in-a" in first.demo("sandbox", "list", "--names").out
    assert "only-in-a" not in second.demo("sandbox", "list", "--names").out
    assert "dev-box" in first.demo("sandbox", "list", "--names").out
    assert "dev-box" not in second.demo("sandbox", "list", "--names").out


def test_concurrent_creates_all_land(sim: NavSim) -> None:
    sim.demo("sandbox", "list")  # seed first, so the racers only contend for updates
    names = [f"racer-{index}" for index in range(8)]
    processes = [sim.popen("-c", "demo", "sandbox", "create", "--name", n, "--keep") for n in names]
    results = [(process.wait(timeout=30), process) for process in processes]
    for code, process in results:
        assert process.stdout is not None and process.stderr is not None
        assert code == 0, process.stderr.read()
        process.stdout.close()
        process.stderr.close()
    listed = sim.demo("sandbox", "list", "--names").out.splitlines()
    assert sorted(set(listed) & set(names)) == names
    ids = sim.demo("sandbox", "list", "--ids").out.splitlines()
    assert len(set(ids)) == len(ids) == 11


def test_corrupt_state_is_reported_and_left_untouched(sim: NavSim) -> None:
    sim.state.write_bytes(b'{"format": "nav-sim/1", "clusters": ')
    result = sim.demo("sandbox", "create", "--name", "x", "--keep")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"nav-sim: state file {sim.state} is corrupt (invalid JSON at line 1 column 37: "
        "Expecting value); fix it or delete it to reseed\n"
    )
    assert sim.state.read_bytes() == b'{"format": "nav-sim/1", "clusters": '


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        ("[]", "state: expected an object"),
        ('{"format": "nav-sim/1", "active_cluster": null}', "state: missing field 'clusters'"),
        (
            '{"format": "nav-sim/1", "active_cluster": null, "clusters": {"demo": {"name": 1}}}',
            "state.clusters.demo.name: expected a string",
        ),
        ('{"format": "v0", "active_cluster": null, "clusters": {}}', "expected 'nav-sim/1'"),
        ("", "invalid JSON at line 1 column 1: Expecting value"),
    ],
)
def test_state_with_the_wrong_shape(sim: NavSim, content: str, detail: str) -> None:
    sim.state.write_text(content, encoding="utf-8")
    result = sim.demo("sandbox", "list")
    assert result.code == 1 and detail in result.err and str(sim.state) in result.err
    assert sim.state.read_text(encoding="utf-8") == content


_IMPORT_PROBE = """
import io, os, sys
from navagent.fixtures.nav_sim._io import Streams
from navagent.fixtures.nav_sim._main import run
streams = Streams(io.BytesIO(), io.BytesIO())
code = run(["-c", "demo", "sandbox", "get", "dev-box"], os.environ, streams)
heavy = {"pydantic", "rich", "typer", "yaml", "grpc", "google", "httpx", "navagent.core"}
print(code, sorted(name for name in sys.modules if name.split(".")[0] in heavy or name in heavy))
"""


def test_a_run_imports_nothing_heavy(sim: NavSim) -> None:
    # Start-up time is the budget that matters (bench/nav_sim_startup.py): stdlib only.
    probe = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE], env=sim.env(), capture_output=True, check=True
    )
    assert probe.stdout == b"0 []\n"


def test_missing_state_variable(sim: NavSim) -> None:
    result = sim.run("-c", "demo", "sandbox", "list", NAV_SIM_STATE="")
    assert result.code == 2
    assert result.err.startswith("nav-sim: NAV_SIM_STATE is not set")
    assert sim.run("--version", NAV_SIM_STATE="").code == 0  # help and version need no state


def test_write_atomically_replaces_or_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    write_atomically(str(target), b"old")
    assert target.read_bytes() == b"old"

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        write_atomically(str(target), b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]  # temp file removed
    monkeypatch.undo()
    write_atomically(str(target), b"new")
    assert target.read_bytes() == b"new"


_KILLED_WRITER = """
import os, sys, time
from navagent.fixtures.nav_sim import _state

def stall(fd):  # the new bytes are written; stall before they are synced and renamed
    print("writing", flush=True)
    time.sleep(60)

os.fsync = stall
_state.write_atomically(sys.argv[1], b'{"new": "state"}')
"""


def test_a_writer_killed_mid_save_leaves_the_old_state(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text('{"old": "state"}', encoding="utf-8")
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(target)], stdout=subprocess.PIPE
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == b"writing\n"
    writer.kill()
    writer.communicate(timeout=10)
    assert json.loads(target.read_text(encoding="utf-8")) == {"old": "state"}
    (temporary,) = (p for p in tmp_path.iterdir() if p.name != "state.json")
    assert temporary.read_bytes() == b'{"new": "state"}'  # written beside it, never over it


# -- the clock --------------------------------------------------------------------

SCRIPT = [
    ["sandbox", "create", "--name", "det", "--keep", "--", "date"],
    ["sandbox", "create", "--keep"],
    ["sandbox", "list"],
    ["sandbox", "delete", "det"],
    ["sandbox", "logs", "det"],
    ["sandbox", "list", "--ids"],
]


def _transcript(runner: NavSim) -> bytes:
    parts = []
    for args in SCRIPT:
        result = runner.demo(*args)
        parts += [str(result.code).encode(), result.stdout_bytes, result.stderr_bytes]
    return b"\0".join(parts) + runner.state.read_bytes()


def test_fixed_clock_makes_runs_byte_identical(tmp_path: Path) -> None:
    first = _transcript(NavSim(tmp_path / "one.json"))
    second = _transcript(NavSim(tmp_path / "two.json"))
    assert first == second
    assert b"Wed Mar  4 17:02:11 UTC 2026\n" in first  # `date` inside the sandbox
    assert b"2026-03-04 17:02:11" in first


def test_real_clock_gives_random_ids_and_current_times(tmp_path: Path) -> None:
    runner = NavSim(tmp_path / "real.json", clock=None)
    ids = set()
    for _ in range(2):
        created = runner.demo("sandbox", "create", "--keep").out
        ids.add(re.findall(r"Id:\x1b\[0m (\S+)", created)[0])
    assert len(ids) == 2
    assert (
        NavSim(tmp_path / "other.json", clock="2026-01-01T00:00:00+00:00")
        .demo("sandbox", "create", "--name", "n", "--keep")
        .code
        == 0
    )


def test_bad_clock_value(sim: NavSim) -> None:
    result = sim.run("-c", "demo", "sandbox", "list", NAV_SIM_CLOCK="yesterday")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "nav-sim: NAV_SIM_CLOCK='yesterday' is not an ISO-8601 UTC time "
        "(for example 2026-03-04T17:02:11Z)\n"
    )
