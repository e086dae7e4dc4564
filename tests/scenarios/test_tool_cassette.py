"""Tool cassettes: every `nav` command of a recorded session, served back with no cluster."""

from __future__ import annotations

import errno
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from navagent.core._process import CapturedOutput, ProcessResult
from navagent.core.messages import ToolCall
from navagent.core.nav_cli import NavToolRunner
from navagent.fixtures.harness import (
    ScenarioError,
    ToolCassette,
    ToolCassetteError,
    ToolInteraction,
    ToolSource,
    load_tool_cassette,
    parse_scenario,
)
from navagent.fixtures.harness.cassettes._tool_cassette import (
    StartError,
    ToolLog,
    ToolTape,
    dump_tool_cassette,
)

SOURCE = ToolSource(kind="real", note="test", cluster="prod", recorded="2026-11-25", scenario="t")


def interaction(*args: str, stdout: str = "", **fields: object) -> ToolInteraction:
    return ToolInteraction.model_validate({"args": args, "stdout": stdout, **fields})


def call(tool: str, **arguments: object) -> ToolCall:
    return ToolCall(id=f"call-{tool}", name=tool, arguments=json.dumps(arguments))


def test_a_tool_cassette_round_trips_through_its_yaml(tmp_path: Path) -> None:
    cassette = ToolCassette(
        source=SOURCE,
        interactions=(
            interaction("sandbox", "list", stdout="NAME  PHASE\ntrain-7  Ready\n"),
            interaction("sandbox", "logs", "x", "-n", "20", exit_code=1, stderr="not found\n"),
            interaction("sandbox", "logs", "y", exit_code=None, timed_out=True, duration_s=60.0),
            interaction("cluster", "status", stdout="Grüße \x1b[32mok\x1b[0m\r\n"),
        ),
    )
    path = tmp_path / "t.yaml"
    path.write_text(dump_tool_cassette(cassette), encoding="utf-8")
    assert load_tool_cassette(path) == cassette
    assert "timed_out" not in path.read_text("utf-8").split("- args:")[1]  # only when true


def test_a_tool_cassette_names_the_build_that_wrote_it_and_an_older_one_loads(
    tmp_path: Path,
) -> None:
    stamped = ToolCassette(
        source=SOURCE, interactions=(interaction("sandbox", "list"),), recorded_by="nav-agent 0.2.0"
    )
    path = tmp_path / "t.yaml"
    path.write_text(dump_tool_cassette(stamped), encoding="utf-8")
    assert "\n  recorded_by: nav-agent 0.2.0\n" in path.read_text(encoding="utf-8")
    assert load_tool_cassette(path) == stamped
    older = stamped.model_copy(update={"recorded_by": None})
    path.write_text(dump_tool_cassette(older), encoding="utf-8")
    assert "recorded_by" not in path.read_text(encoding="utf-8")
    assert load_tool_cassette(path) == older


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no `metadata: source:`"),
        ("interactions: [", "t.yaml:2: not valid YAML"),
        ("metadata: {source: {kind: real}}\ninteractions: []\n", "source.note"),
        (
            "metadata: {source: {kind: real, note: n, cluster: c, recorded: d, scenario: s}}\n"
            "interactions: [{args: []}]\n",
            "interactions.0.args",
        ),
    ],
)
def test_a_broken_tool_cassette_is_named_with_its_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ToolCassetteError, match="t.yaml") as raised:
        load_tool_cassette(path)
    assert problem in str(raised.value)
    with pytest.raises(ToolCassetteError, match="no tool cassette at"):
        load_tool_cassette(tmp_path / "missing.yaml")


async def test_the_nth_run_of_a_command_gets_the_nth_result_and_a_stranger_is_a_miss() -> None:
    tape = ToolTape(
        ToolCassette(
            source=SOURCE,
            interactions=(
                interaction("sandbox", "list", stdout="before\n"),
                interaction("sandbox", "delete", "x"),
                interaction("sandbox", "list", stdout="after\n"),
                interaction("provider", "list"),
            ),
        )
    )

    async def run(*args: str) -> ProcessResult:
        return await tape.execute(
            ("nav", "--cluster", "prod", *args), timeout_s=1, output_cap_bytes=9
        )

    assert (await run("sandbox", "list")).stdout.text() == "before\n"
    await run("sandbox", "delete", "x")
    assert (await run("sandbox", "list")).stdout.text() == "after\n"
    tape.turn = 2
    missed = await run("sandbox", "list", "--names")
    assert missed.returncode != 0 and "not in the tool cassette" in missed.stderr.text()
    (miss,) = tape.misses
    assert miss.turn == 2
    assert str(miss) == (
        "the tool call `nav sandbox list --names` is not in the tool cassette; the nearest"
        " recorded one is `nav sandbox list`"
    )
    assert [i.command for i in tape.unplayed()] == ["nav provider list"]


