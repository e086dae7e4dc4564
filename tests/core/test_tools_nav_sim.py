"""The nine tools end to end: `NavToolRunner` driving the `nav-sim` fake cluster CLI.

Each test runs the real console script as a subprocess with its own state
file and a fixed clock, so the output is the simulator's real, deterministic
text (colour codes included, which the runner must strip), and every fault
switch is exercised through the same path the agent uses.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from navagent.core.messages import ToolCall
from navagent.core.nav_cli import NO_OUTPUT, NavToolRunner, resolve_nav_cli
from navagent.core.tools import ToolOutcome

CLOCK = "2026-03-04T17:02:11Z"


@pytest.fixture(scope="module")
def nav_sim() -> Path:
    if importlib.util.find_spec("navagent.fixtures.nav_sim") is None:
        pytest.skip("nav-sim (navagent.fixtures.nav_sim) is not in this tree yet")
    # Installed next to this interpreter by `pip install -e .`; found the way the agent finds it.
    search = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return resolve_nav_cli(environ={"NAV_AGENT_CLI": "nav-sim", "PATH": search})


@pytest.fixture
def sim_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "NAV_SIM_STATE": str(tmp_path / "cluster.json"),
        "NAV_SIM_CLOCK": CLOCK,
    }


def make_runner(nav_sim: Path, env: dict[str, str], **options: Any) -> NavToolRunner:
    options.setdefault("timeout_s", 30)
    options.setdefault("kill_grace_s", 0.5)
    options.setdefault("assume_yes", True)
    return NavToolRunner(nav_sim, cluster=options.pop("cluster", "demo"), env=env, **options)


async def run(
    nav_sim: Path,
    env: dict[str, str],
    tool: str,
    arguments: dict[str, Any] | None = None,
    **kw: Any,
) -> ToolOutcome:
    call = ToolCall(id="call_1", name=tool, arguments=json.dumps(arguments or {}))
    outcome = await make_runner(nav_sim, env, **kw).run(call)
    assert "\x1b" not in outcome.content  # nav-sim colours stdout like the real nav
    return outcome


def table(content: str) -> list[list[str]]:
    """Rows of a two-space-separated table, header first."""
    return [re.split(r"\s{2,}", line.strip()) for line in content.splitlines() if line.strip()]


def fields(content: str) -> dict[str, str]:
    """The `  Key: value` lines of a report."""
    return dict(re.findall(r"^  ([A-Z][\w ]*): (.*)$", content, flags=re.MULTILINE))


# --- the nine tools -----------------------------------------------------------------------


async def test_nav_sim_cluster_status(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "cluster_status")
    assert outcome.status == "ok"
    assert outcome.argv == (str(nav_sim), "--cluster", "demo", "cluster", "status")
    assert outcome.content.startswith("Server Status\n\n")
    assert fields(outcome.content) == {
        "Cluster": "demo",
        "Server": "https://127.0.0.1:8080",
        "Status": "Connected",
        "Version": "0.1.0",
    }


async def test_nav_sim_sandbox_list(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_list")
    assert outcome.status == "ok"
    header, *rows = table(outcome.content)
    assert header == ["NAME", "NAMESPACE", "CREATED", "PHASE"]
    assert {row[0]: row[3] for row in rows} == {
        "dev-box": "Ready",
        "gpu-trainer": "Error",
        "py-worker": "Provisioning",
    }
    assert all(row[1] == "navigator" and row[2] < CLOCK.replace("T", " ") for row in rows)


async def test_nav_sim_sandbox_get(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_get", {"name": "dev-box"})
    assert outcome.status == "ok"
    report = fields(outcome.content)
    assert (report["Name"], report["Namespace"], report["Phase"]) == (
        "dev-box",
        "navigator",
        "Ready",
    )
    assert "\nPolicy:\n" in outcome.content
    assert "  version: 1\n" in outcome.content


async def test_nav_sim_sandbox_logs(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_logs", {"name": "gpu-trainer", "lines": 2})
    assert outcome.status == "ok"
    assert outcome.argv[-2:] == ("-n", "2")
    lines = outcome.content.splitlines()
    assert len(lines) == 2
    assert all(re.match(r"\[\d+\.\d{3}\] \[(gateway|sandbox)\] \[[A-Z ]{5}\] ", ln) for ln in lines)
    assert "ImagePullBackOff" in lines[-1]


async def test_nav_sim_sandbox_logs_default_shows_more(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_logs", {"name": "dev-box"})
    assert "-n" not in outcome.argv
    assert outcome.status == "ok"
    assert len(outcome.content.splitlines()) > 2


async def test_nav_sim_provider_list(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "provider_list")
    assert outcome.status == "ok"
    header, *rows = table(outcome.content)
    assert header == ["NAME", "TYPE", "CREDENTIAL_KEYS", "CONFIG_KEYS"]
    assert [row[:2] for row in rows] == [
        ["anthropic", "claude"],
        ["gh", "github"],
        ["nvidia", "nvidia"],
    ]


async def test_nav_sim_provider_get(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "provider_get", {"name": "anthropic"})
    assert outcome.status == "ok"
    report = fields(outcome.content)
    assert (report["Name"], report["Type"]) == ("anthropic", "claude")
    assert report["Credential keys"] == "ANTHROPIC_API_KEY"
    assert report["Config keys"] == "<none>"


async def test_nav_sim_inference_route_list(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "inference_route_list")
    assert outcome.status == "ok"
    assert outcome.argv[-2:] == ("inference", "list")
    header, *rows = table(outcome.content)
    assert header == ["NAME", "HINT", "BASE URL", "PROTOCOLS", "MODEL", "ENABLED"]
    assert {row[0]: (row[1], row[-1]) for row in rows} == {
        "qwzmke": ("agent", "true"),
        "claude-route": ("claude", "true"),
        "vllm-local": ("local", "false"),
    }


async def test_nav_sim_sandbox_create_runs_the_command_and_persists(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    asked: list[tuple[str, ...]] = []

    async def approve(call: ToolCall, argv: tuple[str, ...]) -> bool:
        asked.append(argv)
        return True

    arguments = {"name": "py-job", "command": "echo 'hello world'"}
    outcome = await run(
        nav_sim, sim_env, "sandbox_create", arguments, assume_yes=False, confirm=approve
    )
    assert outcome.status == "ok", outcome.content
    assert asked == [outcome.argv]
    assert outcome.argv[-4:] == ("--keep", "--", "echo", "hello world")
    assert outcome.content.startswith("\nCreated sandbox:\n")
    phases = re.findall(r"^  Phase: (\w+)$", outcome.content, flags=re.MULTILINE)
    assert phases[0] == "Provisioning" and phases[-1] == "Ready"
    assert outcome.content.endswith("hello world\n")
    listed = await run(nav_sim, sim_env, "sandbox_list")
    assert ["py-job", "navigator", CLOCK.replace("T", " ").rstrip("Z"), "Ready"] in table(
        listed.content
    )


async def test_nav_sim_sandbox_delete(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_delete", {"name": "py-worker"})
    assert (outcome.status, outcome.content) == ("ok", "✓ Deleted sandbox py-worker\n")
    again = await run(nav_sim, sim_env, "sandbox_list")
    assert {row[0]: row[3] for row in table(again.content)[1:]}["py-worker"] == "Deleting"


async def test_nav_sim_sandbox_delete_declined_leaves_the_cluster_alone(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    async def refuse(call: ToolCall, argv: tuple[str, ...]) -> bool:
        return False

    outcome = await run(
        nav_sim, sim_env, "sandbox_delete", {"name": "dev-box"}, assume_yes=False, confirm=refuse
    )
    assert outcome.status == "declined"
    listed = await run(nav_sim, sim_env, "sandbox_list")
    assert {row[0]: row[3] for row in table(listed.content)[1:]}["dev-box"] == "Ready"


# --- unknown names and clusters -----------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ("sandbox_get", "sandbox not found"),
        ("sandbox_logs", "sandbox not found"),
        ("sandbox_delete", "sandbox not found"),
        ("provider_get", "provider not found"),
    ],
)
async def test_nav_sim_unknown_name_reports_not_found_and_exit_code(
    nav_sim: Path, sim_env: dict[str, str], tool: str, message: str
) -> None:
    outcome = await run(nav_sim, sim_env, tool, {"name": "no-such-thing"})
    assert outcome.status == "failed"
    assert outcome.exit_code == 1
    assert outcome.content.startswith(f'\nError:   × status: NotFound, message: "{message}"')
    assert outcome.content.endswith("\nCommand exited with code: 1")


async def test_nav_sim_unknown_cluster(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_list", cluster="staging")
    assert (outcome.status, outcome.exit_code) == ("failed", 1)
    assert "Unknown cluster 'staging'." in outcome.content


async def test_nav_sim_unknown_tool_runs_nothing(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, sim_env, "sandbox_restart", {"name": "dev-box"})
    assert (outcome.status, outcome.argv) == ("unknown_tool", ())
    assert not Path(sim_env["NAV_SIM_STATE"]).exists()


# --- faults -------------------------------------------------------------------------------


def with_fault(env: dict[str, str], fault: str) -> dict[str, str]:
    return {**env, "NAV_SIM_FAULT": fault}


async def test_nav_sim_slow_within_the_timeout_succeeds(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    env = with_fault(sim_env, "sandbox list=slow:0.6")
    outcome = await run(nav_sim, env, "sandbox_list", timeout_s=20)
    assert outcome.status == "ok"
    assert outcome.duration_s >= 0.6
    assert table(outcome.content)[0][0] == "NAME"


async def test_nav_sim_slow_over_the_timeout_is_killed(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    env = with_fault(sim_env, "sandbox list=slow:30")
    outcome = await run(nav_sim, env, "sandbox_list", timeout_s=1.5)
    assert outcome.status == "timeout"
    assert outcome.content == "\nCommand timed out after 1.5 s and was killed."
    assert outcome.duration_s < 10


async def test_nav_sim_hang_is_killed(nav_sim: Path, sim_env: dict[str, str]) -> None:
    outcome = await run(nav_sim, with_fault(sim_env, "*=hang"), "cluster_status", timeout_s=1)
    assert (outcome.status, outcome.exit_code) == ("timeout", None)
    assert outcome.content.endswith("Command timed out after 1 s and was killed.")


async def test_nav_sim_huge_output_is_capped_keeping_the_real_report(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    env = with_fault(sim_env, "sandbox list=huge:3000000")
    outcome = await run(nav_sim, env, "sandbox_list", output_cap_bytes=16_384)
    assert outcome.status == "ok"
    match = re.search(
        r"\n\[\.\.\. ([\d,]+) more bytes of output omitted \.\.\.\]\n", outcome.content
    )
    assert match is not None
    assert int(match.group(1).replace(",", "")) > 3_000_000 - 16_384
    assert len(outcome.content.encode()) < 16_384 + 100
    # The tail keeps what came last: the real table after the flood.
    assert "dev-box" in outcome.content[match.end() :]


async def test_nav_sim_exit_code_is_reported(nav_sim: Path, sim_env: dict[str, str]) -> None:
    env = with_fault(sim_env, "sandbox get=exit:3")
    outcome = await run(nav_sim, env, "sandbox_get", {"name": "dev-box"})
    assert (outcome.status, outcome.exit_code) == ("failed", 3)
    assert outcome.content.startswith("\nError:   × status: Unavailable")
    assert outcome.content.endswith("\nCommand exited with code: 3")


async def test_nav_sim_garbage_survives_as_replacement_characters(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    outcome = await run(nav_sim, with_fault(sim_env, "*=garbage"), "provider_list")
    assert outcome.status == "ok"
    assert "\ufffd" in outcome.content
    assert "anthropic  claude" in outcome.content  # the real output still follows


async def test_nav_sim_faults_only_hit_their_command(
    nav_sim: Path, sim_env: dict[str, str]
) -> None:
    env = with_fault(sim_env, "sandbox list=exit:4")
    outcome = await run(nav_sim, env, "provider_list")
    assert outcome.status == "ok"
    assert outcome.content != NO_OUTPUT
