"""A one-line prompt change re-records as that line and the token counts it moves (issue 40 §1).

The scenario's cassette is recorded twice from the simulator, with the
project's system prompt before and after a one-line change, the way a team's
re-record does. Its ids, tool-call ids, signatures and sealed reasoning items
come from where they sit, so every one of them is recorded again as it was;
what changes is the prompt and the counts that measure its length.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from navagent.core.agent_config import AgentConfig
from navagent.core.prompts import default_system_prompt
from navagent.core.wire_formats import FORMAT_IDS, WireFormatId
from navagent.fixtures.harness import (
    SimulatedCluster,
    load_scenario,
    record_scenario,
    simulated_target,
)
from navagent.fixtures.harness.scenarios._agent_config import with_agent_config
from tests.scenarios.conftest import SCENARIOS

OLD_LINE = "- Answer briefly and in plain text."
NEW_LINE = "- Answer briefly, in plain text."
# An id, a signature or a sealed payload: 16 or more id characters, letters and digits both.
_ID = re.compile(r"(?=[A-Za-z_+/=-]*\d)(?=[\d_+/=-]*[A-Za-z])[A-Za-z0-9_+/=-]{16,}")


async def _record(
    folder: Path, prompt: str, provider: WireFormatId, cluster: SimulatedCluster
) -> str:
    # reasoning-tool-loop: two turns, calls over three rounds, signed thinking
    # (Anthropic, Gemini) and encrypted reasoning items sent back (Responses).
    scenario = load_scenario(SCENARIOS / "reasoning-tool-loop.yaml")
    scenario = with_agent_config(scenario, AgentConfig(system_prompt=prompt))
    result = await record_scenario(
        scenario, provider, cassette_dir=folder, target=simulated_target(), cluster=cluster
    )
    assert result.written and result.problems == ()
    return result.path.read_text(encoding="utf-8")


def _changed_pairs(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(), after.splitlines()
    pairs: list[tuple[str, str]] = []
    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        if tag != "equal":
            assert a2 - a1 == b2 - b1, (old[a1:a2], new[b1:b2])  # no line added or dropped
            pairs += zip(old[a1:a2], new[b1:b2], strict=True)
    return pairs


@pytest.mark.parametrize("provider", FORMAT_IDS)
async def test_a_changed_prompt_line_re_records_the_same_ids(
    provider: WireFormatId, tmp_path: Path, cluster: SimulatedCluster
) -> None:
    prompt = default_system_prompt("{cluster}")
    assert OLD_LINE in prompt
    before = await _record(tmp_path / "before", prompt, provider, cluster)
    after = await _record(tmp_path / "after", prompt.replace(OLD_LINE, NEW_LINE), provider, cluster)

    ids = _ID.findall(before)
    assert len(set(ids)) >= 8  # responses, calls, requests (and signatures, sealed items)
    assert _ID.findall(after) == ids
    pairs = _changed_pairs(before, after)
    prompt_lines = [pair for pair in pairs if OLD_LINE in pair[0] and NEW_LINE in pair[1]]
    assert prompt_lines
    for old, new in pairs:
        if (old, new) not in prompt_lines:  # a token count, which the prompt's length moves
            assert re.sub(r"\d+", "#", old) == re.sub(r"\d+", "#", new), (old, new)
