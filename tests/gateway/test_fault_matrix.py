"""The gateway's fault matrix (issue 9): every failure class, every protocol, real sockets.

Each case runs the real server over a socket against `FaultUpstream`, a
provider that misbehaves at the byte level, and asserts: exactly one terminal
outcome with its code, a wall-time bound, the gateway still serving the next
request, no traceback in its log at the default level, and the routes' key in
no byte that leaves the process (events, statuses, trailing metadata, logs at
every level).
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import socket
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.core.redaction import RedactingFormatter
from navagent.core.wire_formats import ROUTE_PROTOCOLS, WIRE_FORMATS
from navagent.fixtures.provider.wire._kit import kit_for
from navagent.gateway._network import upstream_transport
from navagent.gateway.routes import CHAT_PROTOCOLS, RouteTable, parse_routes
from navagent.gateway.server import Gateway
from navagent.gateway.service import StreamLimits
from navagent.gateway.settings import GatewaySettings
from tests.core.fake_programs import wait_until
from tests.gateway.fault_upstream import (
    FIREHOSE_WORDS,
    SECRET,
    STACKED_GZIP_BOMB,
    FaultUpstream,
    fault_upstream,
)

PROTOCOLS = ROUTE_PROTOCOLS
HELLO = [pb.ChatMessage(role="user", content="hello")]
TIMEOUTS = {
    "first_token_timeout_s": 1.0,
    "idle_timeout_s": 1.0,
    "max_stream_duration_s": 3.0,
    "attempts_per_route": 1,
    "grace_period_s": 0.0,
}


@dataclass
class Outcome:
    """Everything that left the gateway for one call."""

    events: list[pb.ChatStreamEvent]
    status: grpc.StatusCode
    details: str
    trailers: tuple[tuple[str, str | bytes], ...]
    seconds: float

    @property
    def terminal(self) -> pb.ChatStreamEvent:
        terminals = [e for e in self.events if e.WhichOneof("event") in ("message", "error")]
        assert len(terminals) == 1, f"expected one terminal event, got {self.kinds()}"
        assert self.events[-1] is terminals[0], "the terminal event must be last"
        return terminals[0]

    def kinds(self) -> list[str]:
        return [str(e.WhichOneof("event")) for e in self.events]

    def wire(self) -> bytes:
        parts = [e.SerializeToString() for e in self.events] + [self.details.encode()]
        parts += [str(value).encode() for _key, value in self.trailers]
        return b"".join(parts)


class Logs:
    """What the gateway logged, through the redacting formatter, at INFO and at DEBUG."""

    def __init__(self) -> None:
        self.info, self.debug = io.StringIO(), io.StringIO()
        self._handlers = []
        for stream, level in ((self.info, logging.INFO), (self.debug, logging.DEBUG)):
            handler = logging.StreamHandler(stream)
            handler.setLevel(level)
            handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
            self._handlers.append(handler)

    @property
    def stream_lines(self) -> list[str]:
        return [line for line in self.info.getvalue().splitlines() if " stream id=" in line]

    def __enter__(self) -> Logs:
        root = logging.getLogger()
        self._level = root.level
        root.setLevel(logging.DEBUG)
        for handler in self._handlers:
            root.addHandler(handler)
        return self

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        for handler in self._handlers:
            root.removeHandler(handler)
        root.setLevel(self._level)


@pytest.fixture
def logs() -> Iterator[Logs]:
    with Logs() as captured:
        yield captured


@pytest.fixture
async def upstream() -> AsyncIterator[FaultUpstream]:
    async with fault_upstream() as server:
        yield server


def routes(upstream: FaultUpstream, protocol: str, fault: str) -> RouteTable:
    """Hint `case` goes to the fault, hint `ok` to a healthy provider; both with the key."""
    document = {
        "routes": [
            {
                "name": f"faulty-{fault}",
                "routing_hint": "case",
                "endpoint": upstream.endpoint(fault),
                "model": "m",
                "protocols": [protocol],
                "api_key_env": "FAULT_KEY",
            },
            {
                "name": "healthy",
                "routing_hint": "ok",
                "endpoint": upstream.endpoint("ok"),
                "model": "m",
                "protocols": [protocol],
                "api_key": SECRET,
            },
        ]
    }
    # The key as a Kubernetes secret made from a file holds it: with a newline.
    return parse_routes(document, source="routes.yaml", environ={"FAULT_KEY": SECRET + "\n"})


@pytest.fixture
async def gateway_for(upstream: FaultUpstream) -> AsyncIterator[Any]:
    running: list[Gateway] = []

    async def start(protocol: str, fault: str = "ok", **settings: Any) -> Gateway:
        gateway = Gateway(
            GatewaySettings.loopback(**{**TIMEOUTS, **settings}), routes(upstream, protocol, fault)
        )
        await gateway.start()
        running.append(gateway)
        return gateway

    yield start
    for gateway in running:
        await gateway.stop(grace_s=0)


async def call(
    gateway: Gateway, hint: str = "case", request: pb.ChatStreamRequest | None = None
) -> Outcome:
    request = request or pb.ChatStreamRequest(messages=HELLO, routing_hint=hint)
    started = time.monotonic()
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        rpc = chat_pb2_grpc.ChatStub(channel).ChatStream(request)
        events: list[pb.ChatStreamEvent] = []
        try:
            async for event in rpc:
                events.append(event)
        except grpc.aio.AioRpcError:
            pass
        status = await rpc.code()
        details = await rpc.details() or ""
        trailers = tuple(await rpc.trailing_metadata() or ())
    return Outcome(events, status, details, trailers, time.monotonic() - started)


@dataclass(frozen=True)
class Case:
    fault: str
    code: int
    """pb.ErrorCode, OK for a final message, or KIT: the format's kit says (`error_event_code`)."""
    within_s: float
    says: str = ""
    content_first: bool = False
    """True when a content delta must precede the error (the failure came mid-stream)."""
    settings: tuple[tuple[str, Any], ...] = ()


