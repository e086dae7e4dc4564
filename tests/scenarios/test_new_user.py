"""A developer on another team adopts the harness from the docs alone (issue 18, "Done means").

In a fresh folder: write scenarios, record them with `--sim` on all three
wire formats, replay them through pytest with the installed plugin in
`--record-mode=none`, record again and get the same bytes, and see that a
changed answer, a changed request and a dropped interaction each fail with
the one block (scenario, format, turn, request, JSON path, both values,
re-record command) and nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness.cassettes import _serializer

PYPROJECT = """
[tool.pytest.ini_options]
nav_scenarios = ["scenarios"]
nav_cassettes = "cassettes"
nav_snapshots = true
asyncio_default_fixture_loop_scope = "function"  # pytest-asyncio is installed here
"""

DIAGNOSE_AND_DELETE = """\
id: diagnose-and-delete
description: Find the failing sandbox and why, delete it, then check what is left.
turns:
  - user: Which sandbox is failing, and why?
    expect:
      tools:
        - {name: sandbox_list, status: ok}
        - {name: sandbox_logs, arguments: {name: gpu-trainer}, status: ok}
      answer: {contains: [gpu-trainer, ImagePullBackOff]}
  - user: Delete it.
    confirm: [yes]
    expect:
      tools:
        - {name: sandbox_delete, arguments: {name: gpu-trainer}, status: ok}
      finish: answered
  - user: List my sandboxes.
    expect:
      tools: [{name: sandbox_list, status: ok}]
      answer: {contains: [dev-box]}
"""

# The issue's own example: a connection reset mid-stream must record as the
# broken attempt it was, so the turn ends in an error on every format.
PROVIDER_RESET = """\
id: provider-reset
description: The provider's connection breaks in the middle of the answer.
turns:
  - user: "List my sandboxes. [sim-fault: reset step=2 after=6]"
    expect:
      tools: [{name: sandbox_list, status: ok}]
      error: upstream_unavailable
      finish: error
  - user: Is my cluster up?
    expect:
      tools: [{name: cluster_status, status: ok}]
      finish: answered
"""

# A cluster tool that never answers: the call times out (`options.tool_timeout`,
# so neither recording nor replay waits the default 30 s).
TOOL_TIMEOUT = """\
id: tool-timeout
description: Listing sandboxes hangs; the call times out and the answer says so.
cluster:
  fault: sandbox list=hang
options:
  tool_timeout: 1
turns:
  - user: List my sandboxes.
    expect:
      tools: [{name: sandbox_list, status: timeout}]
      finish: answered
