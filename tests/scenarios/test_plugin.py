"""The pytest plugin's surface: collection, formats, the fixture and marker, matching, filters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import (
    HIDDEN_ENDPOINT,
    MatchOptions,
    RecordFilters,
    SimulatedCluster,
    load_cassette,
    load_scenario,
    real_target,
    record_scenario,
    replay_scenario,
    simulated_target,
)
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.cassettes._matching import compare_requests
from navagent.fixtures.harness.scenarios._model import Scenario
from navagent.fixtures.provider import SimulatedProvider
from tests.scenarios.conftest import CASSETTES, SCENARIOS

PYPROJECT = """
[tool.pytest.ini_options]
asyncio_default_fixture_loop_scope = "function"
asyncio_mode = "auto"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with the committed `providers` scenario and its cassettes (default layout)."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyprojecttoml(PYPROJECT)
    (pytester.path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", pytester.path / "scenarios" / "providers.yaml")
    for provider in FORMAT_IDS:
        target = pytester.path / "cassettes" / provider / "providers.yaml"
        target.parent.mkdir(parents=True)
        shutil.copyfile(CASSETTES / provider / "providers.yaml", target)
    return pytester.path


def test_each_scenario_is_one_item_per_format(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines([f"scenarios/providers.yaml::{p}" for p in FORMAT_IDS])


def test_formats_limits_the_items_and_nav_formats_the_run(
    pytester: pytest.Pytester, project: Path
) -> None:
    scenario = project / "scenarios" / "providers.yaml"
    scenario.write_text(
        scenario.read_text(encoding="utf-8").replace(
            "turns:", "formats: [anthropic, openai]\nturns:", 1
        ),
        encoding="utf-8",
    )
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["scenarios/providers.yaml::openai", "scenarios/providers.yaml::anthropic"]
    )
    result.stdout.no_fnmatch_line("*::openai-responses")

    pytester.makepyprojecttoml(PYPROJECT + 'nav_formats = ["anthropic"]\n')
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)


def test_an_unknown_format_in_the_settings_is_a_usage_error(
    pytester: pytest.Pytester, project: Path
) -> None:
    pytester.makepyprojecttoml(PYPROJECT + 'nav_formats = ["no-such-format"]\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nav_formats: unknown format(s) no-such-format*"])


def test_the_fixture_runs_a_marked_or_inline_scenario_and_shows_its_transcript(
    pytester: pytest.Pytester, project: Path
) -> None:
    inline = (SCENARIOS / "providers.yaml").read_text(encoding="utf-8")
    pytester.makepyfile(
        test_mine=f"""
        import pytest
        import yaml

        @pytest.mark.nav_scenario("providers")
        def test_marked(nav_scenario):
            result = nav_scenario.replay("anthropic")
            first = result.transcript.turns[0]
            assert [tool.name for tool in first.tools] == ["provider_list"]
            assert "nvidia" in first.answer

        def test_inline_yaml(nav_scenario):
            result = nav_scenario.replay("openai", {inline!r})
            assert result.transcript.turns[1].tools[0].arguments == {{"name": "nvidia"}}

        async def test_inline_dict_async(nav_scenario):
            spec = yaml.safe_load({inline!r})
            spec["turns"][0]["expect"]["answer"]["contains"] = ["no such provider"]
            result = await nav_scenario.areplay("openai", spec, check=False)
            assert not result.passed
            assert "turn 1" in result.report and "no such provider" in result.report
        """
    )
    result = pytester.runpytest("test_mine.py", "-q")
    result.assert_outcomes(passed=3)


def test_a_malformed_inline_scenario_names_the_problem(
    pytester: pytest.Pytester, project: Path
) -> None:
    pytester.makepyfile(
        test_bad="""
        def test_bad(nav_scenario):
            nav_scenario.replay("openai", {"id": "x", "description": "d", "turns": []})
        """
    )
    result = pytester.runpytest("test_bad.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*<inline>*turns: expected at least 1 item, got none*"])