OK = -1
KIT = -2
CASES = [
    Case("ok", OK, 2.0),
    # ~11 MB as fast as the socket takes it: the answer must arrive whole, however
    # slow a loaded machine makes it, so the stream's own limit is not what this tests.
    Case("firehose", OK, 15.0, settings=(("max_stream_duration_s", 12.0),)),
    Case("stall_before_headers", pb.ERROR_CODE_TIMEOUT, 2.5, "no output within 1s"),
    Case("stall_after_headers", pb.ERROR_CODE_TIMEOUT, 2.5, "no output within 1s"),
    Case("keepalive_only", pb.ERROR_CODE_TIMEOUT, 2.5, "no output within 1s"),
    Case(
        "keepalive_after_first_token",
        pb.ERROR_CODE_TIMEOUT,
        2.5,
        "sent nothing for 1s",
        content_first=True,
    ),
    # The first tick comes at once; a loaded machine may take longer than the matrix's
    # 1 s first-token budget to pass it on, and this case is about the 3 s limit.
    Case(
        "trickle_forever",
        pb.ERROR_CODE_TIMEOUT,
        4.5,
        "maximum duration of 3s",
        True,
        settings=(("first_token_timeout_s", 2.5),),
    ),
    Case("json_200", pb.ERROR_CODE_INVALID_REQUEST, 2.0, "not an event stream"),
    Case("bad_gzip", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "could not be decoded"),
    Case("stacked_gzip", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "encoded 2 times over"),
    Case("unknown_encoding", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "'br' is not one"),
    Case("gzip_bomb", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 4.0, "larger than 8 MiB"),
    Case("reset_before_headers", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "before it answered"),
    Case("reset_mid_stream", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "mid-stream", True),
    Case(
        "unauthorized_echoing_key",
        pb.ERROR_CODE_AUTH,
        2.0,
        "refused the API key of route faulty-unauthorized_echoing_key (api_key_env FAULT_KEY)",
    ),
    Case("rate_limited_long", pb.ERROR_CODE_RATE_LIMITED, 2.0, "rate limit"),
    # The format's own mid-stream failure (OpenAI server_error, Anthropic overloaded_error, ...).
    Case("error_event_mid_stream", KIT, 2.0, "verloaded", True),
    Case("invalid_json", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "not valid JSON"),
    Case("truncated", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 2.0, "ended before", True),
    Case("oversized_event", pb.ERROR_CODE_UPSTREAM_UNAVAILABLE, 4.0, "larger than 8 MiB"),
    Case(
        "giant_delta",
        pb.ERROR_CODE_INVALID_REQUEST,
        6.0,
        "per message (--max-message-bytes)",
        True,
        (("max_message_bytes", 2**20),),
    ),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", CASES, ids=[case.fault for case in CASES])
async def test_fault_ends_in_one_clear_outcome(
    case: Case, protocol: str, gateway_for: Any, upstream: FaultUpstream, logs: Logs
) -> None:
    gateway = await gateway_for(protocol, case.fault, **dict(case.settings))
    outcome = await call(gateway)

    assert outcome.status == grpc.StatusCode.OK, outcome.details
    terminal = outcome.terminal
    row = next(row for row in WIRE_FORMATS.values() if row.protocol == protocol)
    code = case.code
    if code == KIT:
        code = pb.ErrorCode.Value(f"ERROR_CODE_{kit_for(row.id).error_event_code.upper()}")
    if code == OK:
        assert terminal.WhichOneof("event") == "message"
    else:
        assert terminal.WhichOneof("event") == "error", outcome.kinds()
        assert terminal.error.code == code, terminal.error
        assert case.says in terminal.error.message
    deltas = [e for e in outcome.events if e.WhichOneof("event") == "content_delta"]
    assert bool(deltas) == (case.content_first or code == OK)
    assert outcome.seconds < case.within_s
    limit = gateway.settings.max_message_bytes
    assert all(event.ByteSize() <= limit for event in outcome.events)

    # The key travelled stripped, and never came back out.
    (request, *_) = [c for c in upstream.connections if c.fault == case.fault]
    assert request.headers[row.auth_header] in (SECRET, f"Bearer {SECRET}")
    assert SECRET.encode() not in outcome.wire()

    # Still serving, and the log is one clean line per stream.
    follow_up = await call(gateway, "ok")
    assert follow_up.terminal.WhichOneof("event") == "message"
    assert SECRET not in logs.debug.getvalue()
    assert "Traceback" not in logs.info.getvalue()
    outcomes = [line.rsplit("outcome=", 1)[1] for line in logs.stream_lines]
    name = "OK" if code == OK else pb.ErrorCode.Name(code)  # type: ignore[arg-type]
    expected = "ok" if code == OK else f"error:{name.removeprefix('ERROR_CODE_').lower()}"
    assert outcomes == [expected, "ok"]


def test_the_stacked_bomb_is_what_it_claims() -> None:
    inner = zlib.decompress(STACKED_GZIP_BOMB, wbits=zlib.MAX_WBITS | 16)
    assert len(STACKED_GZIP_BOMB) == 980
    assert int.from_bytes(inner[-4:], "little") == 2**29  # ISIZE: 512 MiB
    assert zlib.decompressobj(wbits=zlib.MAX_WBITS | 16).decompress(inner, 2**20) == bytes(2**20)


@pytest.mark.parametrize("fault", ["stacked_gzip", "gzip_bomb"])
async def test_a_compression_bomb_is_decoded_no_further_than_the_event_cap(
    fault: str, gateway_for: Any
) -> None:
    """Memory is bounded on decoded bytes: the cap holds before anything is inflated past it."""
    gateway = await gateway_for("openai_chat_completions", fault)
    tracemalloc.start()
    try:
        outcome = await call(gateway)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.terminal.error.code == pb.ERROR_CODE_UPSTREAM_UNAVAILABLE
    # The 8 MiB event cap, the decoder's line buffer growing to it, and one piece:
    # far below the 128 MiB and 512 MiB the bodies inflate to.
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.0f} MiB"


