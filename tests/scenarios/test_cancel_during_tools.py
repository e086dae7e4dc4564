"""`cancel: {during_tool: N}`: Ctrl-C while the tools run, replayed (issue 42).

`r3-cancelled-result-not-saved` (bench/planted_defects.toml) gave the calls a
cancel left without a result their "cancelled" answer in memory but never saved
it, so a resumed session told the model the session had ended instead. Every
replay passed: no scenario cancelled a turn while its tools ran.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

import pytest
from pydantic import ValidationError

from navagent.core import agent as agent_module
from navagent.core.agent import CANCELLED_RESULT
from navagent.core.history import INTERRUPTED_RESULT
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.scenarios._model import Cancel
from tests.scenarios.conftest import CopyCase


async def test_the_read_after_the_create_is_cancelled_and_its_result_saved(
    copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("cancel-during-tools", providers=("openai",))
    scenario = load_scenario(folder / "cancel-during-tools.yaml")

    result = await replay_scenario(scenario, "openai", cluster=cluster)

    assert result.passed, result.problems
    assert result.transcript is not None
    first = result.transcript.turns[0]
    assert (first.finish, [tool.status for tool in first.tools]) == (
        "cancelled",
        ["ok", "cancelled"],
    )


async def test_a_cancel_whose_results_are_not_saved_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("cancel-during-tools", providers=("anthropic",))
    scenario = load_scenario(folder / "cancel-during-tools.yaml")

    # The bench's defect, in the method's own (dedented) source: its cancelled result unsaved.
    source = textwrap.dedent(inspect.getsource(agent_module.Agent._run_tools))
    saved = "self._record(ToolResultMessage(tool_call_id=call.id, content=outcome.content))\n"
    assert source.count(saved) == 1  # the cancelled call's (a finished one's is `_run_tool`'s)
    unsaved = source.replace("                " + saved, "", 1)
    namespace: dict[str, Any] = {}
    exec(compile(unsaved, "<r3-cancelled-result-not-saved>", "exec"), vars(agent_module), namespace)
    monkeypatch.setattr(agent_module.Agent, "_run_tools", namespace["_run_tools"])
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)

    assert not result.passed
    drift = [p for p in result.problems if "[session-in-sync] after turn 1 the saved session" in p]
    assert drift and INTERRUPTED_RESULT[:30] in drift[0] and CANCELLED_RESULT[:30] in drift[0]


def test_a_cancel_takes_exactly_one_point() -> None:
    one = "exactly one of `after_chars`, `during_tool` and `after_thinking_chars`"
    with pytest.raises(ValidationError, match=one):
        Cancel(after_chars=3, during_tool=1)
    with pytest.raises(ValidationError, match="exactly one"):
        Cancel()
    assert Cancel(during_tool=2).point == "as tool call 2 started"
