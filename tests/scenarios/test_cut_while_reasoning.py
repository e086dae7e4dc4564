"""Turns cut while the model reasons, and the answers the gateway must take back (issue 42).

A cosmic-ray mutant that kept a Responses reasoning item last in its turn
(`gateway/openai_responses/request.py`, the loop that drops it) passed every
replay and the sweep: the agent keeps nothing of a completion cut while the
model reasoned (a final message of reasoning alone is empty to it, a cancel
keeps answer text only), so no request of a run ever held that shape. Other
clients of the gateway keep it (openai/openai-agents-js#326 sends a run's
history back as it came), and the API refuses it: `answers-go-back` sends
every answer no later request carried back as such a client would.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from typing import Any

import pytest

from navagent.core.agent import CUT_AT_LIMIT_NOTE
from navagent.core.messages import AssistantMessage, ThinkingPart, UserMessage
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.faults._invariants import PointRun, valid_history
from navagent.fixtures.harness.scenarios._model import Cancel
from navagent.fixtures.provider.wire._ids import seal_reasoning
from navagent.gateway._origin import route_origin
from navagent.gateway.openai_responses import request as responses_request
from navagent.gateway.routes import parse_routes
from tests.scenarios.conftest import CopyCase

SCENARIO = "cut-while-reasoning"


@pytest.mark.parametrize("provider", FORMAT_IDS)
async def test_cut_while_reasoning_leaves_nothing_and_the_next_turn_is_accepted(
    provider: str, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case(SCENARIO, providers=(provider,))
    scenario = load_scenario(folder / f"{SCENARIO}.yaml")

    result = await replay_scenario(scenario, provider, cluster=cluster)

    assert result.passed, result.problems
    assert result.transcript is not None
    cut, cancelled, _next = result.transcript.turns
    assert (cut.finish, cut.answer, cancelled.finish, cancelled.answer) == (
        "answered",
        "",
        "cancelled",
        "",
    )
    assert cut.note == CUT_AT_LIMIT_NOTE


async def test_a_trailing_reasoning_item_sent_back_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case(SCENARIO, providers=("openai-responses",))
    scenario = load_scenario(folder / f"{SCENARIO}.yaml")
    # The surviving mutant, planted in the function's own source: the trailing item kept.
    source = textwrap.dedent(inspect.getsource(responses_request._assistant_items))
    dropped = 'while items and items[-1]["type"] == "reasoning":'
    assert source.count(dropped) == 1
    kept = source.replace(dropped, 'while not items and items[-1]["type"] == "reasoning":')
    namespace: dict[str, Any] = {}
    exec(compile(kept, "<trailing-reasoning>", "exec"), vars(responses_request), namespace)
    monkeypatch.setattr(responses_request, "_assistant_items", namespace["_assistant_items"])

    result = await replay_scenario(scenario, "openai-responses", cluster=cluster)

    assert not result.passed
    breach = "[answers-go-back] completion 1 (reasoning alone)"
    refused = [p for p in result.problems if breach in p]
    assert refused and "without its required following item" in refused[0], result.problems


async def test_a_real_apis_recording_is_not_sent_back_to_the_simulator(
    monkeypatch: pytest.MonkeyPatch, copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    """A real API's encrypted reasoning and signatures: only it can open them, not the simulator.

    So on a recording from a real API `answers-go-back` checks nothing (it would refuse every
    reasoning item as unverifiable); here the planted trailing item goes unseen, as it must.
    """
    folder = copy_case(SCENARIO, providers=("openai-responses",))
    cassette = folder.parent / "cassettes" / "openai-responses" / f"{SCENARIO}.yaml"
    text = cassette.read_text(encoding="utf-8")
    assert text.count("kind: simulated") == 1
    cassette.write_text(text.replace("kind: simulated", "kind: real"), encoding="utf-8")
    source = textwrap.dedent(inspect.getsource(responses_request._assistant_items))
    kept = source.replace(
        'while items and items[-1]["type"]', 'while not items and items[-1]["type"]'
    )
    namespace: dict[str, Any] = {}
    exec(compile(kept, "<trailing-reasoning>", "exec"), vars(responses_request), namespace)
    monkeypatch.setattr(responses_request, "_assistant_items", namespace["_assistant_items"])

    result = await replay_scenario(
        load_scenario(folder / f"{SCENARIO}.yaml"), "openai-responses", cluster=cluster
    )

    assert not [p for p in result.problems if "answers-go-back" in p], result.problems


def test_a_cancel_during_reasoning_is_one_point() -> None:
    assert Cancel(after_thinking_chars=20).point == "after 20 characters of reasoning"
    with pytest.raises(ValueError, match="exactly one of"):
        Cancel(after_chars=3, after_thinking_chars=20)


def test_the_saved_history_goes_to_its_own_format_as_its_route_sends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`valid-history` builds the run's own format as its route does: its reasoning goes too.

    Built for the format's default route, the origin differs and every reasoning item
    is left out, so an item the builder breaks was never checked.
    """
    endpoint, model = "http://simulated-provider.invalid", "gpt-5-mini"
    route = parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "scenario-0",
                    "endpoint": endpoint,
                    "model": model,
                    "protocols": ["openai_responses"],
                    "api_key": "sk-route",
                }
            ]
        },
        source="test",
    ).routes[0]
    item_id, text = "rs_" + "ab" * 25, "I will say hello."
    payload = {
        "item_id": item_id,
        "encrypted_content": seal_reasoning(item_id, text, follows="message"),
        "summary": [text],
        "after_tool_calls": 0,
    }
    origin = route_origin("openai_responses", endpoint, model, "sk-route")
    answer = AssistantMessage(
        content="hello",
        thinking=(ThinkingPart(text=text, origin=origin, payload=json.dumps(payload)),),
    )
    run = PointRun(scenario="s", provider="openai-responses", point=None, transcript=None)
    run.history = (UserMessage(content="hi"), answer)
    run.route = route
    assert valid_history(run) == []

    real = responses_request._reasoning

    def altered(part: ThinkingPart, origin: str) -> Any:  # the planted defect
        replay = real(part, origin)
        if replay is None:
            return None
        item, after = replay
        return {**item, "encrypted_content": item["encrypted_content"][::-1]}, after

    monkeypatch.setattr(responses_request, "_reasoning", altered)
    refused = valid_history(run)
    assert len(refused) == 1 and "could not be verified" in refused[0], refused
    assert refused[0].startswith("openai-responses refuses the next turn")
    run.route = None  # the default route: the item is not sent, the defect not seen
    assert valid_history(run) == []