async def test_sixteen_mib_of_empty_data_lines_meet_the_event_cap(gateway_for: Any) -> None:
    # An empty `data:` line holds no data, but it is a line of the pending event.
    settings = {"first_token_timeout_s": 8.0, "max_stream_duration_s": 9.0}
    gateway = await gateway_for("openai_chat_completions", "empty_data_lines", **settings)
    outcome = await call(gateway)
    assert outcome.terminal.error.code == pb.ERROR_CODE_UPSTREAM_UNAVAILABLE
    assert "larger than 8 MiB" in outcome.terminal.error.message


async def test_giant_delta_reaches_the_client_split_and_whole(gateway_for: Any) -> None:
    gateway = await gateway_for("openai_chat_completions", "giant_delta")
    outcome = await call(gateway)
    text = "".join(e.content_delta.text for e in outcome.events if e.HasField("content_delta"))
    assert text == "y" * 3_000_000 and len(outcome.kinds()) > 2  # split, not one message
    assert outcome.terminal.message.content == text


async def test_rate_limit_message_is_never_cut_inside_a_url(gateway_for: Any) -> None:
    gateway = await gateway_for("anthropic_messages", "rate_limited_long")
    message = (await call(gateway)).terminal.error.message
    assert message.endswith("…")
    for url in re.findall(r"https?://\S+", message):
        assert url.rstrip(".") in (
            "https://docs.anthropic.com/en/api/rate-limits",
            "https://www.anthropic.com/contact-sales",
        )


async def test_the_key_at_the_cut_leaks_no_prefix(gateway_for: Any) -> None:
    gateway = await gateway_for("openai_chat_completions", "unauthorized_echoing_key")
    message = (await call(gateway)).terminal.error.message
    for length in range(6, len(SECRET) + 1):
        assert SECRET[:length] not in message


