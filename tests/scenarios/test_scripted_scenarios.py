"""Scripted replies and the scenarios for paths the simulated model never took (issue 42).

The scripted model answers a scripted turn's requests from its `script:` and
every other request as the simulated model does; the committed scenarios
that use it (and the new options) fail when a defect of their class is
planted in the real code.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from navagent.core import nav_cli, tools
from navagent.core.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from navagent.fixtures.harness import (
    ScenarioError,
    SimulatedCluster,
    load_scenario,
    parse_scenario,
    replay_scenario,
)
from navagent.fixtures.harness.record._recorder import RecordError, RecordTarget, record_scenario
from navagent.fixtures.harness.record._scripted_model import (
    SCRIPTED_THOUGHT,
    scenario_model,
    scripted_reply,
)
from navagent.fixtures.provider import TOOL_NAMES as OFFERED
from navagent.fixtures.provider import Conversation, PlannedCall, plan_reply
from tests.scenarios.conftest import CopyCase

SCRIPTED = """
id: scripted
description: Two scripted turns around one the simulated model answers.
turns:
  - user: check dev-box
    script:
      - text: Looking.
        calls: [{name: sandbox_get, arguments: {name: dev-box}}]
      - text: dev-box is fine.
  - user: list my sandboxes
  - user: check dev-box
    script:
      - calls: [{name: sandbox_logs, arguments: {name: dev-box, lines: 0}}]
"""


def conversation(*messages: Any, thinking: bool = False) -> Conversation:
    return Conversation(messages=messages, tools=OFFERED, provider="openai", thinking=thinking)


CALL = ToolCall(id="c1", name="sandbox_get", arguments='{"name": "dev-box"}')
ANSWERED = (
    UserMessage(content="check dev-box"),
    AssistantMessage(content="Looking.", tool_calls=(CALL,)),
    ToolResultMessage(tool_call_id="c1", content="ok"),
    AssistantMessage(content="dev-box is fine."),
)


def test_each_request_of_a_scripted_turn_gets_its_reply_in_order() -> None:
    scenario = parse_scenario(SCRIPTED, source="<test>")
    model = scenario_model(scenario)

    first = model(conversation(UserMessage(content="check dev-box")))
    assert first.text == "Looking."
    assert first.tool_calls == (PlannedCall("sandbox_get", {"name": "dev-box"}),)
    assert first.thinking == ""
    second = model(conversation(*ANSWERED[:3]))
    assert (second.text, second.tool_calls) == ("dev-box is fine.", ())
    # The third turn repeats the first one's words: it gets its own script.
    third = model(
        conversation(
            *ANSWERED,
            UserMessage(content="list my sandboxes"),
            AssistantMessage(content="none"),
            UserMessage(content="check dev-box"),
        )
    )
    assert third.tool_calls == (PlannedCall("sandbox_logs", {"name": "dev-box", "lines": 0}),)


def test_unscripted_requests_get_the_simulated_models_answer() -> None:
    scenario = parse_scenario(SCRIPTED, source="<test>")
    model = scenario_model(scenario)
    unscripted = (*ANSWERED, UserMessage(content="list my sandboxes"))
    past_the_script = (*ANSWERED[:3], ANSWERED[1], ANSWERED[2])

    assert scripted_reply(scenario, conversation(*unscripted)) is None
    assert model(conversation(*unscripted)) == plan_reply(conversation(*unscripted))
    assert scripted_reply(scenario, conversation(*past_the_script)) is None
    assert scripted_reply(scenario, conversation(UserMessage(content="never said"))) is None
    assert scripted_reply(scenario, conversation()) is None


def test_a_reasoning_model_reasons_before_a_scripted_reply() -> None:
    model = scenario_model(parse_scenario(SCRIPTED, source="<test>"))

    plan = model(conversation(UserMessage(content="check dev-box"), thinking=True))

    assert plan.thinking == SCRIPTED_THOUGHT
    assert plan.text == "Looking."


def test_a_scenario_without_scripts_records_with_the_simulated_model() -> None:
    scenario = parse_scenario(
        "id: plain\ndescription: d\nturns: [{user: hello}]\n", source="<test>"
    )
    assert scenario_model(scenario) is plan_reply


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("{}", "a scripted reply needs `text`, `calls` or `refusal`"),
        (
            "{refusal: nope, calls: [{name: sandbox_list}]}",
            "a scripted reply that refuses makes no `calls`",
        ),
        ("{refusal: [nope]}", "refusal: expected a string"),
        ("{calls: [{name: sandbox_nuke}]}", "unknown tool 'sandbox_nuke'"),
        ("{text: hi, tools: []}", "tools"),
    ],
)
def test_a_malformed_script_fails_at_load_with_its_line(reply: str, message: str) -> None:
    text = f"id: bad\ndescription: d\nturns:\n  - user: hello\n    script:\n      - {reply}\n"

    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="bad.yaml")

    assert "bad.yaml:6:" in str(caught.value)
    assert "turns[0].script[0]" in str(caught.value)
    assert message in str(caught.value)


async def test_a_scripted_scenario_is_never_recorded_from_a_real_api(tmp_path: Path) -> None:
    scenario = parse_scenario(SCRIPTED, source="<test>")
    target = RecordTarget(kind="real", endpoint="http://127.0.0.1:9", api_key="unused")

    with pytest.raises(RecordError, match=r"scripts the model's replies .*turn 1, 3.*--sim"):
        await record_scenario(scenario, "openai", cassette_dir=tmp_path, target=target)

    assert not any(tmp_path.iterdir())


# --- the committed scenarios catch a planted defect of their class ---------------


async def test_lines_zero_ignored_fails_the_logs_zero_lines_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("logs-zero-lines", providers=("anthropic",))
    spec = tools.TOOLS_BY_NAME["sandbox_logs"]

    def ignores_zero(args: Any) -> list[str]:
        argv = ["sandbox", "logs", args.name]
        return argv + ["-n", str(args.lines)] if args.lines else argv  # 0 reads as "unset"

    patched = dict(
        tools.TOOLS_BY_NAME, sandbox_logs=dataclasses.replace(spec, command=ignores_zero)
    )
    monkeypatch.setattr(tools, "TOOLS_BY_NAME", MappingProxyType(patched))
    result = await replay_scenario(
        load_scenario(folder / "logs-zero-lines.yaml"), "anthropic", cluster=cluster
    )

    assert not result.passed
    assert result.report.startswith("scenario logs-zero-lines, format anthropic, turn 1, request 2")
    assert "(a tool's result: nav-sim's output" in result.report


async def test_a_create_given_the_read_timeout_fails_the_tool_timeouts_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("tool-timeouts", providers=("openai",))
    original = nav_cli.NavToolRunner.__init__

    def one_timeout(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["create_timeout_s"] = kwargs["timeout_s"]  # the create gets the read's
        original(self, *args, **kwargs)

    monkeypatch.setattr(nav_cli.NavToolRunner, "__init__", one_timeout)
    result = await replay_scenario(
        load_scenario(folder / "tool-timeouts.yaml"), "openai", cluster=cluster
    )

    assert not result.passed
    assert result.report.startswith("scenario tool-timeouts, format openai, turn 1, request 2")
    assert "timed out" in result.report or "tool call 1 (sandbox_create) ended 'timeout'" in str(
        result.problems
    )
