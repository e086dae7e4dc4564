"""Scenario files: errors name file, line, path and expectation; the set covers issue 6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from navagent.core.tools import TOOLS_BY_NAME
from navagent.core.wire_formats import formats_with
from navagent.fixtures.harness import (
    Scenario,
    ScenarioError,
    discover_scenarios,
    load_scenario,
    parse_scenario,
)
from tests.scenarios.conftest import SCENARIOS

VALID = """\
id: sample
description: A sample.
turns:
  - user: List my sandboxes.
"""


def problems(text: str) -> tuple[str, ...]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="scenarios/sample.yaml")
    return caught.value.problems


def test_a_minimal_scenario_gets_the_defaults() -> None:
    scenario = parse_scenario(VALID, source="scenarios/sample.yaml")
    assert scenario.source == "scenarios/sample.yaml"
    assert scenario.cluster.name == "demo" and scenario.cluster.start == "seed"
    assert scenario.model_for("anthropic") == "claude-sonnet-4-5"
    assert scenario.turns[0].expect.tools is None  # unchecked, not "no tools"


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        pytest.param(
            "    expect:\n      tools:\n        - name: sandbox_get\n"
            "          arguments: [dev-box]\n",
            "scenarios/sample.yaml:8: turns[0].expect.tools[0].arguments: expected a mapping"
            " (key: value lines), got a list of 1 item",
            id="arguments-not-a-mapping",
        ),
        pytest.param(
            "    expect:\n      tools:\n        - name: sandbox_get\n          statuz: ok\n",
            "scenarios/sample.yaml:8: turns[0].expect.tools[0].statuz: unknown key 'statuz'"
            " (allowed keys: name, arguments, match, status)",
            id="typo-in-a-key",
        ),
        pytest.param(
            "    expect:\n      tools:\n        - name: sandbox_lst\n",
            "scenarios/sample.yaml:7: turns[0].expect.tools[0].name: unknown tool 'sandbox_lst'"
            " (expected one of: cluster_status, sandbox_list,",
            id="unknown-tool",
        ),
        pytest.param(
            "    expect:\n      tools:\n        - name: sandbox_get\n          match: fuzzy\n",
            "scenarios/sample.yaml:8: turns[0].expect.tools[0].match: expected 'subset' or"
            " 'exact', got a string of 5 characters",
            id="bad-literal",
        ),
        pytest.param(
            "    confirm: maybe\n",
            "scenarios/sample.yaml:5: turns[0].confirm: expected a list,"
            " got a string of 5 characters",
            id="confirm-not-a-list",
        ),
        pytest.param(
            "    confirm: [perhaps]\n",
            "scenarios/sample.yaml:5: turns[0].confirm[0]: expected true or false (yes/no),"
            " got a string of 7 characters",
            id="confirm-not-a-boolean",
        ),
        pytest.param(
            "    expect:\n      error: boom\n",
            "scenarios/sample.yaml:6: turns[0].expect.error[0]: expected 'rate_limited',",
            id="unknown-error-code",
        ),
        pytest.param(
            "  - usr: typo\n",
            "scenarios/sample.yaml:5: turns[1].user: missing required key 'user'",
            id="missing-key",
        ),
    ],
)
def test_malformed_scenario_names_file_line_path_and_expectation(tail: str, expected: str) -> None:
    found = problems(VALID + tail)
    assert any(problem.startswith(expected) for problem in found), found


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    found = problems(VALID + "    confirm: maybe\n    expect:\n      finish: done\n  - usr: typo\n")
    assert [problem.split(": ")[1] for problem in found] == [
        "turns[0].confirm",
        "turns[0].expect.finish",
        "turns[1].user",
        "turns[1].usr",
    ]


def test_items_that_failed_do_not_also_count_as_too_few() -> None:
    # pydantic would add "turns: at least 1 item" because the only turn failed.
    found = problems("id: sample\ndescription: d\nturns:\n  - usr: hi\n")
    assert not any(problem.startswith("scenarios/sample.yaml:3: turns:") for problem in found)
    assert problems("id: sample\ndescription: d\nturns: []\n") == (
        "scenarios/sample.yaml:3: turns: expected at least 1 item, got none",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: a\nid: b\n", "scenarios/sample.yaml:2: not valid YAML: key 'id' is given twice"),
        ("id: [unclosed\n", "scenarios/sample.yaml:2: not valid YAML:"),
        (
            "- just\n- a list\n",
            "scenarios/sample.yaml: expected a mapping with id, description and turns",
        ),
        (
            "id: Bad_Id\ndescription: d\nturns:\n  - user: x\n",
            "scenarios/sample.yaml:1: id: 'Bad_Id' is not a scenario id: expected lowercase",
        ),
    ],
)
def test_documents_that_are_not_scenarios(text: str, expected: str) -> None:
    assert problems(text)[0].startswith(expected)


def test_the_id_must_be_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "other-name.yaml"
    path.write_text(VALID, encoding="utf-8")
    with pytest.raises(
        ScenarioError,
        match=r"other-name.yaml:1: id: expected 'other-name' \(the file name\), got 'sample'",
    ):
        load_scenario(path)


def test_discovery_reports_every_broken_file_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "sample.yaml").write_text(VALID, encoding="utf-8")
    (tmp_path / "broken.yaml").write_text("id: broken\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not a scenario", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        discover_scenarios([tmp_path, tmp_path / "missing.yaml"])
    found = caught.value.problems
    assert f"{tmp_path / 'missing.yaml'}: no such scenario file or folder" in found
    assert f"{tmp_path / 'broken.yaml'}:1: description: missing required key 'description'" in found
    assert not any("sample.yaml" in problem or "notes.md" in problem for problem in found)


def test_discovery_refuses_an_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no scenario files"):
        discover_scenarios([tmp_path])


# --- the committed set covers what issue 6 asks for ---------------------------

ALL = discover_scenarios([SCENARIOS])


def expected_tools(scenario: Scenario) -> list[list[str]]:
    return [[tool.name for tool in turn.expect.tools or ()] for turn in scenario.turns]


def test_the_committed_scenarios_cover_the_issue() -> None:
    turns = [turn for scenario in ALL for turn in scenario.turns]
    statuses = {tool.status for turn in turns for tool in turn.expect.tools or ()}
    assert len(ALL) >= 12
    assert {name for s in ALL for names in expected_tools(s) for name in names} == set(
        TOOLS_BY_NAME
    )
    assert any(len(names) >= 2 for s in ALL for names in expected_tools(s)), "parallel calls"
    assert {"ok", "failed", "declined"} <= statuses
    assert any(True in turn.confirm for turn in turns) and any(
        False in turn.confirm for turn in turns
    )
    assert any(turn.resume for turn in turns)
    assert any(turn.expect.compacted for turn in turns)
    assert any(s.options.compaction is not None for s in ALL)
    assert any(turn.expect.error for turn in turns), "a failing turn"
    assert any(turn.expect.thinking for turn in turns)
    assert any(s.model_for("anthropic").endswith("-thinking") for s in ALL)
    assert any(s.cluster.fault for s in ALL), "a tool made to fail"
    assert any(not turn.user.isascii() for turn in turns)
    assert any(len(s.turns) >= 3 for s in ALL)


def test_every_scenario_has_a_description_and_checks_every_turn() -> None:
    for scenario in ALL:
        assert len(scenario.summary) > 40, scenario.id
        for number, turn in enumerate(scenario.turns, start=1):
            assert turn.expect != type(turn.expect)(), f"{scenario.id} turn {number} checks nothing"


def test_scenario_models_are_frozen_and_strict() -> None:
    scenario = ALL[0]
    with pytest.raises(Exception, match="frozen"):
        scenario.id = "other"  # type: ignore[misc]
    data = json.loads(scenario.model_dump_json())
    data["surprise"] = 1
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        Scenario.model_validate(data)


def test_formats_and_per_format_expectations() -> None:
    scenario = parse_scenario(
        """