def _tamper_request(project: Path, provider: str) -> None:
    """Add noise to every recorded request: a `metadata.run` field the replay does not send."""
    path = project / "cassettes" / provider / "providers.yaml"
    data = _serializer.deserialize(path.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        body = json.loads(interaction["request"]["body"])
        interaction["request"]["body"] = json.dumps(body | {"metadata": {"run": "recorded"}})
    path.write_text(_serializer.serialize(data), encoding="utf-8")


def test_matching_ignores_configured_paths_and_applies_the_normalize_hook(
    pytester: pytest.Pytester, project: Path
) -> None:
    _tamper_request(project, "openai")
    only = ("-k", "openai and not responses")
    failed = pytester.runpytest(*only)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*the request differs from the cassette's at metadata*"])

    pytester.makepyprojecttoml(PYPROJECT + 'nav_match_ignore = ["metadata"]\n')
    pytester.runpytest(*only).assert_outcomes(passed=1)

    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makeconftest(
        """
        def pytest_nav_normalize_request(body):
            body.pop("metadata", None)
            return body
        """
    )
    pytester.runpytest(*only).assert_outcomes(passed=1)


async def test_a_scenario_can_ignore_paths_of_its_own(copy_case, cluster: SimulatedCluster) -> None:
    folder = copy_case("providers", providers=("anthropic",))
    _tamper_request(folder.parent, "anthropic")
    scenario = load_scenario(folder / "providers.yaml")
    assert not (await replay_scenario(scenario, "anthropic", cluster=cluster)).passed
    ignoring = Scenario.model_validate(
        scenario.model_dump() | {"matching": {"ignore": ["metadata"]}}
    ).with_source(scenario.source)
    assert (await replay_scenario(ignoring, "anthropic", cluster=cluster)).passed


def test_match_options_wildcards_and_bad_paths() -> None:
    options = MatchOptions(ignore=("messages[*].cache_control",))
    recorded = {"messages": [{"content": "a", "cache_control": 1}]}
    sent = {"messages": [{"content": "a"}]}
    assert options.apply(recorded) == sent
    from navagent.fixtures.harness import RequestShape

    shape = RequestShape("POST", "/v1/messages", recorded)
    assert compare_requests([shape], [RequestShape("POST", "/v1/messages", sent)], options) is None
    with pytest.raises(ValueError, match="not a JSON path"):
        MatchOptions(ignore=("messages[x",))


async def test_filters_run_before_anything_is_written(
    tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = load_scenario(SCENARIOS / "providers.yaml")
    filters = RecordFilters.from_settings(
        deny_headers=["Content-Type"], body=[r"chatcmpl-[A-Za-z0-9]+ => chatcmpl-X"]
    )
    result = await record_scenario(
        scenario,
        "openai",
        cassette_dir=tmp_path,
        target=simulated_target(),
        cluster=cluster,
        filters=filters,
    )
    assert result.written
    text = result.path.read_text(encoding="utf-8")
    assert "chatcmpl-X" in text and "chatcmpl-" not in text.replace("chatcmpl-X", "")
    assert "content-type" not in text.lower()


async def test_hide_host_keeps_the_real_endpoint_out_of_the_cassette(
    tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = load_scenario(SCENARIOS / "providers.yaml")
    with SimulatedProvider() as remote:
        target = real_target(
            "openai", endpoint=remote.base_url, environ={"OPENAI_API_KEY": "sk-" + "x" * 20}
        )
        result = await record_scenario(
            scenario,
            "openai",
            cassette_dir=tmp_path,
            target=target,
            cluster=cluster,
            filters=RecordFilters(hide_host=True),
        )
        host = remote.base_url.split("//", 1)[1]
    assert result.written, result.problems
    text = result.path.read_text(encoding="utf-8")
    assert host not in text and "127.0.0.1" not in text
    assert load_cassette(result.path).source.endpoint == HIDDEN_ENDPOINT
    replayed = await replay_scenario(scenario, "openai", cassette_dir=tmp_path, cluster=cluster)
    assert replayed.passed, replayed.problems
