"""A replay is held to the usage and the tool order its recording saw (issue 42).

Each test plants a defect a user would notice in the real code (a translator
that loses a usage count, an agent that runs a read beside the create it must
wait for) and checks that the replay of a committed cassette fails, with a
block that names the scenario, the turn, the field and both values.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from navagent.core import agent as agent_module
from navagent.core.wire_formats import wire_format
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.cassettes._cassette import load_cassette
from navagent.fixtures.harness.record._recorder import record_scenario, simulated_target
from tests.scenarios.conftest import CASSETTES, CopyCase


def drop_usage_count(monkeypatch: pytest.MonkeyPatch, provider: str, field: str) -> None:
    """Plant a translator defect: the format's stream translator reports `field` as 0."""
    translator = importlib.import_module(wire_format(provider).gateway).Translator
    original = translator._usage

    def losing(self: Any, *args: Any) -> Any:
        outcome = original(self, *args)
        self._token_usage = self._token_usage.model_copy(update={field: 0})
        return outcome

    monkeypatch.setattr(translator, "_usage", losing)


@pytest.mark.parametrize(
    ("provider", "field"),
    [
        ("openai", "cache_read_tokens"),
        ("openai-responses", "reasoning_tokens"),
        ("anthropic", "cache_write_tokens"),
        ("gemini", "cache_read_tokens"),
        ("anthropic", "output_tokens"),
    ],
)
async def test_a_translator_that_loses_a_usage_count_fails_the_replay(
    provider: str,
    field: str,
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
) -> None:
    folder = copy_case("parallel-logs", providers=(provider,))
    scenario = load_scenario(folder / "parallel-logs.yaml")
    recorded = load_cassette(CASSETTES / provider / "parallel-logs.yaml").turns
    assert recorded is not None
    before = getattr(recorded[0].usage, field)
    assert before > 0  # the recording has something to lose
    assert (await replay_scenario(scenario, provider, cluster=cluster)).passed

    drop_usage_count(monkeypatch, provider, field)
    result = await replay_scenario(scenario, provider, cluster=cluster)

    assert not result.passed
    assert result.problems == (
        f"turn 1: usage.{field} is 0 in the replay, {before:,} in the recording",
    )
    lines = result.report.splitlines()
    assert lines[0].startswith(f"scenario parallel-logs, format {provider}, turn 1 (")
    assert lines[1:4] == [
        f"  usage.{field} differs from the recording",
        f"    recording: {before:,}",
        "    replay:    0",
    ]


def test_the_recording_keeps_the_usage_and_the_tool_groups_of_every_turn() -> None:
    parallel = load_cassette(CASSETTES / "openai" / "parallel-logs.yaml").turns
    barrier = load_cassette(CASSETTES / "openai" / "create-beside-read.yaml").turns
    assert parallel is not None and barrier is not None
    assert parallel[0].ran == (
        (
            'sandbox_logs {"lines": 3, "name": "dev-box"}',
            'sandbox_logs {"lines": 3, "name": "py-worker"}',
        ),
    )
    assert barrier[0].ran == (
        ('sandbox_create {"command": "echo hi", "name": "web-2"}',),
        ("provider_list",),
    )
    assert parallel[0].usage.input_tokens > 0 and parallel[0].usage.output_tokens > 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_agent_that_runs_a_read_beside_a_create_fails_the_replay(
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
) -> None:
    folder = copy_case("create-beside-read", providers=(provider,))
    scenario = load_scenario(folder / "create-beside-read.yaml")
    original = agent_module.call_batches

    def without_barriers(calls: Any, barriers: frozenset[str] = frozenset()) -> list[list[int]]:
        return original(calls, frozenset())  # the create no longer runs alone

    monkeypatch.setattr(agent_module, "call_batches", without_barriers)
    result = await replay_scenario(scenario, provider, cluster=cluster)

    # The requests are the same (results go back in call order), and so is
    # every expectation: only the order the tools ran in shows the defect.
    assert not result.passed
    create = 'sandbox_create {"command": "echo hi", "name": "web-2"}'
    lines = result.report.splitlines()
    assert lines[0].startswith(f"scenario create-beside-read, format {provider}, turn 1 (")
    assert lines[1:4] == [
        "  the tools ran in another order than in the recording",
        f"    recording: [{create}] then [provider_list]",
        f"    replay:    [{create}, provider_list]",
    ]
    assert result.problems == (
        f"turn 1: tool order is [{create}, provider_list] in the replay,"
        f" [{create}] then [provider_list] in the recording",
    )


async def test_an_agent_that_runs_parallel_reads_one_by_one_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("parallel-logs", providers=("gemini",))

    def one_by_one(calls: Any, barriers: frozenset[str] = frozenset()) -> list[list[int]]:
        return [[index] for index in range(len(calls))]

    monkeypatch.setattr(agent_module, "call_batches", one_by_one)
    result = await replay_scenario(
        load_scenario(folder / "parallel-logs.yaml"), "gemini", cluster=cluster
    )

    assert not result.passed
    assert "the tools ran in another order than in the recording" in result.report
    assert "] then [" in result.problems[0].split(" in the replay")[0]


