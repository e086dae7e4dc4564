"""A caller's stream limit and the gateway's request limits, each failing the harness when broken.

The harness's gateway runs with a callers file (the agent is caller
`scenario`, `options.caller_streams`), so `caller-stream-limit` replays a turn
refused at the caller's limit and one admitted under it, and the sweep's
`released` checks the caller's slot after every point. The request limits
the README documents are sent at the limit and one past it
(`_request_limits`). Each test plants a defect of its class and shows what
the harness says.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from navagent.core import convert
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.limits._requests import request_limit_problems
from navagent.fixtures.harness.scenarios._model import Scenario
from navagent.gateway import callers, service
from navagent.gateway.server import Gateway
from tests.scenarios.test_fault_contract import _breaches, _sweep
from tests.scenarios.test_person_steps import plant

ROOT = Path(__file__).resolve().parents[2]
LIMIT = ROOT / "scenarios" / "caller-stream-limit.yaml"


async def _replay() -> list[str]:
    result = await replay_scenario(load_scenario(LIMIT), "openai", cluster=SimulatedCluster())
    return list(result.problems)


def test_busy_streams_over_the_callers_limit_is_refused_at_load() -> None:
    document: dict[str, Any] = {
        "id": "x",
        "description": "x",
        "options": {"caller_streams": 2},
        "turns": [{"user": "Hi.", "busy_streams": 3}],
    }
    with pytest.raises(ValidationError, match=r"turns\[0\]\.busy_streams: 3 is more than"):
        Scenario.model_validate(document)


async def test_the_committed_scenario_replays() -> None:
    assert await _replay() == []


async def test_a_caller_limit_counted_one_too_high_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Plants a defect: a caller is admitted with one stream more than its limit.
    plant(
        monkeypatch,
        callers,
        "admit_caller",
        "slots.try_acquire(limit, counter)",
        "slots.try_acquire(limit + 1, counter)",
        into=service,
    )
    problems = "\n".join(await _replay())
    assert "request 3 (POST /v1/chat/completions) is not in the cassette" in problems


async def test_a_refusal_that_does_not_name_the_caller_fails_the_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Plants a defect: the refusal no longer says whose limit it is.
    plant(monkeypatch, callers, "_at_limit", 'f"caller {name!r} is', 'f"a caller is')
    problems = "\n".join(await _replay())
    assert "turn 2: the user was not told \"caller 'scenario' is serving its limit" in problems


def test_a_caller_slot_never_given_back_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    # Plants a defect: a stream that ends in an error keeps its caller's slot.
    plant(
        monkeypatch,
        service.ChatService,
        "chat_stream",
        "        if lease is not None:\n            lease.release()",
        "        if lease is not None and stream_log.outcome == 'ok':\n            lease.release()",
    )
    found = _breaches(_sweep("anthropic", "reset@request2+1"))
    assert "stream slot(s) of caller 'scenario' still held" in found["released"]


def test_the_request_limits_hold() -> None:
    assert asyncio.run(request_limit_problems()) == []


@pytest.mark.parametrize(
    ("owner", "name", "value", "wanted"),
    [
        (convert, "MAX_ROUTING_HINT_CHARS", 257, "routing_hint length: a request one past"),
        (convert, "MAX_ROUTING_HINT_CHARS", 255, "routing_hint length: a request at the limit"),
    ],
)
def test_a_request_limit_off_by_one_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, value: int, wanted: str
) -> None:
    monkeypatch.setattr(owner, name, value)
    problems = asyncio.run(request_limit_problems())
    assert any(problem.startswith(wanted) for problem in problems), problems


@pytest.mark.parametrize(
    ("old", "new", "wanted"),
    [
        ("if request.max_tokens == 0:", "if request.max_tokens < 0:", "max_tokens: a request one"),
        ("not 0 <= value <= 2", "not 0 <= value < 2", "temperature, top: a request at the"),
        ("not 0 <= value <= 2", "not -1 <= value <= 2", "temperature, bottom: a request one"),
    ],
)
def test_a_request_check_off_by_one_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, old: str, new: str, wanted: str
) -> None:
    owner = {
        "max_tokens": "_max_tokens_from_proto",
        "temperature": "_temperature_from_proto",
    }
    function = next(name for key, name in owner.items() if wanted.startswith(key))
    plant(monkeypatch, convert, function, old, new)
    problems = asyncio.run(request_limit_problems())
    assert any(problem.startswith(wanted) for problem in problems), problems


@pytest.mark.parametrize(
    ("function", "old", "new", "wanted"),
    [
        # An unknown role sorted after "tool" read as a tool message: the refusal
        # no longer says what is wrong with the message.
        ("message_from_proto", 'if role == "tool":', 'if role >= "tool":', "unknown role"),
        # NaN in a call's arguments refused: the model's own call can no longer be
        # sent back, so the conversation is stuck.
        (
            "_json_problem",
            "parse_constant=None if constants_allowed else",
            "parse_constant=None if not constants_allowed else",
            "tool call arguments",
        ),
        # A tool message's missing call id let through.
        ("message_from_proto", "if not message.tool_call_id:", "if False:", "tool result without"),
        # Control characters in a routing hint let through (into log lines).
        (
            "_routing_hint_from_proto",
            "if not hint.isprintable():",
            "if False:",
            "routing_hint char",
        ),
    ],
)
def test_a_malformed_request_let_through_or_a_good_one_refused_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, function: str, old: str, new: str, wanted: str
) -> None:
    plant(monkeypatch, convert, function, old, new)
    problems = asyncio.run(request_limit_problems())
    assert any(problem.startswith(wanted) for problem in problems), problems


def test_a_request_size_limit_off_by_one_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    # Plants a defect: the gateway's gRPC receive limit one byte short of --max-request-bytes.
    plant(
        monkeypatch,
        Gateway,
        "start",
        '("grpc.max_receive_message_length", self.settings.max_request_bytes)',
        '("grpc.max_receive_message_length", self.settings.max_request_bytes - 1)',
    )
    problems = asyncio.run(request_limit_problems())
    assert any(p.startswith("request size (--max-request-bytes): a request at") for p in problems)


def test_a_refusal_that_keeps_the_gateways_slot_is_a_violation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Plants a defect: the gateway's slot is taken before the caller is admitted, and a
    # caller refused at its limit leaves it taken (only a refused turn takes this path).
    plant(
        monkeypatch,
        service.ChatService,
        "chat_stream",
        "        lease = admit_caller(stream_log.hint, self._slots)\n"
        "        if self._caller_store is not None:\n"
        "            await share_caller_lease(lease, self._caller_store)\n"
        "        slot = self._take_slot()\n",
        "        taken = self._take_slot()\n"
        "        lease = admit_caller(stream_log.hint, self._slots)\n"
        "        slot = taken\n",
    )
    found = _breaches(_sweep("openai", "http-500@request1", scenario=LIMIT))
    assert "1 stream slot(s) of the gateway still held" in found["released"]
