"""The failure block's parts: which turn a request belongs to, and the re-record command."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from navagent.core.visible import visible
from navagent.fixtures.harness import (
    CassetteError,
    load_cassette,
    parse_scenario,
    record_command,
)
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.replay._report import Failure, request_turns
from tests.scenarios.conftest import CopyCase

SCENARIO = """\
id: repeats
description: A message said twice must not pull an earlier request into the later turn.
turns:
  - user: thanks
  - user: List my sandboxes.
  - user: thanks
"""


def _body(*users: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text} for text in users]}


def test_requests_are_placed_in_their_turn_walking_forward() -> None:
    scenario = parse_scenario(SCENARIO, source="repeats.yaml")
    bodies = [
        _body("thanks"),
        _body("thanks", "List my sandboxes."),
        _body("thanks", "List my sandboxes."),  # the tool result's follow-up
        _body("thanks", "List my sandboxes.", "thanks"),
    ]
    assert request_turns(scenario, bodies) == [1, 2, 2, 3]


def test_a_retried_turn_starts_where_its_first_request_is_sent_again() -> None:
    scenario = parse_scenario(
        "id: r\ndescription: d\nturns:\n  - user: hi\n  - user: hi\n    retry: true\n"
        "  - user: bye\n",
        source="r.yaml",
    )
    first = _body("hi")
    follow_up = {"messages": [{"role": "user", "content": "hi"}, {"role": "tool"}]}
    bodies = [first, follow_up, first, follow_up, _body("hi", "bye")]
    assert request_turns(scenario, bodies) == [1, 1, 2, 2, 3]


def test_a_user_message_is_found_as_it_is_escaped_in_json() -> None:
    scenario = parse_scenario(
        "id: q\ndescription: d\nturns:\n  - user: hi\n  - user: 'say \"Überprüfung\"'\n",
        source="q.yaml",
    )
    assert request_turns(scenario, [_body("hi"), _body("hi", 'say "Überprüfung"')]) == [1, 2]


def test_the_command_names_an_id_from_the_project_and_a_path_otherwise(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    scenario = parse_scenario(SCENARIO, source=str(tmp_path / "scenarios" / "repeats.yaml"))
    assert (
        record_command(scenario, "anthropic", cwd=tmp_path)
        == "nav scenario record repeats --provider anthropic --sim"
    )
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    assert record_command(scenario, "openai", cwd=elsewhere) == (
        f"nav scenario record {tmp_path / 'scenarios' / 'repeats.yaml'} --provider openai --sim"
    )
    assert record_command(
        scenario, "openai", cwd=tmp_path, real_model="gpt-4o", cassette_dir=Path("cas")
    ) == ("nav scenario record repeats --provider openai --model gpt-4o --cassettes cas")


HOSTILE_MODELS = ["gpt-4.1-mini; touch /tmp/x #", "gpt-4.1-mini\n  re-record with: rm -rf ~"]


@pytest.mark.parametrize("model", HOSTILE_MODELS)
def test_a_cassette_whose_model_is_not_a_name_is_refused_without_echoing_it(
    model: str, copy_case: CopyCase
) -> None:
    folder = copy_case("diagnose-failing", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "diagnose-failing.yaml"
    data = _serializer.deserialize(cassette.read_text(encoding="utf-8"))
    data["metadata"]["source"].update(kind="real", model=model)
    cassette.write_text(_serializer.serialize(data), encoding="utf-8")

    with pytest.raises(CassetteError) as refused:
        load_cassette(cassette)

    assert "metadata.source.model" in str(refused.value)
    assert "touch" not in str(refused.value) and "rm -rf" not in str(refused.value)


@pytest.mark.parametrize("model", HOSTILE_MODELS)
def test_every_printed_command_is_quoted_and_one_line(model: str, tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    scenario = parse_scenario(SCENARIO, source=str(tmp_path / "scenarios" / "repeats.yaml"))
    command = record_command(scenario, "openai", cwd=tmp_path, real_model=model)

    assert "\n" not in command
    argv = shlex.split(command)  # what a shell would run: the model stays one argument
    assert argv[:4] == ["nav", "scenario", "record", "repeats"]
    assert argv[-2] == "--model" and argv[-1] == model.replace("\n", "^J")

    failure = Failure(
        scenario=scenario,
        provider="openai",
        turn=1,
        headline=f"the cassette says {model}",
        lines=(f"cassette: {model}",),
        rerecord=command,
    )
    block = failure.block()
    assert len(block.splitlines()) == 4  # where, headline, one detail, the command
    assert block.splitlines()[-1] == f"  re-record with: {command}"
    assert visible(block) == block  # nothing a terminal would obey


def test_a_path_with_spaces_and_a_newline_is_quoted(tmp_path: Path) -> None:
    folder = tmp_path / "my scenarios\nx"
    scenario = parse_scenario(SCENARIO, source=str(folder / "repeats.yaml"))
    command = record_command(scenario, "openai", cwd=tmp_path / "elsewhere")
    assert "\n" not in command
    assert shlex.split(command)[3] == str(folder / "repeats.yaml").replace("\n", "^J")
