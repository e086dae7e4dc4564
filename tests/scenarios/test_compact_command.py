"""`/compact` with the default policy, replayed (issue 42).

`r3-compaction-cuts-before-first-turn` (bench/planted_defects.toml) let the
cut fall before the first turn, so `/compact` summarized nothing and kept the
whole history. Every replay passed: compaction was only ever reached through a
low threshold whose kept part never holds the whole history, where the two cuts
agree. `scenarios/compact-command.yaml` takes `/compact` early, where every
turn fits what is kept.
"""

from __future__ import annotations

import inspect
import textwrap
import tomllib
from typing import Any

import pytest

from navagent.core import agent as agent_module
from navagent.core import compaction
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from tests.scenarios.conftest import CopyCase
from tests.scenarios.test_planted_paths import DEFECTS


def _planted_choose_cut() -> Any:
    defect = next(
        entry
        for entry in tomllib.loads(DEFECTS.read_text(encoding="utf-8"))["defect"]
        if entry["id"] == "r3-compaction-cuts-before-first-turn"
    )
    source = textwrap.dedent(inspect.getsource(compaction.choose_cut))
    assert source.count(defect["before"]) == 1
    namespace: dict[str, Any] = {}
    exec(
        compile(source.replace(defect["before"], defect["after"]), "<r3>", "exec"),
        vars(compaction),
        namespace,
    )
    return namespace["choose_cut"]


async def test_compact_summarizes_the_first_turn_and_keeps_the_second(
    copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("compact-command", providers=("anthropic",))
    result = await replay_scenario(
        load_scenario(folder / "compact-command.yaml"), "anthropic", cluster=cluster
    )
    assert result.passed, result.problems


async def test_a_cut_before_the_first_turn_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("compact-command", providers=("openai",))
    scenario = load_scenario(folder / "compact-command.yaml")

    monkeypatch.setattr(agent_module, "choose_cut", _planted_choose_cut())
    result = await replay_scenario(scenario, "openai", cluster=cluster)

    assert not result.passed
    text = "\n".join(result.problems)
    assert (
        'differs from the cassette: messages[1].content: "List my sandboxes." ->'
        ' "Summarize the conversation s...' in text
    )
