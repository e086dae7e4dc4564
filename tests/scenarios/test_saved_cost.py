"""The saved session's cost is held to what the agent reported, turn by turn (issue 42).

`r3-turn-usage-not-saved` (bench/planted_defects.toml) kept every message and lost
every cost: `nav agent sessions` showed 0 tokens, and every replay passed, because
the harness compared the saved messages with the agent's history, never the saved
usage. `session_in_sync` now also checks that the session's cost grew, over each
turn, by the usage the agent reported in it.
"""

from __future__ import annotations

from typing import Any

import pytest

from navagent.core import agent as agent_module
from navagent.core import sessions
from navagent.core.events import Usage
from navagent.core.messages import AssistantMessage, Message
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from tests.scenarios.conftest import CopyCase
from tests.scenarios.test_planted_paths import plant


async def test_an_agent_that_saves_no_usage_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("prompt-cache", providers=("anthropic",))
    scenario = load_scenario(folder / "prompt-cache.yaml")
    assert (await replay_scenario(scenario, "anthropic", cluster=cluster)).passed

    plant(monkeypatch, "r3-turn-usage-not-saved", agent_module.Agent, "run_turn")
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)

    assert not result.passed
    breach = next(problem for problem in result.problems if "saved another cost" in problem)
    assert "[session-in-sync] turn 1:" in breach
    assert "input_tokens 0 saved, " in breach
    assert "output_tokens 0 saved, " in breach


async def test_a_store_that_saves_only_the_cost_of_answers_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    """Another defect of the class: the cost of completions that called tools is dropped."""
    folder = copy_case("cluster-overview", providers=("openai",))
    scenario = load_scenario(folder / "cluster-overview.yaml")
    record = sessions.SessionRecorder.record_message

    def answers_only(self: Any, message: Message, usage: Usage | None = None) -> None:
        calls = isinstance(message, AssistantMessage) and message.tool_calls
        record(self, message, None if calls else usage)

    monkeypatch.setattr(sessions.SessionRecorder, "record_message", answers_only)
    result = await replay_scenario(scenario, "openai", cluster=cluster)

    assert not result.passed
    assert any(
        "[session-in-sync] turn 1: the session saved another cost" in problem
        and "output_tokens" in problem
        for problem in result.problems
    )


async def test_a_wordless_refusal_whose_cost_is_not_saved_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    """The empty completion's cost: Anthropic refuses without words, the message is not kept."""
    folder = copy_case("refusal", providers=("anthropic",))
    scenario = load_scenario(folder / "refusal.yaml")
    assert (await replay_scenario(scenario, "anthropic", cluster=cluster)).passed

    def forgets(self: Any, usage: Usage) -> None:
        del self, usage  # the defect before `usage` entries: no message, no cost

    monkeypatch.setattr(sessions.SessionRecorder, "record_usage", forgets)
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)

    assert not result.passed
    assert any(
        "[session-in-sync] turn 1: the session saved another cost" in problem
        and "input_tokens 0 saved, " in problem
        for problem in result.problems
    ), result.problems


@pytest.mark.parametrize(
    ("defect", "said"),
    [
        (lambda body: "", "previews the session as '', but its first message is"),
        (lambda body: "list my sandboxes", "previews the session as 'list my sandboxes'"),
    ],
    ids=["no preview", "another message's preview"],
)
async def test_a_sessions_table_that_misnames_the_session_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
    defect: Any,
    said: str,
) -> None:
    """`nav agent sessions` is how a person picks what to resume: its preview is checked."""
    folder = copy_case("cluster-overview", providers=("openai",))
    scenario = load_scenario(folder / "cluster-overview.yaml")
    monkeypatch.setattr(sessions, "_preview", defect)
    result = await replay_scenario(scenario, "openai", cluster=cluster)

    assert not result.passed
    assert any(
        "[session-in-sync] after turn 1 `nav agent sessions` " in problem and said in problem
        for problem in result.problems
    ), result.problems