id: per-format
description: d
formats: [anthropic, openai]
turns:
  - user: hi
    expect: {finish: answered, answer: {contains: [hello]}}
    expect_by_format:
      anthropic: {answer: {contains: [Hello]}}
""",
        source="per-format.yaml",
    )
    assert scenario.formats == ("anthropic", "openai")
    turn = scenario.turns[0]
    assert turn.expect_for("anthropic").answer.contains == ("Hello",)  # type: ignore[union-attr]
    assert turn.expect_for("anthropic").finish == "answered"  # the rest is kept
    assert turn.expect_for("openai").answer.contains == ("hello",)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("formats", "expected"),
    [
        ("[]", "expected at least one of"),
        ("[openai, openai]", "a format is listed twice"),
        ("[no-such-format]", "formats[0]: unknown wire format 'no-such-format'"),
    ],
)
def test_bad_formats_are_named(formats: str, expected: str) -> None:
    text = f"id: x\ndescription: d\nformats: {formats}\nturns: [{{user: hi}}]\n"
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="x.yaml")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            'cluster: {fault: "sandbox list=exti:1"}\n',
            "scenarios/sample.yaml:3: cluster.fault: invalid NAV_SIM_FAULT rule"
            " 'sandbox list=exti:1': unknown fault 'exti' (expected one of: slow, hang,",
            id="nav-sim-unknown-fault",
        ),
        pytest.param(
            'cluster: {fault: "sandbox lst=hang"}\n',
            "scenarios/sample.yaml:3: cluster.fault: invalid NAV_SIM_FAULT rule"
            " 'sandbox lst=hang': unknown command 'sandbox lst'",
            id="nav-sim-unknown-command",
        ),
        pytest.param(
            'cluster: {fault: "*=exit:0"}\n',
            "scenarios/sample.yaml:3: cluster.fault: invalid NAV_SIM_FAULT rule '*=exit:0':"
            " exit takes an exit code from 1 to 255",
            id="nav-sim-bad-argument",
        ),
        pytest.param(
            "turns:\n  - user: 'List them. [sim-fault: rest step=2]'\n",
            "scenarios/sample.yaml:4: turns[0].user: bad sim-fault marker"
            " '[sim-fault: rest step=2]': unknown fault kind 'rest'",
            id="marker-unknown-kind",
        ),
        pytest.param(
            "turns:\n  - user: 'List them. [sim-fault: reset aftr=2]'\n",
            "scenarios/sample.yaml:4: turns[0].user: bad sim-fault marker"
            " '[sim-fault: reset aftr=2]': unknown parameter 'aftr'",
            id="marker-unknown-parameter",
        ),
        pytest.param(
            "turns:\n  - user: 'A [sim-fault: reset] B [sim-fault: stall]'\n",
            "scenarios/sample.yaml:4: turns[0].user: 2 sim-fault markers in one message",
            id="two-markers",
        ),
    ],
)
def test_every_fault_grammar_is_checked_at_load_by_its_own_parser(text: str, expected: str) -> None:
    turns = "" if "turns:" in text else "turns:\n  - user: hi\n"
    found = problems("id: sample\ndescription: d\n" + text + turns)
    assert any(problem.startswith(expected) for problem in found), found


def test_valid_faults_load() -> None:
    scenario = parse_scenario(
        'id: sample\ndescription: d\ncluster: {fault: "sandbox list=hang;*=slow:0.5"}\n'
        "turns:\n  - user: 'Hi [sim-fault: stall after=3 step=2]'\n",
        source="scenarios/sample.yaml",
    )
    assert scenario.cluster.fault == "sandbox list=hang;*=slow:0.5"


def test_timeouts_are_options_with_bounds() -> None:
    scenario = parse_scenario(
        "id: sample\ndescription: d\n"
        "options: {tool_timeout: 0.5, first_token_timeout: 0.5, idle_timeout: 0.5}\n"
        "turns:\n  - user: hi\n",
        source="scenarios/sample.yaml",
    )
    assert scenario.options.tool_timeout == 0.5 and scenario.options.idle_timeout == 0.5
    found = problems(
        "id: sample\ndescription: d\noptions: {idle_timeout: 0.1, tool_timeout: 0}\n"
        "turns:\n  - user: hi\n"
    )
    assert found == (
        "scenarios/sample.yaml:3: options.tool_timeout: expected greater than 0, got int",
        "scenarios/sample.yaml:3: options.idle_timeout: expected greater than or equal to 0.3,"
        " got float",
    )


# Issue 30: an expectation names a capability of the registry rows, not a list
# of formats that a new row would have to be added to.
def test_a_capability_stands_for_every_format_that_has_it() -> None:
    text = (
        "id: x\ndescription: d\nturns:\n"
        "  - user: hi\n    expect: {thinking: reasons, cached: [caches_prompts]}\n"
    )
    expect = parse_scenario(text, source="x.yaml").turns[0].expect
    assert expect.thinking == formats_with("reasons")
    assert expect.cached == formats_with("caches_prompts")


def test_route_options_are_the_routes_file_values_and_a_typo_names_them() -> None:
    text = VALID.replace("turns:", "route_options:\n  reasoning_echo: reasoning_content\nturns:")
    scenario = parse_scenario(text, source="scenarios/sample.yaml")
    assert scenario.route_options.reasoning_echo == "reasoning_content"
    assert scenario.route_options.think_tags is None

    (problem,) = problems(text.replace("reasoning_content", "reasoning_contents"))
    assert problem.startswith("scenarios/sample.yaml:4: route_options.reasoning_echo: ")
    assert "'reasoning_details', 'reasoning_content' or 'none'" in problem
