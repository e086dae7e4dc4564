"""The multi-turn conversations of conversations.py, one test item per turn.

Each conversation runs once per answer style against a fresh nav-sim cluster
(in process, through the agent's own tool plumbing, see talk.py); each turn
is then its own item, so a regression names the turn. Known gaps are strict
xfails. The same conversations go over the three wire formats in
test_wire_conversations.py.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from navagent.core.wire_formats import WireFormatId
from tests.provider.conversations import CONVERSATIONS, HOLDOUT, Step
from tests.provider.talk import Turn, talk
from tests.provider.test_phrasings import parse_plan

ITEMS = [
    pytest.param(
        title,
        index,
        marks=[pytest.mark.xfail(strict=True, reason=step.gap)] if step.gap else [],
        id=f"{title} #{index + 1}: {step.user}"[:90],
    )
    for title, steps in {**CONVERSATIONS, **HOLDOUT}.items()
    for index, step in enumerate(steps)
]


@cache
def _run(title: str, provider: WireFormatId) -> tuple[Turn, ...]:
    steps = {**CONVERSATIONS, **HOLDOUT}[title]
    return tuple(talk([step.user for step in steps], provider=provider))


def problems(step: Step, turn: Turn) -> list[str]:
    """What is wrong with `turn` against `step` (empty when it passes)."""
    found: list[str] = []
    rounds = [[(name, json.loads(args)) for name, args in r] for r in turn.rounds]
    if rounds != parse_plan(step.plan):
        found.append(f"calls {rounds}, expected {parse_plan(step.plan)}")
    answer = turn.answer.lower()
    missing = [fact for fact in step.facts if fact.lower() not in answer]
    present = [fact for fact in step.absent if fact.lower() in answer]
    if missing:
        found.append(f"answer lacks {missing}")
    if present:
        found.append(f"answer has {present}")
    return found


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("title", "index"), ITEMS)
def test_turn(title: str, index: int, provider: WireFormatId) -> None:
    step = {**CONVERSATIONS, **HOLDOUT}[title][index]
    turn = _run(title, provider)[index]
    assert problems(step, turn) == [], turn.answer


def test_the_conversations_are_many_and_long_enough() -> None:
    assert len(CONVERSATIONS) >= 12 and len(HOLDOUT) >= 12
    assert sum(len(steps) for steps in CONVERSATIONS.values()) >= 40
    assert all(len(steps) >= 2 for steps in CONVERSATIONS.values())
