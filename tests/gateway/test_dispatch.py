"""Upstream attempts, retries and failover, against an httpx MockTransport provider."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpx
import pytest

from navagent.core.events import (
    MessageComplete,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    TurnEnd,
)
from navagent.core.messages import ChatRequest, UserMessage
from navagent.gateway.dispatch import Dispatcher, NoRouteError, RetryPolicy, StreamRecord
from navagent.gateway.routes import RoutesError, RouteTable, parse_routes
from navagent.gateway.upstream import Timeouts, Upstream, parse_retry_after
from tests.gateway.provider_bodies import (
    anthropic_error_body,
    anthropic_error_event,
    anthropic_text,
    openai_error_body,
    openai_text,
    openai_tool_call,
    sse,
)

KEY = "sk-test-gateway-secret-0123456789"
REQUEST = ChatRequest(messages=(UserMessage(content="hello"),))

Reply = Callable[[httpx.Request], httpx.Response]


def route(name: str, protocol: str = "openai_chat_completions", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "routing_hint": "agent",
        "endpoint": f"http://{name}.provider.test/v1",
        "model": f"model-{name}",
        "protocols": [protocol],
        "api_key": KEY,
        **extra,
    }


def table(*routes: dict[str, Any]) -> RouteTable:
    return parse_routes({"routes": list(routes)}, source="test-routes")


async def body(
    chunks: Iterable[bytes],
    *,
    then: BaseException | None = None,
    delay: float = 0.0,
    closed: list[bool] | None = None,
) -> AsyncIterator[bytes]:
    try:
        for chunk in chunks:
            if delay:
                await asyncio.sleep(delay)
            yield chunk
        if then is not None:
            raise then
    finally:
        if closed is not None:
            closed.append(True)


def stream(chunks: Iterable[bytes], **kwargs: Any) -> Reply:
    return lambda _request: httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=body(chunks, **kwargs)
    )


def status(code: int, content: bytes = b"", **headers: str) -> Reply:
    return lambda _request: httpx.Response(code, headers=headers, content=content)


def refuse(_request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused")


class Provider:
    """Answers each request with the next scripted reply for its host."""

    def __init__(self, **replies: list[Reply]) -> None:
        self.replies = {f"{name}.provider.test": list(items) for name, items in replies.items()}
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies[request.url.host].pop(0)(request)

    def hosts(self) -> list[str]:
        return [request.url.host.split(".")[0] for request in self.requests]


class Harness:
    def __init__(self, routes: RouteTable, provider: Provider, **timeouts: float) -> None:
        self.sleeps: list[float] = []
        self.provider = provider

        async def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)

        client = httpx.AsyncClient(transport=httpx.MockTransport(provider))
        self.dispatcher = Dispatcher(
            routes,
            Upstream(client, timeouts=Timeouts(**timeouts)),
            policy=RetryPolicy(attempts_per_route=3),
            sleep=sleep,
            rng=random.Random(7),
        )

    async def run(
        self, request: ChatRequest = REQUEST, record: StreamRecord | None = None
    ) -> list[StreamEvent]:
        batches = [batch async for batch in self.dispatcher.stream(request, record=record)]
        assert all(batches), "a batch is never empty"
        return [event for batch in batches for event in batch]


def final_text(events: list[StreamEvent]) -> str:
    last = events[-1]
    assert isinstance(last, MessageComplete), last
    return last.message.content


async def test_openai_text_stream_reaches_the_client_in_order() -> None:
    provider = Provider(a=[stream(openai_text("Hel", "lo", " there"))])
    events = await Harness(table(route("a")), provider).run()
    # The first content leaves on its own; the chunks that were all there with
    # it go out merged, in order.
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo there"]
    assert isinstance(events[-2], TurnEnd) and events[-2].usage.input_tokens == 11
    assert final_text(events) == "Hello there"
    (sent,) = provider.requests
    assert str(sent.url) == "http://a.provider.test/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"


async def test_anthropic_route_uses_messages_api() -> None:
    provider = Provider(a=[stream(anthropic_text("Hi", " there"))])
    events = await Harness(table(route("a", "anthropic_messages")), provider).run()
    assert final_text(events) == "Hi there"
    (sent,) = provider.requests
    assert sent.url.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY


async def test_tool_call_stream_completes_with_arguments() -> None:
    provider = Provider(a=[stream(openai_tool_call("call_1", "sandbox_get", '{"na', 'me": "x"}'))])
    events = await Harness(table(route("a")), provider).run()
    last = events[-1]
    assert isinstance(last, MessageComplete)
    (call,) = last.message.tool_calls
    assert (call.id, call.name, call.parsed_arguments()) == ("call_1", "sandbox_get", {"name": "x"})


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503, 504, 529])
async def test_retryable_status_is_retried_then_succeeds(code: int) -> None:
    provider = Provider(a=[status(code, openai_error_body("try later")), stream(openai_text("ok"))])
    harness = Harness(table(route("a")), provider)
    record = StreamRecord()
    events = await harness.run(record=record)
    assert final_text(events) == "ok"
    assert len(provider.requests) == 2 and len(harness.sleeps) == 1
    assert 0 <= harness.sleeps[0] <= RetryPolicy().base_delay_s
    assert record.attempts == 2


async def test_retry_after_is_honoured() -> None:
    provider = Provider(
        a=[
            status(
                429, openai_error_body("slow down", "rate_limit_exceeded"), **{"retry-after": "7"}
            ),
            stream(openai_text("ok")),
        ]
    )
    harness = Harness(table(route("a")), provider)
    await harness.run()
    assert harness.sleeps == [7.0]


async def test_retry_after_beyond_the_limit_fails_over_without_waiting() -> None:
    provider = Provider(
        a=[status(429, openai_error_body("quota"), **{"retry-after": "3600"})],
        b=[stream(openai_text("from b"))],
    )
    harness = Harness(table(route("a"), route("b")), provider)
    events = await harness.run()
    assert final_text(events) == "from b"
    assert harness.sleeps == [] and provider.hosts() == ["a", "b"]


async def test_exhausted_retries_end_in_one_error_event() -> None:
    provider = Provider(a=[status(503, openai_error_body("Service Unavailable"))] * 3)
    harness = Harness(table(route("a")), provider)
    events = await harness.run()
    assert len(events) == 1 and isinstance(events[0], StreamError)
    error = events[0].error
    assert (error.status_code, error.code, error.retryable) == (503, "upstream_unavailable", True)
    assert "Service Unavailable" in error.message
    assert len(provider.requests) == 3 and len(harness.sleeps) == 2


async def test_backoff_grows_exponentially_with_jitter() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0)
    rng = random.Random(1)
    for attempt, cap in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        delays = [policy.delay(attempt, retry_after_s=None, rng=rng) for _ in range(200)]
        assert all(0 <= d <= cap for d in delays)
        assert max(delays) > cap * 0.8  # jitter spreads over the whole window


async def test_auth_error_is_not_retried_and_fails_over() -> None:
    provider = Provider(
        a=[status(401, anthropic_error_body("invalid x-api-key", "authentication_error"))],
        b=[stream(anthropic_text("b works"))],
    )
    harness = Harness(
        table(route("a", "anthropic_messages"), route("b", "anthropic_messages")), provider
    )
    events = await harness.run()
    assert final_text(events) == "b works"
    assert provider.hosts() == ["a", "b"] and harness.sleeps == []


async def test_single_route_auth_error_is_reported_with_status() -> None:
    provider = Provider(
        a=[status(401, anthropic_error_body("invalid x-api-key", "authentication_error"))]
    )
    events = await Harness(table(route("a", "anthropic_messages")), provider).run()
    (event,) = events
    assert isinstance(event, StreamError)
    assert (event.error.status_code, event.error.code, event.error.retryable) == (
        401,
        "auth",
        False,
    )
    assert "invalid x-api-key" in event.error.message


async def test_provider_echoing_the_key_never_leaks_it() -> None:
    provider = Provider(
        a=[
            status(
                401,
                openai_error_body(f"Incorrect API key provided: {KEY}.", "invalid_request_error"),
            )
        ]
    )
    events = await Harness(table(route("a")), provider).run()
    (event,) = events
    assert isinstance(event, StreamError)
    assert KEY not in event.error.message and "Incorrect API key" in event.error.message


async def test_connection_refused_is_retried() -> None:
    provider = Provider(a=[refuse, stream(openai_text("up"))])
    events = await Harness(table(route("a")), provider).run()
    assert final_text(events) == "up"


async def test_failover_after_retries_on_first_route() -> None:
    provider = Provider(a=[status(500)] * 3, b=[stream(openai_text("b"))])
    record = StreamRecord()
    events = await Harness(table(route("a"), route("b")), provider).run(record=record)
    assert final_text(events) == "b"
    assert provider.hosts() == ["a", "a", "a", "b"]
    assert provider.requests[-1].content.find(b'"model-b"') != -1
    assert (record.route, record.model, record.attempts) == ("b", "model-b", 4)
    # What the metrics count: every attempt by status, the two retries, the one failover.
    assert record.upstream == [
        ("attempt", "a", "500"),
        ("retry", "a", "500"),
        ("attempt", "a", "500"),
        ("retry", "a", "500"),
        ("attempt", "a", "500"),
        ("failover", "a", "500"),
        ("attempt", "b", "200"),
    ]


async def test_mid_stream_error_after_content_ends_stream_without_retry() -> None:
    chunks = anthropic_text("partial", stop=False)[:4] + [anthropic_error_event()]
    provider = Provider(a=[stream(chunks)])
    events = await Harness(table(route("a", "anthropic_messages")), provider).run()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["partial"]
    assert isinstance(events[-1], StreamError)
    assert events[-1].error.code == "overloaded" and "Overloaded" in events[-1].error.message
    assert len(provider.requests) == 1


async def test_mid_stream_error_before_content_is_retried() -> None:
    early_error = [anthropic_text("x")[0], anthropic_error_event()]
    provider = Provider(a=[stream(early_error), stream(anthropic_text("second try"))])
    events = await Harness(table(route("a", "anthropic_messages")), provider).run()
    assert final_text(events) == "second try"
    assert len(provider.requests) == 2


async def test_truncated_stream_after_content_is_an_error_not_a_success() -> None:
    # The role chunk and the text, no finish reason.
    provider = Provider(a=[stream(openai_text("cut", "off", done=False)[:3])])
    events = await Harness(table(route("a")), provider).run()
    assert isinstance(events[-1], StreamError)
    assert "[DONE]" in events[-1].error.message
    assert not any(isinstance(e, MessageComplete) for e in events)


async def test_stream_closed_after_its_finish_reason_without_done_is_complete() -> None:
    # Issue 23: TGI 2.0 ends every stream after the finish chunk, with no [DONE].
    provider = Provider(a=[stream(openai_text("all", " there", done=False)[:4])])
    events = await Harness(table(route("a")), provider).run()
    assert isinstance(events[-1], MessageComplete), events[-1]
    assert events[-1].message.content == "all there"
    assert len(provider.requests) == 1


async def test_route_options_reach_the_translator_and_the_request_builder() -> None:
    # Issue 23: `think_tags: split` reads the stream, `reasoning_echo` shapes the request.
    provider = Provider(
        a=[stream(openai_text("<think>plan", " it</think>\n\n", "Done.")) for _ in range(2)]
    )
    options = {"think_tags": "split", "reasoning_echo": "reasoning_content"}
    harness = Harness(table(route("a", **options)), provider)
    events = await harness.run()
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "plan it"
    assert not any("<think>" in e.text for e in events if isinstance(e, TextDelta))
    first = events[-1]
    assert isinstance(first, MessageComplete) and first.message.content == "Done."
    follow_up = ChatRequest(messages=(*REQUEST.messages, first.message, UserMessage(content="ok")))
    await harness.run(follow_up)
    sent = json.loads(provider.requests[1].content)["messages"]
    assert sent[-2] == {"role": "assistant", "content": "Done.", "reasoning_content": "plan it"}


async def test_connection_reset_mid_stream_is_an_error() -> None:
    provider = Provider(
        a=[stream(openai_text("one", "two")[:2], then=httpx.RemoteProtocolError("peer closed"))]
    )
    events = await Harness(table(route("a")), provider).run()
    assert isinstance(events[-1], StreamError)
    assert events[-1].error.code == "upstream_unavailable"
    assert "mid-stream" in events[-1].error.message
    assert len(provider.requests) == 1


async def test_invalid_json_event_is_an_error() -> None:
    provider = Provider(a=[stream([openai_text("ok")[0], sse("{not json")])])
    events = await Harness(table(route("a")), provider).run()
    assert isinstance(events[-1], StreamError)


async def test_no_route_names_the_hint() -> None:
    harness = Harness(table(route("a")), Provider())
    with pytest.raises(NoRouteError, match="'other'"):
        await harness.run(ChatRequest(messages=REQUEST.messages, routing_hint="other"))


# Issue 9: the first-token budget is the stream's, not each attempt's, so a
# stalling provider cannot make the client wait attempts x timeout.
async def test_first_token_budget_covers_every_attempt() -> None:
    slow = stream(openai_text("late"), delay=0.3)
    provider = Provider(a=[slow, slow, slow], b=[slow])
    harness = Harness(table(route("a"), route("b")), provider, first_token_s=0.1)
    started = asyncio.get_running_loop().time()
    events = await harness.run()
    elapsed = asyncio.get_running_loop().time() - started
    (event,) = events
    assert isinstance(event, StreamError)
    assert event.error.code == "timeout" and "0.1s" in event.error.message
    assert provider.hosts() == ["a"]
    assert elapsed < 0.25


async def test_retries_within_the_first_token_budget() -> None:
    provider = Provider(a=[status(503), stream(openai_text("ok"))])
    harness = Harness(table(route("a")), provider, first_token_s=5)
    events = await harness.run()
    assert final_text(events) == "ok" and len(provider.requests) == 2


async def test_cancelled_consumer_closes_the_upstream_response() -> None:
    closed: list[bool] = []
    never_ending = stream(openai_text("a") * 1000, delay=0.05, closed=closed)
    harness = Harness(table(route("a")), Provider(a=[never_ending]))
    seen = asyncio.Event()

    async def consume() -> None:
        async for _ in harness.dispatcher.stream(REQUEST):
            seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(seen.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == [True]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", 5.0),
        ("0.5", 0.5),
        ("-3", 0.0),
        ("", None),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),
    ],
)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    now = 1445412480.0  # 07:28:00 that day
    assert parse_retry_after({"retry-after": value} if value else {}, now=now) == expected


# Issue 9: time the consumer spends away (a slow client, back-pressure) is not
# the provider's silence; only waiting on the provider counts as idle.
async def test_a_slow_consumer_is_not_an_idle_provider() -> None:
    paced = stream(openai_text("a", "b", "c", "d"), delay=0.02)
    harness = Harness(table(route("a")), Provider(a=[paced]), idle_s=0.2, first_token_s=5)
    events: list[StreamEvent] = []
    async for batch in harness.dispatcher.stream(REQUEST):
        events += batch
        await asyncio.sleep(0.5)  # the client is slow: far longer than the idle timeout
    assert final_text(events) == "abcd"


async def test_an_endpoints_login_goes_as_basic_auth_never_in_the_url_or_over_the_key() -> None:
    # A proxy's login in front of Anthropic: `x-api-key` carries the key and
    # `Authorization: Basic` the login; the request line carries neither.
    provider = Provider(a=[stream(anthropic_text("hi"))])
    login = route("a", "anthropic_messages")
    login["endpoint"] = "http://ops:pa%40ss@a.provider.test"
    events = await Harness(table(login), provider).run()
    assert final_text(events) == "hi"
    (sent,) = provider.requests
    assert sent.url.userinfo == b"" and "ops" not in str(sent.url)
    assert sent.headers["authorization"] == "Basic " + base64.b64encode(b"ops:pa@ss").decode()
    assert sent.headers["x-api-key"] == KEY


def test_an_endpoints_login_is_refused_where_the_key_is_the_authorization_header() -> None:
    # httpx would have sent the login as Basic auth in place of the Bearer key.
    login = route("a")
    login["endpoint"] = "http://ops:secret-pass@a.provider.test/v1"
    with pytest.raises(RoutesError) as raised:
        table(login)
    assert "field 'endpoint'" in str(raised.value) and "Basic auth" in str(raised.value)
    assert "openai_chat_completions" in str(raised.value)
    assert "secret-pass" not in str(raised.value)
