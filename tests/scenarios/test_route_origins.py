"""Reasoning never crosses routes, and a failover keeps a thinking session alive (issue 42).

The scenarios' backup route is the simulator's second route, another origin:
each route mints its signatures and sealed reasoning with its own key and
refuses the other's, as the real APIs refuse another account's. Planted
defects of the class (an origin filter that lets another route's reasoning
through, on each format) fail the replay of `failover-keeps-thinking`; the
sweep's failover promise holds on its thinking Anthropic loop, and fails when
the gateway stops turning thinking off for a loop it cannot show thinking.
"""

from __future__ import annotations

import importlib
import inspect
import textwrap
from typing import Any

import pytest

from navagent.fixtures.harness import SimulatedCluster, load_scenario, plan_replays, replay_scenario
from navagent.fixtures.harness.cassettes._cassette import load_cassette
from navagent.fixtures.harness.faults._invariants import INVARIANTS
from navagent.fixtures.harness.faults._space import parse_point
from navagent.fixtures.harness.replay._stack import BACKUP_ROUTE
from navagent.fixtures.harness.sweep._run import SweepOptions, sweep_grid
from navagent.fixtures.provider import SimHTTPError, simulate, split_route
from navagent.gateway import _origin
from navagent.gateway.anthropic import request as anthropic_request
from navagent.gateway.openai import request as openai_request
from tests.scenarios.conftest import CASSETTES, SCENARIOS, CopyCase

SCENARIO = "failover-keeps-thinking"

REFUSALS = {
    "anthropic": "Invalid `signature` in `thinking` block",
    "openai-responses": "could not be verified",
    "gemini": "Corrupted thought signature",
}
"""What each API says to reasoning another account wrote (the simulator says the same)."""


def _requests(provider: str) -> list[tuple[str, Any]]:
    loaded = load_cassette(CASSETTES / provider / f"{SCENARIO}.yaml")
    return [(request.path, request.body) for request in loaded.requests]


@pytest.mark.parametrize("provider", sorted(REFUSALS))
def test_each_route_refuses_the_reasoning_another_route_minted(provider: str) -> None:
    requests = _requests(provider)
    assert [split_route(path)[0] for path, _ in requests].count(BACKUP_ROUTE) == 1
    path, last = requests[-1]  # turn 2's closing request: the first route's reasoning in it
    assert split_route(path)[0] == ""
    model = load_cassette(CASSETTES / provider / f"{SCENARIO}.yaml").source.model
    simulate(provider, last, model=model)  # its own route accepts it
    with pytest.raises(SimHTTPError, match=REFUSALS[provider]) as refused:
        simulate(provider, last, model=model, route=BACKUP_ROUTE)
    assert refused.value.status == 400


def _permissive_own_payload(part: Any, origin: str) -> dict[str, Any] | None:
    """The planted defect: a payload is read whichever route wrote it."""
    return _origin.own_payload(part, part.origin)


def _plant_openai(monkeypatch: pytest.MonkeyPatch, after: str = "part.origin >= origin") -> None:
    """By default the surviving mutant of round three: `part.origin == origin` -> `>=`."""
    function = openai_request._echo_reasoning
    source = textwrap.dedent(inspect.getsource(function))
    before = "part.origin == origin"
    assert source.count(before) == 1
    namespace: dict[str, Any] = {}
    code = compile(source.replace(before, after), "<planted>", "exec")
    exec(code, openai_request.__dict__, namespace)  # the project's function, one edit
    monkeypatch.setattr(openai_request, "_echo_reasoning", namespace["_echo_reasoning"])


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
async def test_an_origin_filter_that_lets_reasoning_cross_routes_fails_the_replay(
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
) -> None:
    scenario = load_scenario(copy_case(SCENARIO, providers=(provider,)) / f"{SCENARIO}.yaml")
    assert (await replay_scenario(scenario, provider, cluster=cluster)).passed

    if provider == "openai":
        _plant_openai(monkeypatch)
    else:
        package = provider.replace("-", "_")
        module = importlib.import_module(f"navagent.gateway.{package}.request")
        monkeypatch.setattr(module, "own_payload", _permissive_own_payload)
    result = await replay_scenario(scenario, provider, cluster=cluster)

    assert not result.passed
    first, headline, *rest = result.report.splitlines()
    assert first.startswith(f"scenario {SCENARIO}, format {provider}, turn 1, request ")
    assert "the request differs from the cassette's at " in headline
    assert any(line.strip().startswith("sent to:  the ") for line in rest)


def _anthropic_sweep(point: str, scenario: str = SCENARIO) -> list[Any]:
    (job,) = plan_replays([load_scenario(SCENARIOS / f"{scenario}.yaml")], ["anthropic"])
    grid = sweep_grid(job, SweepOptions(points=(parse_point(point),), invariants=dict(INVARIANTS)))
    assert grid.error == ""
    return grid.violations


def test_a_failover_in_the_middle_of_a_thinking_loop_answers_as_the_clean_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Request 6 closes turn 2's tool loop; its first route refuses the key, so the
    # second route, which cannot be shown the loop's thinking, must answer it.
    assert _anthropic_sweep("http-401@request6") == []
    # The same in the middle of a three-round loop, whose recording never failed over.
    assert _anthropic_sweep("http-401@request2", "reasoning-tool-loop") == []

    monkeypatch.setattr(anthropic_request, "_loop_lost_its_thinking", lambda *_: False)
    (violation,) = _anthropic_sweep("http-401@request2", "reasoning-tool-loop")
    breaches = dict(violation.breaches)
    assert "must answer exactly as the fault-free replay" in breaches["fault-contract"]
    assert "ended error/invalid_request" in breaches["fault-contract"]


def test_the_sweep_sees_signed_reasoning_sent_to_the_other_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No replay fails over with OpenRouter's reasoning_details; the sweep's failover
    # does, and the second route refuses the first's signature as the API would.
    (job,) = plan_replays([load_scenario(SCENARIOS / "reasoning-details.yaml")], ["openai"])
    options = SweepOptions(points=(parse_point("http-401@request2"),), invariants=dict(INVARIANTS))
    assert sweep_grid(job, options).violations == []

    _plant_openai(monkeypatch, "True")  # no origin filter at all: every part echoed
    monkeypatch.setattr(openai_request, "own_payload", _permissive_own_payload)
    (violation,) = sweep_grid(job, options).violations
    breaches = dict(violation.breaches)
    assert "Invalid `signature` in `thinking` block" in breaches["valid-history"]
    assert "messages.2.reasoning_details.0" in breaches["valid-history"]
