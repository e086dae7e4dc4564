"""Planted defects on paths only one committed scenario takes (issue 42).

A refusal, a prompt-cache write on OpenAI Responses and a retry-after longer
than the gateway's cap with a first-token budget longer still: each test
plants the defect of `bench/planted_defects.toml` in a copy of the real
function (its exact `before` and `after` text) and checks that the replay of
the committed cassette fails, naming the turn and what differs.
"""

from __future__ import annotations

import importlib
import inspect
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from navagent.core import agent as agent_module
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.cassettes._cassette import load_cassette
from navagent.fixtures.provider import Plan
from navagent.fixtures.provider.wire._cache import PromptCache, item_segments
from navagent.fixtures.provider.wire._script import build_script
from navagent.gateway import dispatch
from navagent.gateway.openai_responses import stream as responses_stream
from tests.scenarios.conftest import CASSETTES, CopyCase

DEFECTS = Path(__file__).resolve().parents[2] / "bench" / "planted_defects.toml"


def plant(monkeypatch: pytest.MonkeyPatch, defect_id: str, owner: type, name: str) -> None:
    """Replace `owner.name` with a copy of its source that has the planted defect."""
    defects = tomllib.loads(DEFECTS.read_text(encoding="utf-8"))["defect"]
    defect = next(entry for entry in defects if entry["id"] == defect_id)
    function: Callable[..., Any] = getattr(owner, name)
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(defect["before"]) == 1, f"{defect_id} no longer matches {name}"
    namespace: dict[str, Any] = {}
    module = inspect.getmodule(function)
    assert module is not None
    # exec, not a patched file: the project's own function with the bench's one-line defect.
    exec(
        compile(source.replace(defect["before"], defect["after"]), f"<{defect_id}>", "exec"),
        module.__dict__,
        namespace,
    )
    monkeypatch.setattr(owner, name, namespace[name])


def test_a_planned_refusal_stops_with_refusal_after_its_text() -> None:
    script = build_script(
        Plan(text="Let me see. ", refusal="I can't help with that."),
        call_ids=[],
        max_tokens=None,
        input_tokens=10,
    )
    assert (script.text_content, script.refusal_text, script.stop) == (
        "Let me see. ",
        "I can't help with that.",
        "refusal",
    )
    cut = build_script(
        Plan(refusal="I can't help with that."), call_ids=[], max_tokens=2, input_tokens=1
    )
    assert (cut.refusal_text, cut.stop) == ("I can't", "length")


@pytest.mark.parametrize(
    ("provider", "stops", "note"),
    [
        ("openai", ["refusal"], agent_module.REFUSED_NOTE),
        ("openai-responses", ["refusal"], agent_module.REFUSED_NOTE),
        ("anthropic", ["refusal"], agent_module.REFUSED_NOTE),
        ("gemini", ["content_filter"], agent_module.FILTERED_NOTE),
    ],
)
def test_each_format_records_its_own_refusal(provider: str, stops: list[str], note: str) -> None:
    recorded = load_cassette(CASSETTES / provider / "refusal.yaml").turns
    assert recorded is not None
    assert (list(recorded[0].stops or ()), recorded[0].note) == (stops, note)
    assert recorded[1].ran == (("sandbox_list",),)


async def test_an_agent_that_reads_a_refusal_stop_as_an_answer_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    """`refusal-answered`: Anthropic's `stop_reason: refusal` carries no refusal text."""
    folder = copy_case("refusal", providers=("anthropic",))
    scenario = load_scenario(folder / "refusal.yaml")
    assert (await replay_scenario(scenario, "anthropic", cluster=cluster)).passed

    plant(monkeypatch, "refusal-answered", agent_module.Agent, "_finish_without_calls")
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)

    assert not result.passed
    assert "turn 1: ended 'answered', expected 'refused'" in result.problems
    assert (
        f"turn 1: closing note is 'the model returned an empty answer' in the replay,"
        f" {agent_module.REFUSED_NOTE!r} in the recording"
    ) in result.problems


@pytest.mark.parametrize(("provider", "raw"), [("anthropic", "refusal"), ("gemini", "SAFETY")])
async def test_a_translator_that_reads_a_refusal_as_a_stop_fails_the_replay(
    provider: str,
    raw: str,
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
) -> None:
    folder = copy_case("refusal", providers=(provider,))
    scenario = load_scenario(folder / "refusal.yaml")
    recorded = load_cassette(CASSETTES / provider / "refusal.yaml").turns
    assert recorded is not None and recorded[0].stops is not None

    translator = importlib.import_module(f"navagent.gateway.{provider}").Translator
    monkeypatch.setattr(translator, "finish_reasons", {**translator.finish_reasons, raw: "stop"})
    result = await replay_scenario(scenario, provider, cluster=cluster)

    assert not result.passed
    assert (
        f"turn 1: finish reasons is [stop] in the replay, [{recorded[0].stops[0]}] in the recording"
    ) in result.problems


async def test_a_responses_translator_that_drops_cache_writes_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    """`responses-cache-write-dropped`: the simulator now reports writes as gpt-5 does."""
    folder = copy_case("prompt-cache", providers=("openai-responses",))
    scenario = load_scenario(folder / "prompt-cache.yaml")
    recorded = load_cassette(CASSETTES / "openai-responses" / "prompt-cache.yaml").turns
    assert recorded is not None
    written = recorded[0].usage.cache_write_tokens
    assert written > 0
    assert (await replay_scenario(scenario, "openai-responses", cluster=cluster)).passed

    plant(
        monkeypatch,
        "responses-cache-write-dropped",
        responses_stream.ResponsesStreamTranslator,
        "_usage",
    )
    result = await replay_scenario(scenario, "openai-responses", cluster=cluster)

    assert not result.passed
    assert result.problems[0] == (
        f"turn 1: usage.cache_write_tokens is 0 in the replay, {written:,} in the recording"
    )


async def test_a_gateway_that_sleeps_through_an_over_cap_retry_after_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    """`retry-after-cap-ignored`: the 180 s budget no longer hides it; the replay does not wait."""
    folder = copy_case("retry-after-over-cap", providers=("openai",))
    scenario = load_scenario(folder / "retry-after-over-cap.yaml")
    assert scenario.options.first_token_timeout == 180
    assert (await replay_scenario(scenario, "openai", cluster=cluster)).passed

    plant(monkeypatch, "retry-after-cap-ignored", dispatch.Dispatcher, "_retry_delay")
    result = await replay_scenario(scenario, "openai", cluster=cluster)

    assert not result.passed
    assert result.report.splitlines()[0].startswith(
        "scenario retry-after-over-cap, format openai, turn 1, request 2 ("
    )
    assert result.duration_s < 30  # the 120 s back-off was not slept through


def test_automatic_caching_reports_writes_only_where_asked() -> None:
    """A new long prompt writes its 128-token steps; the same prompt again reads them."""
    segments = item_segments({"input": [{"role": "user", "content": "x" * 6000}]})
    cache = PromptCache()
    first = cache.automatic(segments, salt="openai:m", writes=True)
    again = cache.automatic(segments, salt="openai:m", writes=True)
    assert first.total >= 1024 and first.read == 0
    assert first.written == first.total // 128 * 128
    assert (again.read, again.written) == (first.written, 0)
    assert PromptCache().automatic(segments, salt="openai:m").written == 0
