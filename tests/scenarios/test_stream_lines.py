"""A replay reads only its own streams' lines, even when one ends after the conversation."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from navagent.fixtures.harness.faults._stream_lines import (
    GATEWAY_LOGGER,
    StreamLines,
    streams_ended,
)
from navagent.gateway.service import ChatService


class _Gateway:
    """Just what `streams_ended` reads: a real `ChatService`'s count of streams in flight."""

    def __init__(self) -> None:
        self.service: Any = ChatService.__new__(ChatService)
        self.service._active = set()


def _line(route: str) -> None:
    args = ("id", "hint", "caller", route, "protocol", "model", 1, 0.1, "-", 1, 1, "ok")
    logging.getLogger(GATEWAY_LOGGER).info(
        "stream id=%s hint=%s caller=%s route=%s protocol=%s model=%s attempts=%d "
        "duration=%.3fs ttft=%s tokens_in=%s tokens_out=%s outcome=%s",
        *args,
    )


async def test_a_stream_that_ends_after_the_conversation_logs_into_its_own_replay() -> None:
    gateway = _Gateway()

    async def cancelled_stream() -> None:  # winds down after the client moved on
        await asyncio.sleep(0.2)
        gateway.service._active.discard(task)
        _line("scenario-3#4")

    task = asyncio.create_task(cancelled_stream())
    gateway.service._active.add(task)
    with StreamLines().listening() as first:
        await streams_ended(gateway)  # type: ignore[arg-type]
    with StreamLines().listening() as second:
        _line("scenario-0#1")
    assert [served.route for served in first.served] == ["scenario-3#4"]
    assert [served.route for served in second.served] == ["scenario-0#1"]