async def test_a_replayed_call_tells_the_model_exactly_what_the_live_call_did(
    tmp_path: Path,
) -> None:
    """Recorded through the runner's execute seam, served back through it: same ToolOutcome."""
    results: dict[tuple[str, ...], ProcessResult] = {
        ("sandbox", "get", "train-7"): ProcessResult(
            argv=(),
            returncode=0,
            stdout=CapturedOutput(head=b"Name: train-7\n", tail=b"Phase: Ready\n", omitted=5000),
            stderr=CapturedOutput(head=b"warning: slow\n"),
            timed_out=False,
            duration_s=0.25,
        ),
        ("sandbox", "logs", "train-7"): ProcessResult(
            argv=(),
            returncode=None,
            stdout=CapturedOutput(head=b"step 1\n"),
            stderr=CapturedOutput(),
            timed_out=True,
            duration_s=60.0,
        ),
    }

    async def live(argv: Sequence[str], **_options: object) -> ProcessResult:
        return results[tuple(argv[3:])]

    log = ToolLog(tmp_path / "tools.jsonl", execute=live)
    calls = [call("sandbox_get", name="train-7"), call("sandbox_logs", name="train-7")]
    recorded = NavToolRunner("nav", cluster="prod", execute=log.execute)
    live_outcomes = [await recorded.run(c) for c in calls]
    tape = ToolTape(ToolCassette(source=SOURCE, interactions=tuple(ToolLog.read(log.path))))
    replayed = NavToolRunner("nav", cluster="prod", execute=tape.execute)
    replayed_outcomes = [await replayed.run(c) for c in calls]
    assert [(o.status, o.content, o.exit_code) for o in replayed_outcomes] == [
        (o.status, o.content, o.exit_code) for o in live_outcomes
    ]
    assert "more bytes of output omitted" in replayed_outcomes[0].content
    assert replayed_outcomes[1].status == "timeout"
    assert not tape.misses and not tape.unplayed()


async def test_a_command_exec_refused_is_logged_and_refused_again_on_replay(
    tmp_path: Path,
) -> None:
    """A pasted file past MAX_ARG_STRLEN: the live run never started, nor does the replay.

    Before, the log kept nothing for it: the exported scenario's replay missed the command
    (and the sweep's `capture-complete` counted one tool-log line short).
    """

    async def live(argv: Sequence[str], **_options: object) -> ProcessResult:
        if len(argv[-1]) > 1000:
            raise OSError(errno.E2BIG, "Argument list too long")
        return ProcessResult(
            argv=tuple(argv),
            returncode=0,
            stdout=CapturedOutput(head=b"NAME\n"),
            stderr=CapturedOutput(),
            timed_out=False,
            duration_s=0.1,
        )

    log = ToolLog(tmp_path / "tools.jsonl", execute=live)
    calls = [call("sandbox_get", name="a" * 2000), call("sandbox_list")]
    recorded = NavToolRunner("nav", cluster="prod", execute=log.execute)
    live_outcomes = [await recorded.run(c) for c in calls]
    assert live_outcomes[0].content.startswith("Not run: the command's arguments are too long")
    logged = ToolLog.read(log.path)
    assert [i.start_error for i in logged] == [
        StartError(errno=errno.E2BIG, strerror="Argument list too long"),
        None,
    ]
    assert '"start_error"' not in log.path.read_text("utf-8").splitlines()[1]  # ran: no key

    tape = ToolTape(ToolCassette(source=SOURCE, interactions=tuple(logged)))
    replayed = NavToolRunner("nav", cluster="prod", execute=tape.execute)
    replayed_outcomes = [await replayed.run(c) for c in calls]
    assert [(o.status, o.content) for o in replayed_outcomes] == [
        (o.status, o.content) for o in live_outcomes
    ]
    assert not tape.misses and not tape.unplayed()
    cassette = tmp_path / "t.yaml"
    cassette.write_text(dump_tool_cassette(tape.cassette), encoding="utf-8")
    assert load_tool_cassette(cassette).interactions == tuple(logged)


def test_a_torn_last_line_of_a_tool_log_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text('{"args": ["sandbox", "list"], "stdout": "x"}\n{"args": ["san', "utf-8")
    assert [i.args for i in ToolLog.read(path)] == [("sandbox", "list")]


@pytest.mark.parametrize(
    ("cluster", "problem"),
    [
        ("{name: prod, source: recorded, fault: 'sandbox list=exit:1'}", "fault: set up nav-sim"),
        ("{name: prod, source: recorded, start: empty}", "start: set up nav-sim"),
        ("{name: -prod, source: recorded}", "invalid cluster name"),
        ("{name: prod, source: cassette}", "source"),
    ],
)
def test_a_recorded_cluster_refuses_nav_sim_settings(cluster: str, problem: str) -> None:
    text = f"id: x\ndescription: d\ncluster: {cluster}\nturns: [{{user: hi}}]\n"
    with pytest.raises(ScenarioError, match="cluster") as raised:
        parse_scenario(text, source="x.yaml")
    assert problem in str(raised.value)


def test_steering_compaction_and_confirmation_load_as_written() -> None:
    scenario = parse_scenario(
        "id: x\ndescription: d\ncluster: {name: prod, source: recorded}\n"
        "options: {confirmation: assume-yes, system_prompt: be brief}\n"
        "turns:\n"
        "  - user: hi\n"
        "    compact: true\n"
        "    steer: [{before_call: 2, text: also the logs}]\n",
        source="x.yaml",
    )
    (turn,) = scenario.turns
    assert turn.compact and turn.steer[0].before_call == 2
    assert scenario.options.confirmation == "assume-yes"
    with pytest.raises(ScenarioError, match="before_call"):
        parse_scenario(
            "id: x\ndescription: d\nturns: [{user: hi, steer: [{before_call: 1, text: t}]}]\n",
            source="x.yaml",
        )