# --- client faults ---------------------------------------------------------


async def test_client_cancel_closes_the_upstream_and_logs_cancelled(
    gateway_for: Any, upstream: FaultUpstream, logs: Logs
) -> None:
    gateway = await gateway_for("anthropic_messages", "trickle_forever")
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        rpc = chat_pb2_grpc.ChatStub(channel).ChatStream(
            pb.ChatStreamRequest(messages=HELLO, routing_hint="case")
        )
        async for event in rpc:
            if event.HasField("content_delta"):
                break
        rpc.cancel()
    (connection,) = upstream.connections
    await asyncio.wait_for(connection.hung_up.wait(), 2.0)
    for _ in range(100):
        if logs.stream_lines:
            break
        await asyncio.sleep(0.02)
    assert logs.stream_lines[0].endswith("outcome=cancelled")
    assert "tokens_in=- tokens_out=-" in logs.stream_lines[0]


async def test_a_client_closing_right_after_the_final_message_logs_ok(
    gateway_for: Any, logs: Logs
) -> None:
    gateway = await gateway_for("openai_chat_completions")
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        for _ in range(10):
            rpc = chat_pb2_grpc.ChatStub(channel).ChatStream(
                pb.ChatStreamRequest(messages=HELLO, routing_hint="ok")
            )
            async for event in rpc:
                if event.HasField("message"):
                    rpc.cancel()  # hang up the moment the answer is complete
                    break
    await wait_until(lambda: len(logs.stream_lines) >= 10)
    await asyncio.sleep(0.1)  # a late eleventh line would show here
    assert [line.rsplit("outcome=", 1)[1] for line in logs.stream_lines] == ["ok"] * 10


async def test_a_slow_client_pushes_back_on_the_provider(upstream: FaultUpstream) -> None:
    # Small buffers everywhere (kernel and the gateway's transport), so a few
    # hundred KB prove the point. The bound is the transport's: a read left
    # waiting between batches (BodyChunks) keeps its socket readable, and the
    # gateway's transport stops at `max_buffered` (httpx's anyio one would not).
    small = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)]
    transport = upstream_transport(httpx.Limits(), max_buffered=16_384, socket_options=small)
    client = httpx.AsyncClient(transport=transport)
    gateway = Gateway(
        GatewaySettings.loopback(**{**TIMEOUTS, "max_stream_duration_s": 60.0}),
        routes(upstream, "openai_chat_completions", "firehose"),
        http_client=client,
    )
    await gateway.start()
    try:
        await read_slowly(gateway, upstream)
    finally:
        await gateway.stop(grace_s=0)
        await client.aclose()


