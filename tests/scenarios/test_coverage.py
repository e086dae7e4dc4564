"""`nav scenario coverage` and the plugin's summary line: what the scenarios never exercise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.events import Usage
from navagent.core.tools import TOOLS_BY_NAME
from navagent.core.wire_formats import CAPABILITIES, FORMAT_IDS, WIRE_FORMATS
from navagent.fixtures.harness.replay._coverage import (
    DIALECTS,
    Coverage,
    CoverageItem,
    dialects_in,
    exercised,
    expected,
)
from navagent.fixtures.harness.scenarios._transcript import (
    TextStep,
    ThinkingStep,
    ToolStep,
    Transcript,
    TranscriptTurn,
)
from tests.scenarios.conftest import CASSETTES, ROOT, SCENARIOS


def item(key: str) -> CoverageItem:
    return CoverageItem.from_key(key)


def transcript(*turns: TranscriptTurn) -> Transcript:
    return Transcript(scenario="s", provider="anthropic", turns=turns)


def test_a_format_can_exercise_its_own_features_and_every_tool_and_option() -> None:
    for provider, row in WIRE_FORMATS.items():
        items = set(expected(provider))
        features = {i.name for i in items if i.kind == "feature"}
        assert features == {name for name in CAPABILITIES if getattr(row, name)}
        assert {i.name for i in items if i.kind == "tool"} == set(TOOLS_BY_NAME)
    assert item("tool option:sandbox_logs.lines") in expected("openai")
    assert item("tool option:sandbox_create.image") in expected("gemini")
    assert item("feature:names_calls") not in expected("gemini")  # the gateway names them


def test_every_registry_dialect_has_a_detector_and_is_expected_of_its_format() -> None:
    names = [dialect.name for row in WIRE_FORMATS.values() for dialect in row.dialects]
    assert sorted(names) == sorted(DIALECTS)
    assert item("dialect:reasoning_content") in expected("openai")
    assert item("dialect:reasoning_content") not in expected("anthropic")


def test_a_dialect_counts_only_where_the_recorded_responses_show_it() -> None:
    shown = {
        (path.parent.name, path.stem): sorted(i.name for i in dialects_in(path, path.parent.name))
        for path in CASSETTES.glob("*/*.yaml")
    }

    assert {key: names for key, names in shown.items() if names} == {
        ("openai", "reasoning-dialects"): ["reasoning_content"],
        ("openai", "cut-while-reasoning"): ["reasoning_content"],
        ("openai", "failover-keeps-thinking"): ["reasoning_content"],
        ("openai", "reasoning-details"): ["reasoning_details"],
        ("openai", "reasoning-tool-loop"): ["thinking_blocks"],
        ("openai", "thinking-round-trip"): ["reasoning"],
        ("openai-responses", "reasoning-dialects"): ["reasoning_text"],
        ("openai-responses", "reasoning-details"): ["reencrypted_reasoning"],
        ("openai-responses", "parallel-logs"): ["interleaved_reasoning"],
        ("anthropic", "reasoning-dialects"): ["redacted_thinking"],
    }
    assert dialects_in(CASSETTES / "openai" / "no-such.yaml", "openai") == set()


def test_what_a_transcript_exercises_is_what_the_user_saw() -> None:
    ran = ToolStep(id="1", name="sandbox_logs", arguments={"name": "a", "lines": 0}, status="ok")
    declined = ToolStep(id="2", name="sandbox_delete", arguments={"name": "a"}, status="declined")
    turn = TranscriptTurn(
        user="u",
        steps=(ThinkingStep(text="t"), ran, declined, TextStep(text="done")),
        usage=Usage(input_tokens=10, cache_read_tokens=4),
    )

    found = exercised(transcript(turn))

    assert found == {
        item("feature:reasons"),
        item("feature:signs_thinking"),
        item("feature:caches_prompts"),
        item("feature:names_calls"),
        item("tool:sandbox_logs"),
        item("tool option:sandbox_logs.name"),
        item("tool option:sandbox_logs.lines"),  # 0 is set: it counts
    }  # the declined delete never ran


def test_reasoning_that_never_went_back_does_not_count_as_signed() -> None:
    answer_only = TranscriptTurn(user="u", steps=(ThinkingStep(text="t"), TextStep(text="a")))
    ended_at_the_call = TranscriptTurn(
        user="u",
        steps=(ThinkingStep(text="t"), ToolStep(id="1", name="sandbox_list", arguments={})),
    )

    found = exercised(transcript(answer_only, ended_at_the_call))

    assert item("feature:signs_thinking") not in found
    assert item("feature:reasons") in found
    assert item("tool:sandbox_list") not in found  # it never finished


def test_the_summary_names_the_gaps_or_says_there_are_none() -> None:
    coverage = Coverage()
    everything = expected("openai")
    coverage.add_items("openai", "a", everything[:-1])
    coverage.add_items("openai", "b", everything[-1:])
    assert coverage.gaps() == {}
    assert coverage.summary() == (
        "nav scenarios coverage: every registry feature, dialect, tool and tool option exercised"
        f" on 1 format ({len(everything)} of {len(everything)})"
    )

    partial = Coverage()
    partial.add_items("gemini", "a", [item("tool:sandbox_list")])
    assert partial.gaps()["gemini"][0] == item("feature:reasons")
    line = partial.summary()
    assert line.startswith(f"nav scenarios coverage: 1 of {len(expected('gemini'))} exercised")
    assert "never: gemini reasons, gemini caches_prompts, gemini signs_thinking," in line
    assert line.endswith("more (`nav scenario coverage` lists them)")


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(ValueError, match="not a coverage item"):
        CoverageItem.from_key("widget:x")


def copy_scenarios(root: Path, *scenario_ids: str) -> None:
    for scenario_id in scenario_ids:
        (root / "scenarios").mkdir(exist_ok=True)
        shutil.copyfile(
            SCENARIOS / f"{scenario_id}.yaml", root / "scenarios" / f"{scenario_id}.yaml"
        )
        for provider in FORMAT_IDS:
            target = root / "cassettes" / provider / f"{scenario_id}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(CASSETTES / provider / f"{scenario_id}.yaml", target)


def test_the_command_reports_a_gap_when_the_scenario_that_closed_it_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_scenarios(tmp_path, "providers", "logs-zero-lines")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    both = runner.invoke(app, ["scenario", "coverage", "--provider", "anthropic"])
    (tmp_path / "scenarios" / "logs-zero-lines.yaml").unlink()
    one = runner.invoke(app, ["scenario", "coverage", "--provider", "anthropic"])

    lines = both.output.splitlines()
    assert lines[0].startswith("anthropic (Anthropic Messages): ")
    assert any(
        line.split() == ["tool", "option", "sandbox_logs.lines", "logs-zero-lines"]
        for line in lines
    )
    assert any(
        line.split()[:3] == ["tool", "sandbox_create", "NOT"] for line in lines
    )  # neither scenario creates anything
    assert both.exit_code == 1  # gaps are a failure, as in CI
    assert "sandbox_logs.lines           NOT EXERCISED: no scenario" in one.output
    assert "sandbox_logs                 NOT EXERCISED: no scenario" in one.output
    assert one.output.splitlines()[-1].startswith("5 of 22 exercised on 1 format; never: ")
    assert one.exit_code == 1


def test_a_failed_replay_is_not_counted_and_fails_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_scenarios(tmp_path, "providers")
    (tmp_path / "cassettes" / "openai" / "providers.yaml").unlink()
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(app, ["scenario", "coverage", "--provider", "openai"])

    assert result.exit_code == 1
    assert "not counted (the replay failed): providers[openai]: no cassette at" in result.output
    assert "provider_get                 NOT EXERCISED" in result.output


@pytest.mark.slow  # replays every committed scenario on every format
def test_this_repository_leaves_nothing_unexercised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)

    result = CliRunner().invoke(app, ["scenario", "coverage"])

    assert "NOT EXERCISED" not in result.output
    assert result.output.splitlines()[-1].startswith(
        "every registry feature, dialect, tool and tool option exercised on 4 formats"
    )
    assert result.exit_code == 0


PYPROJECT = """
[tool.pytest.ini_options]
asyncio_default_fixture_loop_scope = "function"
asyncio_mode = "auto"
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_plugin_sums_up_coverage_in_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml(PYPROJECT)
    copy_scenarios(pytester.path, "providers", "logs-zero-lines")

    result = pytester.runpytest("-p", "no:randomly", *workers)

    result.assert_outcomes(passed=8)
    summary = [line for line in result.outlines if line.startswith("nav scenarios coverage:")]
    assert len(summary) == 1
    assert (
        "exercised on 4 formats; never: openai reasoning_content, openai reasoning_details,"
        " openai reasoning, openai thinking_blocks and" in (summary[0])
    )


