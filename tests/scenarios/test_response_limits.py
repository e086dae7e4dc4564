"""The harness's response-limit check (`limits._responses`) fails on a defect of each row it checks.

Each test plants one: the event limit a thousand times smaller, one byte
smaller or larger, and a page answered with status 200 reported as the
provider being unavailable; the check names the row.
"""

from __future__ import annotations

import asyncio

import pytest

from navagent.fixtures.harness.limits import _responses
from navagent.fixtures.harness.limits._responses import EVENT_LIMIT_BYTES, response_limit_problems
from navagent.gateway import upstream


def _problems() -> list[str]:
    return asyncio.run(response_limit_problems())


def test_todays_gateway_keeps_every_response_limit() -> None:
    assert _problems() == []


@pytest.mark.parametrize(
    ("limit", "row"),
    [
        (8 * 1024 + 1024, "one SSE event at 8 MiB: the answer was refused"),
        (EVENT_LIMIT_BYTES - 1, "one SSE event at 8 MiB: the answer was refused"),
        (EVENT_LIMIT_BYTES + 1, "one SSE event one byte over 8 MiB: the call ended in message"),
    ],
)
def test_an_event_limit_other_than_the_documented_one_fails(
    monkeypatch: pytest.MonkeyPatch, limit: int, row: str
) -> None:
    monkeypatch.setattr(upstream, "MAX_EVENT_BYTES", limit)
    problems = _problems()
    assert any(problem.startswith(row) for problem in problems), problems


def test_a_page_with_status_200_reported_as_unavailable_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = upstream._not_a_stream

    async def unavailable(*args: object) -> upstream.UpstreamFailure:
        failure = await real(*args)  # type: ignore[arg-type]
        error = failure.error.model_copy(update={"code": "upstream_unavailable"})
        return upstream.UpstreamFailure(error)

    monkeypatch.setattr(upstream, "_not_a_stream", unavailable)
    (problem,) = _problems()
    assert problem.startswith("HTTP 200 that is not an event stream: the call ended in error")
    assert "expected the error invalid_request saying 'not an event stream'" in problem


def test_the_cases_are_the_readmes_rows() -> None:
    names = [case.name for case in _responses.response_cases()]
    assert names == [
        "one SSE event at 8 MiB",
        "one SSE event one byte over 8 MiB",
        "HTTP 200 that is not an event stream",
    ]