async def test_a_malformed_recorded_turn_is_named_by_its_path(
    copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("parallel-logs", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "parallel-logs.yaml"
    data = _serializer.deserialize(cassette.read_text(encoding="utf-8"))
    data["metadata"]["turns"][0]["usage"]["input_tokens"] = "many"
    cassette.write_text(_serializer.serialize(data), encoding="utf-8")

    result = await replay_scenario(
        load_scenario(folder / "parallel-logs.yaml"), "openai", cluster=cluster
    )

    assert not result.passed
    assert "has an invalid metadata.turns[0].usage.input_tokens:" in result.reason
    assert "Traceback" not in result.report


@pytest.mark.parametrize("mode", ["all", "new_episodes", "rewrite"])
async def test_recording_again_replaces_the_turns_the_cassette_had(
    mode: str, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("parallel-logs", providers=("openai",))
    cassettes = folder.parent / "cassettes"
    cassette = cassettes / "openai" / "parallel-logs.yaml"
    data = _serializer.deserialize(cassette.read_text(encoding="utf-8"))
    fresh = data["metadata"]["turns"]
    data["metadata"]["turns"] = [{"usage": {"input_tokens": 1}, "ran": [["stale"]]}]
    cassette.write_text(_serializer.serialize(data), encoding="utf-8")

    recorded = await record_scenario(
        load_scenario(folder / "parallel-logs.yaml"),
        "openai",
        cassette_dir=cassettes,
        target=simulated_target(),
        cluster=cluster,
        mode=mode,  # type: ignore[arg-type]
    )

    assert recorded.written, recorded.problems
    again = _serializer.deserialize(cassette.read_text(encoding="utf-8"))
    assert again["metadata"]["turns"] == fresh


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
async def test_a_translator_that_reads_a_cut_answer_as_complete_fails_the_replay(
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
) -> None:
    """The requests are the same; only why the answer stopped, and what the user is told, differ."""
    folder = copy_case("token-limit", providers=(provider,))
    scenario = load_scenario(folder / "token-limit.yaml")
    recorded = load_cassette(CASSETTES / provider / "token-limit.yaml").turns
    assert recorded is not None and recorded[0].stops == ("length",)
    assert recorded[0].note == agent_module.CUT_AT_LIMIT_NOTE
    assert (await replay_scenario(scenario, provider, cluster=cluster)).passed

    translator = importlib.import_module(wire_format(provider).gateway).Translator
    complete = {
        name: ("stop" if reason == "length" else reason)
        for name, reason in translator.finish_reasons.items()
    }
    monkeypatch.setattr(translator, "finish_reasons", complete)
    result = await replay_scenario(scenario, provider, cluster=cluster)

    assert not result.passed
    assert result.problems == (
        "turn 1: finish reasons is [stop] in the replay, [length] in the recording",
        f"turn 1: closing note is '' in the replay, {agent_module.CUT_AT_LIMIT_NOTE!r} in the"
        " recording",
    )
    assert "  a completion stopped for another reason than in the recording" in result.report


async def test_a_changed_closing_sentence_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("iteration-limit", providers=("anthropic",))
    scenario = load_scenario(folder / "iteration-limit.yaml")
    recorded = load_cassette(CASSETTES / "anthropic" / "iteration-limit.yaml").turns
    assert recorded is not None and recorded[0].note is not None
    assert "stopped after" in recorded[0].note

    original = agent_module.Agent._finish

    def reworded(self: Any, reason: Any, message: str, iterations: int) -> Any:
        return original(self, reason, message.replace("stopped after", "ended after"), iterations)

    monkeypatch.setattr(agent_module.Agent, "_finish", reworded)
    result = await replay_scenario(scenario, provider="anthropic", cluster=cluster)

    assert not result.passed
    assert any(problem.startswith("turn 1: closing note is") for problem in result.problems)


def test_a_closing_note_is_compared_without_the_harness_route_names() -> None:
    """A route is `scenario-0#2` in one replay and `scenario-3#8` in a stack every format
    shares (`nav scenario coverage`): the name is the harness's, not what the user sees."""
    from navagent.fixtures.harness.cassettes._recorded_turns import RecordedTurn, compare_turns
    from navagent.fixtures.harness.scenarios._transcript import Transcript, TranscriptTurn

    said = "the provider refused the API key of route {} (api_key): invalid x-api-key"
    recorded = [RecordedTurn(stops=(), note=said.format("scenario-0#2"))]

    def replay(route: str) -> Transcript:
        turn = TranscriptTurn(user="hi", note=said.format(route))
        return Transcript(scenario="s", provider="anthropic", turns=(turn,))

    assert compare_turns(recorded, replay("scenario-3#8")) == []
    (difference,) = compare_turns(recorded, replay("claude-route"))
    assert difference.field == "closing note"
