"""How many turns of multi-turn conversations the simulated model gets right (issue 24).

Runs every conversation of tests/provider/conversations.py (those tuned
against while building, and the hold-out written afterwards) against a fresh
nav-sim cluster in process, in both answer styles, and reports the turns that
pass per set, the known gaps, and the one-shot phrasing corpus alongside.
A turn passes when its rounds of calls and its answer's facts are as expected.

    .venv/bin/python bench/model_conversations.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.provider.conversations import CONVERSATIONS, HOLDOUT, Step
from tests.provider.phrasings import CORPUS
from tests.provider.talk import talk
from tests.provider.test_conversations import problems
from tests.provider.test_phrasings import check


def _score(group: dict[str, tuple[Step, ...]], provider: str) -> tuple[int, int, int]:
    passed = total = gaps = 0
    for steps in group.values():
        turns = talk([step.user for step in steps], provider=provider)
        for step, turn in zip(steps, turns, strict=True):
            total += 1
            gaps += bool(step.gap)
            passed += not problems(step, turn)
    return passed, total, gaps


def main() -> None:
    """Print one line per set and answer style."""
    for provider in ("openai", "anthropic"):
        for name, group in (("own conversations", CONVERSATIONS), ("hold-out", HOLDOUT)):
            passed, total, gaps = _score(group, provider)
            print(
                f"{name:18} [{provider:9}]: {passed}/{total} turns pass "
                f"({len(group)} conversations, {gaps} known gaps)"
            )
        corpus = sum(not check(case, provider) for case in CORPUS)
        print(f"{'one-shot corpus':18} [{provider:9}]: {corpus}/{len(CORPUS)} pass")


if __name__ == "__main__":
    main()
