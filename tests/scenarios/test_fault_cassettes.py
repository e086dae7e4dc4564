"""The committed fault scenarios' cassettes hold what the wire did, and replay it in little time.

`provider-reset-mid-stream`: the broken attempt is kept with the bytes that
arrived (six content deltas) and the error; the next turn's attempt that
broke before any byte and its retry are two interactions. `provider-stall`:
both stalled exchanges are kept as silent bodies. Their replays pass (see
test_replays) and cost the scenario's timeouts, not the gateway's minute.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from navagent.core.wire_formats import FORMAT_IDS, WireFormatId, wire_format
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.provider.wire._respond import is_content_delta
from tests.scenarios.conftest import CASSETTES, SCENARIOS


def _interactions(scenario_id: str, provider: str) -> list[dict[str, Any]]:
    text = (CASSETTES / provider / f"{scenario_id}.yaml").read_text(encoding="utf-8")
    interactions: list[dict[str, Any]] = yaml.safe_load(text)["interactions"]
    return interactions


def _content_deltas(body: str, provider: WireFormatId) -> int:
    blank = wire_format(provider).event_line_ending * 2  # the format's own event end
    events = [event + blank for event in body.split(blank) if event.strip()]
    return sum(is_content_delta(event.encode(), provider) for event in events)


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_a_reset_keeps_the_bytes_before_it_and_every_attempt(provider: WireFormatId) -> None:
    interactions = _interactions("provider-reset-mid-stream", provider)
    ends = [item["response"].get("end") for item in interactions]
    reset = {"error": "ReadError", "message": "[Errno 104] Connection reset by peer"}
    # turn 1: tool call, then the answer broken after six content deltas;
    # turn 2: an attempt reset before any byte, its retry, then the answer.
    assert ends == [None, reset, reset, None, None]
    assert _content_deltas(interactions[1]["response"]["body"]["string"], provider) == 6
    assert interactions[2]["response"]["body"]["string"] == ""
    assert interactions[2]["request"] == interactions[3]["request"]  # the retry, as sent


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_a_stall_is_kept_as_the_silence_it_was(provider: WireFormatId) -> None:
    interactions = _interactions("provider-stall", provider)
    ends = [item["response"].get("end") for item in interactions]
    assert ends == [None, "silent", "silent", None, None]
    assert _content_deltas(interactions[1]["response"]["body"]["string"], provider) == 6
    assert _content_deltas(interactions[2]["response"]["body"]["string"], provider) == 0


@pytest.mark.parametrize(
    ("scenario_id", "bound_s"),
    [("provider-stall", 10.0), ("cluster-tool-timeout", 10.0)],
)
async def test_timeouts_replay_in_the_scenarios_time_not_the_defaults(
    scenario_id: str, bound_s: float, cluster: SimulatedCluster
) -> None:
    # The defaults are a minute (gateway) and 30 s (tools); the scenarios set 0.5 s.
    scenario = load_scenario(SCENARIOS / f"{scenario_id}.yaml")
    started = time.perf_counter()
    result = await replay_scenario(scenario, "anthropic", cluster=cluster)
    assert result.passed, result.problems
    assert time.perf_counter() - started < bound_s