async def settled(read: Callable[[], int], *, quiet_s: float = 0.5, within_s: float = 20.0) -> int:
    """`read()` once it stayed the same for `quiet_s`; fails if still changing after `within_s`.

    Buffers fill at the machine's pace: a loaded one takes longer to reach
    the point where nothing moves, but a stream that is not held back never does.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    value = read()
    while True:
        await asyncio.sleep(quiet_s)
        now = read()
        if now == value:
            return value
        assert loop.time() < deadline, f"still moving after {within_s} s: {value} -> {now}"
        value = now


async def read_slowly(gateway: Gateway, upstream: FaultUpstream) -> None:
    # No BDP probing: the client's HTTP/2 window stays at its 64 KiB default.
    options = [("grpc.http2.bdp_probe", 0)]
    async with grpc.aio.insecure_channel(gateway.address, options=options) as channel:
        rpc = chat_pb2_grpc.ChatStub(channel).ChatStream(
            pb.ChatStreamRequest(messages=HELLO, routing_hint="case")
        )
        stream = rpc.__aiter__()
        first = await anext(stream)  # then the client stops reading
        (connection,) = upstream.connections
        # The provider is blocked: the gateway stopped reading, and TCP pushed back.
        held = await settled(lambda: connection.bytes_sent)
        events = [first] + [event async for event in stream]
    assert events[-1].HasField("message"), events[-1]
    text = "".join(e.content_delta.text for e in events if e.HasField("content_delta"))
    assert text == "word " * FIREHOSE_WORDS and events[-1].message.content == text
    total = connection.bytes_sent
    # Without back-pressure the gateway reads the whole answer while the client sleeps.
    assert held < total / 2, (held, total)


# --- bad requests: a status naming the problem -------------------------------


def tool_schema(schema: str) -> pb.ChatStreamRequest:
    return pb.ChatStreamRequest(
        messages=HELLO, routing_hint="ok", tools=[pb.Tool(name="t", parameters_schema=schema)]
    )


BAD_REQUESTS = {
    "nan-temperature": (
        pb.ChatStreamRequest(messages=HELLO, temperature=float("nan")),
        "temperature",
    ),
    "inf-temperature": (
        pb.ChatStreamRequest(messages=HELLO, temperature=float("inf")),
        "temperature",
    ),
    "nan-schema": (tool_schema('{"type": "object", "minimum": NaN}'), "NaN"),
    "surrogate-schema": (tool_schema('{"description": "\\udc80"}'), "surrogate"),
    "surrogate-arguments": (
        pb.ChatStreamRequest(
            messages=[
                *HELLO,
                pb.ChatMessage(
                    role="assistant",
                    tool_calls=[pb.ToolCall(id="c1", name="t", arguments='{"a": "\\ud800"}')],
                ),
                pb.ChatMessage(role="tool", tool_call_id="c1", content="done"),
            ]
        ),
        "messages[1].tool_calls[0]",
    ),
    "huge-hint": (pb.ChatStreamRequest(messages=HELLO, routing_hint="h" * 60_000), "routing_hint"),
    "newline-hint": (
        pb.ChatStreamRequest(messages=HELLO, routing_hint="x\nINFO forged: line"),
        "routing_hint",
    ),
    "no-messages": (pb.ChatStreamRequest(), "messages"),
}


@pytest.mark.parametrize(("request_", "names"), BAD_REQUESTS.values(), ids=list(BAD_REQUESTS))
async def test_bad_request_is_invalid_argument_naming_the_field(
    request_: pb.ChatStreamRequest, names: str, gateway_for: Any, logs: Logs
) -> None:
    gateway = await gateway_for("openai_chat_completions")
    outcome = await call(gateway, request=request_)
    assert outcome.status == grpc.StatusCode.INVALID_ARGUMENT
    assert names in outcome.details and len(outcome.details) <= 1024
    assert not outcome.events
    assert not any(line.startswith("INFO forged") for line in logs.info.getvalue().splitlines())
    assert all(len(line) < 1000 for line in logs.info.getvalue().splitlines())
    assert (await call(gateway, "ok")).terminal.WhichOneof("event") == "message"


async def test_corrupt_protobuf_is_invalid_argument(gateway_for: Any) -> None:
    gateway = await gateway_for("openai_chat_completions")
    # Field 1 (messages) holding a message whose field 2 (content) is not UTF-8.
    bodies = [b"\xff\xff\xff\xff", b"\x0a\x04\x12\x02\xc3\x28"]
    async with grpc.aio.insecure_channel(gateway.address) as channel:
        for body in bodies:
            raw: Any = channel.unary_stream("/navigator.chat.v1.Chat/ChatStream")
            rpc = raw(body)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                async for _ in rpc:
                    pass
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "not a valid ChatStreamRequest" in (info.value.details() or "")


async def test_no_route_is_failed_precondition_without_the_routes_path(gateway_for: Any) -> None:
    gateway = await gateway_for("openai_chat_completions")
    outcome = await call(gateway, "nowhere")
    assert outcome.status == grpc.StatusCode.FAILED_PRECONDITION
    assert "'nowhere'" in outcome.details and "routes.yaml" not in outcome.details


async def test_routes_the_chat_service_cannot_speak_are_named(upstream: FaultUpstream) -> None:
    table = parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "agent",
                    "endpoint": upstream.endpoint("ok"),
                    "model": "m",
                    "protocols": ["openai_completions"],
                    "api_key": SECRET,
                }
            ]
        },
        source="routes.yaml",
    )
    assert "cannot speak" in table.warnings[0]
    gateway = Gateway(GatewaySettings.loopback(), table)
    await gateway.start()
    try:
        outcome = await call(gateway, "agent")
    finally:
        await gateway.stop(grace_s=0)
    assert outcome.status == grpc.StatusCode.FAILED_PRECONDITION
    assert "agent#1 lists openai_completions" in outcome.details
    assert f"speaks {' or '.join(CHAT_PROTOCOLS)}" in outcome.details


async def test_stream_limit_is_resource_exhausted(gateway_for: Any) -> None:
    gateway = await gateway_for("openai_chat_completions", "stall_after_headers")
    gateway.service.limits = StreamLimits(max_concurrent_streams=1)
    first = asyncio.create_task(call(gateway))
    await asyncio.sleep(0.2)
    second = await call(gateway, "ok")
    assert second.status == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "limit of 1 concurrent streams" in second.details
    assert (await first).terminal.error.code == pb.ERROR_CODE_TIMEOUT
