"""An argument past the operating system's limits, replayed: what exec refuses is exec's to say.

`argument-too-long.yaml` has the model paste a 146 KiB file into a create's
command. The refusal the model reads (its size, MAX_ARG_STRLEN and ARG_MAX) is in
the next request, so a runner that words it wrong, counts the size wrong
(bench/mutation.py's `core/nav_cli.py:170` survivor: `+ 1` made `>> 1`) or runs
the command in process where exec would have refused it fails the replay.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import pytest

from navagent.core import nav_cli
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.replay import _sim_executor
from navagent.fixtures.harness.replay._sim_executor import LONG_ARGV, NavSimExecutor
from navagent.fixtures.harness.scenarios._model import Pasted, ScriptedCall
from navagent.fixtures.harness.scenarios._transcript import render_arguments, shown_value
from navagent.fixtures.provider.wire._script import LONG_PIECE, piece_tokens, split_arguments
from tests.scenarios.conftest import CopyCase

SCENARIO = "argument-too-long"
REFUSAL = nav_cli._start_failure


def half_counted(cli: str, argv: tuple[str, ...], error: OSError) -> str:
    """The mutant: each argument's bytes halved instead of its NUL added (the rest as is)."""
    text = REFUSAL(cli, argv, error)
    sizes = [len(arg.encode("utf-8", "surrogateescape")) for arg in argv]
    right = sum(size + 1 for size in sizes) - sizes[0] - 1
    wrong = sum(size >> 1 for size in sizes) - sizes[0] - 1
    return text.replace(f"({right:,} bytes", f"({wrong:,} bytes")


def unnamed_limits(cli: str, argv: tuple[str, ...], error: OSError) -> str:
    """The refusal before this round: no limit named, so the model cannot tell which."""
    text = REFUSAL(cli, argv, error)
    return text.split(" Linux refuses", 1)[0] + " Nothing ran; use shorter argument values."


@pytest.mark.parametrize("planted", [half_counted, unnamed_limits])
async def test_a_refusal_worded_or_counted_otherwise_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
    planted: Callable[[str, tuple[str, ...], OSError], str],
) -> None:
    folder = copy_case(SCENARIO, providers=("anthropic",))
    scenario = load_scenario(folder / f"{SCENARIO}.yaml")
    assert (await replay_scenario(scenario, "anthropic", cluster=cluster)).passed

    monkeypatch.setattr(nav_cli, "_start_failure", planted)
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)
    assert not result.passed
    assert any(
        "request 2 " in p and "differs from the cassette" in p and "content[0].content" in p
        for p in result.problems
    ), result.problems


async def test_a_long_command_run_in_process_where_exec_refuses_it_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case(SCENARIO, providers=("gemini",))
    scenario = load_scenario(folder / f"{SCENARIO}.yaml")
    monkeypatch.setattr(_sim_executor, "LONG_ARGV", 1 << 40)  # never a real process
    result = await replay_scenario(scenario, "gemini", cluster=cluster)
    assert not result.passed
    assert any(
        "differs from the cassette" in p and '"Not run: the command' in p and "Created sandbox" in p
        for p in result.problems
    ), result.problems


async def test_a_long_argv_runs_as_a_process_and_exec_refuses_it(
    cluster: SimulatedCluster, tmp_path: Path
) -> None:
    executor = NavSimExecutor(cluster.binary)
    executor.processes = 1  # past the first command: in process from here on
    binary = str(cluster.binary)
    env = {**cluster._base_env(), "NAV_SIM_STATE": str(tmp_path / "state.json")}
    with pytest.raises(OSError) as refused:
        await executor(
            (binary, "--cluster", "demo", "sandbox", "get", "x" * (nav_cli.MAX_ARG_STRLEN + 1)),
            timeout_s=30,
            output_cap_bytes=4096,
            env=env,
        )
    assert refused.value.errno == errno.E2BIG
    assert (executor.processes, executor.in_process) == (2, 0)
    assert LONG_ARGV <= nav_cli.MAX_ARG_STRLEN // 2


def test_pasted_arguments_are_built_beside_the_written_ones() -> None:
    call = ScriptedCall(
        name="sandbox_create",
        arguments={"name": "seed-db"},
        pasted={"command": Pasted(before="sh -c '", line="ab;", times=3, after="'")},
    )
    assert call.written_arguments() == {"name": "seed-db", "command": "sh -c 'ab;ab;ab;'"}
    with pytest.raises(ValueError, match="command: given in `arguments` and in `pasted`"):
        ScriptedCall(
            name="sandbox_create",
            arguments={"command": "x"},
            pasted={"command": Pasted(line="y", times=1)},
        )


def test_long_arguments_stream_in_pieces_that_count_their_tokens() -> None:
    short = '{"name": "dev-box"}'
    assert split_arguments(short)[:4] == ['{"na', 'me": ', '"de', 'v-box"']
    assert all(piece_tokens(piece) == 1 for piece in split_arguments(short))
    long = '{"command": "' + "x" * 10_000 + '"}'
    pieces = split_arguments(long)
    assert "".join(pieces) == long
    assert {len(piece) for piece in pieces[:-1]} == {LONG_PIECE}
    assert sum(map(piece_tokens, pieces)) == pytest.approx(len(long) / 4, abs=len(pieces))


def test_a_long_value_is_shown_by_its_start_length_and_digest() -> None:
    value = "x" * 300
    shown = shown_value(value)
    assert shown.startswith("x" * 60 + "… (300 characters, sha256 ")
    assert shown_value(value + "y") != shown
    assert shown_value("short") == "short"
    assert render_arguments({"command": value, "name": "a"}).startswith('{"command": "xxx')
    assert render_arguments("[malformed " + value) == "[malformed " + value  # shown whole
