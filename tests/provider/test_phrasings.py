"""The simulated model against a corpus of ordinary requests (tests/provider/phrasings.py).

Every case runs the whole conversation against a fresh nav-sim cluster, in
process, for both answer styles (OpenAI's calls alone, Anthropic's preface
first): each is its own test item and must give exactly the expected rounds
of calls and an answer with the expected facts. The prompts README.md and
the demo banner suggest must all pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from navagent.cli.demo import DEMO_PROMPTS
from navagent.core.wire_formats import WireFormatId
from tests.provider.phrasings import CORPUS, README_PROMPTS, Case
from tests.provider.talk import talk

Call = tuple[str, dict[str, Any]]


def parse_call(text: str) -> Call:
    tool, _, rest = text.strip().partition(" ")
    arguments: dict[str, Any] = {}
    if tool == "sandbox_create":
        command = re.search(r"\bcommand=(.*)$", rest)
        if command:
            arguments_text, arguments["command"] = rest[: command.start()], command.group(1)
            rest = arguments_text
        for pair in rest.split():
            key, _, value = pair.partition("=")
            arguments[key] = value
        order = ("name", "image", "command")
        return tool, {key: arguments[key] for key in order if key in arguments}
    for word in rest.split():
        key, sep, value = word.partition("=")
        if sep:
            arguments[key] = int(value) if value.isdigit() else value
        else:
            arguments["name"] = word
    return tool, arguments


def parse_plan(plan: str) -> list[list[Call]]:
    if not plan.strip():
        return []
    return [[parse_call(call) for call in rnd.split(" + ")] for rnd in plan.split(" ; ")]


def check(case: Case, provider: WireFormatId) -> str:
    """'' when the case passes, else what went wrong."""
    last = talk(case.turns, provider=provider, declining=case.declining)[-1]
    rounds = [[(name, json.loads(args)) for name, args in r] for r in last.rounds]
    problems = []
    if rounds != parse_plan(case.plan):
        problems.append(f"calls {rounds}, expected {parse_plan(case.plan)}")
    answer = last.answer.lower()
    missing = [fact for fact in case.facts if fact.lower() not in answer]
    present = [fact for fact in case.absent if fact.lower() in answer]
    if missing:
        problems.append(f"answer lacks {missing}")
    if present:
        problems.append(f"answer has {present}")
    if problems:
        return f"{case.id!r} [{provider}]: {'; '.join(problems)}; answer: {last.answer[:200]!r}"
    return ""


def test_the_corpus_is_big_and_varied() -> None:
    assert len(CORPUS) >= 150
    assert len({case.turns for case in CORPUS if case.declining == "no"}) >= 145
    assert sum(len(case.turns) > 1 for case in CORPUS) >= 30


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_phrasing(case: Case, provider: WireFormatId) -> None:
    """One item per phrasing, so a single regression fails by name."""
    assert check(case, provider) == ""


def _readme_prompts() -> list[str]:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r'"([^"]+)"', quick_start.split("Try ", 1)[1].split(";", 1)[0])


def test_the_readme_and_banner_prompts_are_in_the_corpus_and_pass() -> None:
    suggested = set(DEMO_PROMPTS) | set(_readme_prompts())
    assert suggested <= set(README_PROMPTS), "update README_PROMPTS in phrasings.py"
    single = {case.turns[0]: case for case in CORPUS if len(case.turns) == 1}
    for prompt in suggested:
        assert prompt in single, f"{prompt!r} is not in the corpus"
        assert check(single[prompt], "openai") == check(single[prompt], "anthropic") == ""


def test_example_requests_the_model_offers_are_understood() -> None:
    for history in ((), ("list my sandboxes",)):
        offered = talk([*history, "gibberish blah"])[-1].answer
        examples = re.findall(r'"([^"]+)"', offered)
        assert len(examples) == 3
        for example in examples:
            assert talk([*history, example])[-1].rounds, example
