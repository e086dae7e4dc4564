"""`NAV_SIM_FAULT`: every fault, rule matching, and configuration errors."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.sim.runner import NavSim

LIST_HEADER = "\x1b[1mNAME       \x1b[0m"


def test_slow_delays_then_behaves_normally(sim: NavSim) -> None:
    normal = sim.demo("sandbox", "list")
    started = time.monotonic()
    slow = sim.demo("sandbox", "list", NAV_SIM_FAULT="sandbox list=slow:0.6")
    assert time.monotonic() - started >= 0.6
    assert (slow.code, slow.stdout_bytes, slow.stderr_bytes) == (0, normal.stdout_bytes, b"")


def test_hang_is_killed_by_a_timeout(sim: NavSim) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        sim.demo("provider", "list", NAV_SIM_FAULT="*=hang", timeout=0.8)


def test_hang_dies_promptly_on_sigterm(sim: NavSim) -> None:
    process = sim.popen("-c", "demo", "sandbox", "list", NAV_SIM_FAULT="*=hang")
    time.sleep(0.3)
    assert process.poll() is None  # still hanging
    started = time.monotonic()
    process.terminate()
    assert process.wait(timeout=2) == -signal.SIGTERM
    assert time.monotonic() - started < 1
    process.communicate()


def test_huge_writes_exactly_that_many_bytes_first(sim: NavSim) -> None:
    normal = sim.demo("inference", "list")
    size = 1_000_003
    result = sim.demo("inference", "list", NAV_SIM_FAULT=f"inference list=huge:{size}")
    assert result.code == 0 and result.err == ""
    prefix, rest = result.stdout_bytes[:size], result.stdout_bytes[size:]
    assert rest == normal.stdout_bytes
    assert prefix.endswith(b"\n") and prefix.startswith(b"[1772644940.115] [sandbox] [DEBUG] ")
    assert prefix.decode().count("CONNECT action=allow") > 1000


def test_exit_fault_prints_a_runtime_error(sim: NavSim) -> None:
    result = sim.demo("sandbox", "create", "--name", "x", NAV_SIM_FAULT="sandbox create=exit:3")
    assert (result.code, result.out) == (3, "")
    assert result.err == (
        'Error:   × status: Unavailable, message: "injected fault: exit 3", details: [],\n'
        "  │ metadata: MetadataMap { headers: {} }\n\n"
    )
    assert "x" not in sim.demo("sandbox", "list", "--names").out.split()  # nothing ran


def test_garbage_mixes_invalid_utf8_into_stdout(sim: NavSim) -> None:
    normal = sim.demo("provider", "list")
    result = sim.demo("provider", "list", NAV_SIM_FAULT="*=garbage")
    assert result.code == 0
    with pytest.raises(UnicodeDecodeError):
        result.stdout_bytes.decode("utf-8")
    assert result.stdout_bytes.endswith(normal.stdout_bytes)
    assert len(result.stdout_bytes) > len(normal.stdout_bytes)


def test_rules_apply_only_to_their_command_and_in_order(sim: NavSim) -> None:
    spec = "sandbox list=exit:4; provider list=garbage ;inference list=huge:10"
    assert sim.demo("sandbox", "list", NAV_SIM_FAULT=spec).code == 4
    assert sim.demo("cluster", "status", NAV_SIM_FAULT=spec).stdout_bytes == (
        sim.demo("cluster", "status").stdout_bytes
    )
    both = sim.demo("inference", "list", NAV_SIM_FAULT="*=huge:10;inference list=exit:9")
    assert (both.code, both.stdout_bytes) == (9, both.stdout_bytes[:10])
    assert len(both.stdout_bytes) == 10
    assert sim.demo("--help", NAV_SIM_FAULT="*=exit:5").code == 0  # help never runs a command


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("*=explode", "unknown fault 'explode' (expected one of: slow, hang, huge, exit, garbage)"),
        ("sandbox lists=hang", "unknown command 'sandbox lists'"),
        ("sandbox list", "expected COMMAND=FAULT[:ARG]"),
        ("*=slow", "slow takes SECONDS"),
        ("*=slow:-1", "slow takes a number of seconds >= 0"),
        ("*=huge:lots", "huge takes a whole number"),
        ("*=exit:0", "exit takes an exit code from 1 to 255"),
        ("*=hang:5", "hang takes no argument"),
    ],
)
def test_bad_fault_specs_exit_2(sim: NavSim, spec: str, problem: str) -> None:
    result = sim.demo("sandbox", "list", NAV_SIM_FAULT=spec)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("nav-sim: invalid NAV_SIM_FAULT rule ")
    assert problem in result.err
    assert not sim.state.exists()  # rejected before anything ran