"""


def _project(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    scenarios: dict[str, str],
    *,
    snapshots: bool = True,
) -> Path:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(pytester.path)
    pytester.makepyprojecttoml(
        PYPROJECT if snapshots else PYPROJECT.replace("nav_snapshots = true", "")
    )
    folder = pytester.path / "scenarios"
    folder.mkdir()
    for scenario_id, text in scenarios.items():
        (folder / f"{scenario_id}.yaml").write_text(text, encoding="utf-8")
    return pytester.path


def _record(*scenario_ids: str) -> None:
    result = CliRunner().invoke(
        app, ["scenario", "record", *scenario_ids, "--provider", "all", "--sim"]
    )
    assert result.exit_code == 0, result.output


def _cassettes(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted((root / "cassettes").rglob("*.yaml"))
    }


def _record_replay_rerecord(pytester: pytest.Pytester, root: Path, *scenario_ids: str) -> None:
    _record(*scenario_ids)
    recorded = _cassettes(root)
    assert len(recorded) == len(scenario_ids) * len(FORMAT_IDS)

    first = pytester.runpytest("--record-mode=none", "--snapshot-update")
    first.assert_outcomes(passed=len(recorded))
    replay = pytester.runpytest("--record-mode=none", "-v")
    replay.assert_outcomes(passed=len(recorded))
    for scenario_id in scenario_ids:
        for provider in FORMAT_IDS:
            replay.stdout.fnmatch_lines(
                [
                    f"scenarios/{scenario_id}.yaml::{provider} PASSED*",
                    f"transcript {scenario_id} [{provider}]",
                ]
            )

    _record(*scenario_ids)
    assert _cassettes(root) == recorded  # byte for byte


def _edit(path: Path, edit) -> None:
    data = _serializer.deserialize(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(_serializer.serialize(data), encoding="utf-8")


def _one_block(output: str, *, provider: str, turn: int, request: int) -> str:
    """The failure output holds one block for the one failed item, and nothing of a cascade."""
    headers = re.findall(
        r"^scenario diagnose-and-delete, format (\S+), turn \d+, request \d+", output, re.M
    )
    assert headers == [provider], output
    header = f"scenario diagnose-and-delete, format {provider}, turn {turn}, request {request} ("
    assert header in output, output
    assert (
        f"re-record with: nav scenario record diagnose-and-delete --provider {provider} --sim"
        in output
    )
    assert "internal" not in output.lower(), output  # no INTERNAL error per later turn
    assert "record_mode" not in output and "drop_unused_requests" not in output  # vcrpy's advice
    return output[output.index(header) :]


def test_a_new_user_records_replays_and_sees_one_block_per_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(pytester, monkeypatch, {"diagnose-and-delete": DIAGNOSE_AND_DELETE})
    _record_replay_rerecord(pytester, root, "diagnose-and-delete")
    pristine = _cassettes(root)
    cassette = root / "cassettes" / "openai" / "diagnose-and-delete.yaml"

    # 1. A changed answer: turn 1's answer goes back to the provider in turn 2's
    #    first request (request 4), which then differs from the cassette's.
    changed: list[str] = []

    def change_answer(data) -> None:
        body = data["interactions"][2]["response"]["body"]
        assert '"finish_reason":"stop"' in body["string"]  # the answer that ends turn 1
        match = re.search(r'"content":" ([a-z]{4,})"', body["string"])
        assert match is not None
        changed.append(match.group(1))
        body["string"] = body["string"].replace(
            match.group(0), match.group(0).replace(match.group(1), match.group(1).upper()), 1
        )

    _edit(cassette, change_answer)
    failed = pytester.runpytest("--record-mode=none")
    failed.assert_outcomes(passed=len(FORMAT_IDS) - 1, failed=1)
    block = _one_block(str(failed.stdout), provider="openai", turn=2, request=4)
    assert "the request differs from the cassette's at messages[" in block
    (word,) = changed
    assert "cassette: " in block and f" {word} " in block and f" {word.upper()} " in block

    # 2. A changed request: the scenario's turn 3 now asks something else.
    cassette.write_bytes(pristine[str(cassette.relative_to(root))])
    scenario = root / "scenarios" / "diagnose-and-delete.yaml"
    scenario.write_text(
        DIAGNOSE_AND_DELETE.replace("List my sandboxes.", "List all my sandboxes."),
        encoding="utf-8",
    )
    failed = pytester.runpytest("--record-mode=none", "-k", "openai and not responses")
    failed.assert_outcomes(failed=1)
    block = _one_block(str(failed.stdout), provider="openai", turn=3, request=6)
    assert '"List my sandboxes."' in block and '"List all my sandboxes."' in block

    # 3. A dropped interaction: the last answer is gone from the cassette.
    scenario.write_text(DIAGNOSE_AND_DELETE, encoding="utf-8")
    _edit(cassette, lambda data: data["interactions"].pop())
    failed = pytester.runpytest("--record-mode=none", "-k", "openai and not responses")
    failed.assert_outcomes(failed=1)
    block = _one_block(str(failed.stdout), provider="openai", turn=3, request=7)
    assert "the replay sent a request that is not in the cassette" in block


def test_record_modes_in_pytest_mean_what_pytest_recording_means(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(
        pytester, monkeypatch, {"diagnose-and-delete": DIAGNOSE_AND_DELETE}, snapshots=False
    )
    cassette = root / "cassettes" / "openai" / "diagnose-and-delete.yaml"
    only_openai = ("-k", "openai and not responses")

    # none (the default): a missing cassette fails and says how to record it
    missing = pytester.runpytest(*only_openai)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        ["*no cassette at*", "*record it with: nav scenario record diagnose-and-delete*"]
    )
    assert not cassette.exists()

    # once: records the missing cassette; a second run replays it untouched
    pytester.runpytest("--record-mode=once", *only_openai).assert_outcomes(passed=1)
    recorded = cassette.read_bytes()
    pytester.runpytest("--record-mode=once", *only_openai).assert_outcomes(passed=1)
    assert cassette.read_bytes() == recorded

    # new_episodes: a new request (turn 3 changed) is recorded and added; the
    # old interaction stays, so a strict replay reports it as never played
    scenario = root / "scenarios" / "diagnose-and-delete.yaml"
    scenario.write_text(
        DIAGNOSE_AND_DELETE.replace("List my sandboxes.", "Show the sandboxes."),
        encoding="utf-8",
    )
    pytester.runpytest("--record-mode=new_episodes", *only_openai)
    grown = _serializer.deserialize(cassette.read_text(encoding="utf-8"))["interactions"]
    before = _serializer.deserialize(recorded.decode("utf-8"))["interactions"]
    assert len(grown) > len(before)
    stale = pytester.runpytest(*only_openai)
    stale.assert_outcomes(failed=1)

    # rewrite: from scratch, dropping what the conversation no longer sends
    pytester.runpytest("--record-mode=rewrite", *only_openai).assert_outcomes(passed=1)
    rewritten = _serializer.deserialize(cassette.read_text(encoding="utf-8"))["interactions"]
    assert len(rewritten) == len(before)
    pytester.runpytest(*only_openai).assert_outcomes(passed=1)

    # all: every request recorded again, nothing duplicated
    pytester.runpytest("--record-mode=all", *only_openai).assert_outcomes(passed=1)
    again = _serializer.deserialize(cassette.read_text(encoding="utf-8"))["interactions"]
    assert len(again) == len(before)


def test_recording_is_refused_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, monkeypatch, {"diagnose-and-delete": DIAGNOSE_AND_DELETE})
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("--record-mode=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*record mode 'once' is refused in CI*"])
    assert not (pytester.path / "cassettes").exists()


@pytest.mark.parametrize(
    ("scenario_id", "text"),
    [
        pytest.param("provider-reset", PROVIDER_RESET, id="provider-reset"),
        pytest.param("tool-timeout", TOOL_TIMEOUT, id="tool-timeout"),
    ],
)
def test_a_new_user_records_and_replays_faults_as_they_happened(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, scenario_id: str, text: str
) -> None:
    root = _project(pytester, monkeypatch, {scenario_id: text})
    _record_replay_rerecord(pytester, root, scenario_id)
