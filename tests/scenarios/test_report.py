"""The failure block's parts: which turn a request belongs to, and the re-record command."""

from __future__ import annotations

from pathlib import Path

from navagent.fixtures.harness import parse_scenario, record_command
from navagent.fixtures.harness.replay._report import request_turns

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
