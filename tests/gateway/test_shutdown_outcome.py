"""At shutdown every stream still ends in one outcome the client sees, never an empty OK."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import httpx
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings
from tests.gateway.test_dispatch import route, table
from tests.gateway.test_reload import PacedProvider


class Context:
    """A servicer context whose client stays connected; writes of `error` events can fail."""

    def __init__(self, *, fail_error_writes: int) -> None:
        self.fail_error_writes = fail_error_writes
        self.written: list[str] = []
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    def set_trailing_metadata(self, _metadata: Any) -> None:
        pass

    async def write(self, message: pb.ChatStreamEvent) -> None:
        kind = message.WhichOneof("event") or ""
        if kind == "error" and self.fail_error_writes:
            # What gRPC does while a write the cancellation interrupted is still pending.
            self.fail_error_writes -= 1
            raise RuntimeError("grpc_call_start_batch: GRPC_CALL_ERROR_TOO_MANY_OPERATIONS")
        await asyncio.sleep(0)
        self.written.append(kind)

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return False

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise grpc.aio.AbortError()


@pytest.mark.parametrize("fail_error_writes", [0, 3, 10**6])
async def test_a_stream_cut_by_the_grace_period_ends_with_an_error_or_a_status(
    fail_error_writes: int,
) -> None:
    provider = PacedProvider(tokens=200, delay=0.01)
    gateway = Gateway(
        GatewaySettings.loopback(),
        table(route("a")),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)),
    )
    context = Context(fail_error_writes=fail_error_writes)
    request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hi")])
    stream = asyncio.create_task(gateway.service.chat_stream(request, context))  # type: ignore[arg-type]
    while len(context.written) < 3:
        await asyncio.sleep(0.01)
    gateway.service.cancel_all()  # the grace period is over
    try:
        await stream
    except grpc.aio.AbortError:
        pass
    if fail_error_writes > 100:  # never writable: a status, not an empty OK
        assert context.aborted is not None, "the stream ended OK with neither message nor error"
        assert context.aborted[0] == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in context.aborted[1]
    else:
        assert context.written[-1] == "error" and context.aborted is None


@pytest.mark.parametrize(
    ("hint", "messages"),
    [("no-such-hint", [pb.ChatMessage(role="user", content="hi")]), ("agent", [])],
    ids=["no-route", "invalid-argument"],
)
async def test_a_refused_call_is_logged_and_counted_before_the_client_hears_it(
    hint: str, messages: list[pb.ChatMessage], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client that scrapes the metrics right after its call must see it.
    gateway = Gateway(
        GatewaySettings.loopback(),
        table(route("a")),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(PacedProvider(tokens=1))),
    )
    order: list[str] = []
    monkeypatch.setattr(
        "navagent.gateway.service.metrics.record_finished",
        lambda facts, *, admitted: order.append(f"counted {facts.outcome}"),
    )
    monkeypatch.setattr("navagent.gateway.service.metrics.enabled", lambda: True)
    context = Context(fail_error_writes=0)
    original_abort = context.abort

    async def abort(code: grpc.StatusCode, details: str) -> None:
        order.append("status sent")
        await original_abort(code, details)

    context.abort = abort  # type: ignore[method-assign]
    request = pb.ChatStreamRequest(routing_hint=hint, messages=messages)
    with pytest.raises(grpc.aio.AbortError):
        await gateway.service.chat_stream(request, context)  # type: ignore[arg-type]
    assert len(order) == 2 and order[0].startswith("counted ") and order[1] == "status sent"
