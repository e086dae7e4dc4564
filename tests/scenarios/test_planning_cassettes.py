"""The planning scenarios' cassettes show one round per response, in dependency order.

Replays check which calls a turn made; these check that a call depending on
another's result went out in a later response, as recorded from the simulator.
"""

from __future__ import annotations

import re

import pytest
import yaml

from navagent.core.wire_formats import FORMAT_IDS
from tests.scenarios.conftest import CASSETTES

_CALL = re.compile(r'"name":\s*"((?:sandbox|cluster|provider|inference)_\w+)"')


def rounds(provider: str, scenario: str) -> list[list[str]]:
    cassette = yaml.safe_load((CASSETTES / provider / f"{scenario}.yaml").read_text("utf-8"))
    # Each call's name once per response (Responses repeats it in several events).
    return [
        list(dict.fromkeys(_CALL.findall(interaction["response"]["body"]["string"])))
        for interaction in cassette["interactions"]
    ]


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_the_logs_of_a_new_sandbox_are_asked_for_after_its_create(provider: str) -> None:
    assert rounds(provider, "create-then-logs") == [["sandbox_create"], ["sandbox_logs"], []]


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_the_failing_sandbox_is_read_after_the_listing_shows_it(provider: str) -> None:
    assert rounds(provider, "diagnose-failing") == [["sandbox_list"], ["sandbox_logs"], []]