def test_every_real_chat_stream_the_translator_reads_reasoning_from_shows_a_registry_dialect() -> (
    None
):
    """The registry's dialects are the translator's reasoning paths real servers take.

    Mistral's thinking blocks had a translator path and a real recording but no
    registry row, so coverage could not say that no scenario took that path.
    """
    from navagent.core.events import ThinkingDelta
    from navagent.fixtures.harness.replay._coverage import _events
    from tests.gateway.test_compat_conformance import COMPAT, run

    if COMPAT is None or not COMPAT.is_dir():
        pytest.skip("conformance corpus not found")
    unregistered = []
    for path in sorted(COMPAT.glob("*/*.sse")):
        body = path.read_bytes()
        if not any(isinstance(event, ThinkingDelta) for event in run([body])):
            continue
        events = list(_events(body.decode("utf-8")))
        shown = [d.name for d in WIRE_FORMATS["openai"].dialects if DIALECTS[d.name](events)]
        if not shown:
            unregistered.append(f"{path.parent.name}/{path.stem}")
    assert unregistered == [], unregistered


def test_every_real_responses_stream_that_reasons_again_after_another_item_shows_the_dialect() -> (
    None
):
    """gpt-5 and o4-mini reason between the items they produce; the registry names it."""
    from navagent.fixtures.harness.replay._coverage import _events
    from tests.gateway.corpus import MISSING, ROOT_DIR

    if ROOT_DIR is None:
        pytest.skip(MISSING)
    found = {}
    for path in sorted((ROOT_DIR / "responses").glob("*.sse")):
        events = list(_events(path.read_text(encoding="utf-8")))
        kinds = [
            event["item"].get("type")
            for event in events
            if event.get("type") == "response.output_item.added"
        ]
        first = kinds.index("reasoning") if "reasoning" in kinds else len(kinds)
        if "reasoning" in kinds[first + 1 :] and set(kinds[first:]) != {"reasoning"}:
            found[path.stem] = [
                d.name
                for d in WIRE_FORMATS["openai-responses"].dialects
                if DIALECTS[d.name](events)
            ]
    assert found.keys() == {"gpt5-web-search-cached-usage", "o4-mini-mcp-list-tools-and-call"}
    assert all("interleaved_reasoning" in names for names in found.values()), found
