"""CPU of one request's per-request work in the gateway, layer by layer (issue 44).

Each layer is the gateway's own code, run in this process many times over and
timed with `time.process_time` (CPU, not wall time: load on a shared machine
barely moves it), in the order a `ChatStream` call meets them:

- `admission`: parse check, `request_from_proto`, the caller's scope, route
  resolution (`ChatService._admit`);
- `slots`: the gateway's and the caller's stream slots, taken and given back,
  in `Slots.shared` as the workers count them (an `flock` each);
- `upstream request`: the provider request built (`ChatProtocol.build_request`,
  JSON, endpoint credentials) as the gateway hands it to its transport
  (`Upstream._send`), and the translator made;
- `upstream exchange`: connect, send and read a one-token answer through the
  gateway's transport (aiohttp behind httpx, `Upstream.stream` whole) against
  a local provider that closes every connection (its own process: only this
  side's CPU is counted), minus the layer above;
- `stream log line`: the per-stream line through the redacting formatter, as
  `nav gateway serve` configures it (to /dev/null);
- `metrics`: admitted and finished, in prometheus-client's multiprocess mode
  (as with `--workers` and `--metrics-listen`).

The first gRPC write and the call itself are grpc.aio's: bench/grpc_floor.py
measures them (`cpu_ms_per_request`, three writes), and bench/outside_overhead.py
the whole request against its floor.

    .venv/bin/python bench/request_layers.py [--count 2000]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="nav-bench-layers-")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.outside_overhead import start_upstream
from navagent.core._proto import chat_pb2 as pb
from navagent.core.redaction import RedactingFormatter
from navagent.gateway import metrics
from navagent.gateway._loop import run
from navagent.gateway._network import upstream_transport
from navagent.gateway._slots import GATEWAY, Slots
from navagent.gateway.callers import SLOT_COUNTERS, admit_caller
from navagent.gateway.dispatch import Dispatcher, StreamRecord
from navagent.gateway.routes import parse_routes
from navagent.gateway.service import ChatService, _StreamLog
from navagent.gateway.upstream import Upstream, _encode_json, _endpoint_credentials

KEY = "sk-fake-layers-0123456789"


def per_call_us(work: Callable[[], object], count: int) -> float:
    for _ in range(min(200, count)):  # warm
        work()
    started = time.process_time()
    for _ in range(count):
        work()
    return (time.process_time() - started) / count * 1e6


async def per_call_us_async(work: Callable[[], Any], count: int) -> float:
    for _ in range(20):
        await work()
    started = time.process_time()
    for _ in range(count):
        await work()
    return (time.process_time() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    count = args.count
    process, endpoint = start_upstream(1, 1)
    try:
        rows = run(measure(endpoint, count))
    finally:
        process.terminate()
        process.wait(10)
    print(f"CPU per request, us (mean of {count} in-process runs each)")
    for name, us in rows.items():
        print(f"{name:<22}{us:>9.1f}")
    print(f"{'total':<22}{sum(rows.values()):>9.1f}")


async def measure(endpoint: str, count: int) -> dict[str, float]:
    table = parse_routes(
        {
            "routes": [
                {
                    "name": "one",
                    "routing_hint": "one",
                    "endpoint": f"{endpoint}/one",
                    "model": "m",
                    "protocols": ["openai_chat_completions"],
                    "api_key": KEY,
                }
            ]
        },
        source="bench",
    )
    (route,) = table.routes
    transport = upstream_transport(httpx.Limits(max_connections=100))
    client = httpx.AsyncClient(transport=transport)
    upstream = Upstream(client, transport=transport)  # as the gateway's own client sends
    service = ChatService(Dispatcher(table, upstream))
    request = pb.ChatStreamRequest(
        routing_hint="one", messages=[pb.ChatMessage(role="user", content="go")]
    )
    slots = Slots.shared(workers=2, counters=SLOT_COUNTERS).worker(0)
    rows: dict[str, float] = {}

    rows["admission"] = per_call_us(lambda: service._admit(request, _StreamLog()), count)

    def slot_round() -> None:
        lease = admit_caller("one", slots)
        slots.try_acquire(256, GATEWAY)
        slots.release(GATEWAY)
        lease.release()

    rows["slots"] = per_call_us(slot_round, count)
    neutral, _ = service._admit(request, _StreamLog())
    protocol = upstream.protocol_for(route)

    def build() -> object:
        outgoing = protocol.build_request(
            neutral,
            endpoint=route.endpoint,
            model=route.model,
            api_key=route.api_key.get_secret_value(),
            options=route.options,
        )
        url, headers = _endpoint_credentials(
            outgoing.url, {**outgoing.headers, "content-type": "application/json"}
        )
        protocol.translator_for(
            endpoint=route.endpoint,
            model=route.model,
            api_key=route.api_key.get_secret_value(),
            options=route.options,
        )
        body = _encode_json(outgoing.body)
        return str(url), {name.lower(): value for name, value in headers.items()}, body

    rows["upstream request"] = per_call_us(build, count)

    async def exchange() -> None:
        async for _ in upstream.stream(route, neutral):
            pass

    whole = await per_call_us_async(exchange, count // 4)
    rows["upstream exchange"] = whole - rows["upstream request"]

    handler = logging.StreamHandler(open(os.devnull, "w", encoding="utf-8"))
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    record = StreamRecord(
        route="one", protocol="openai_chat_completions", model="m", attempts=1,
        upstream=[("attempt", "one", "200")],
    )  # fmt: skip

    def finished_log() -> _StreamLog:
        stream_log = _StreamLog(hint="one", record=record, hint_label="one", admitted=True)
        stream_log.first_token = stream_log.started + 0.002
        stream_log.input_tokens, stream_log.output_tokens = 9, 1
        stream_log.outcome = "ok"
        return stream_log

    base = per_call_us(finished_log, count)
    rows["stream log line"] = per_call_us(lambda: finished_log().emit(), count) - base
    metrics.enable()

    def both() -> None:
        stream_log = finished_log()
        metrics.record_admitted("one")
        stream_log.emit()

    rows["metrics"] = per_call_us(both, count) - base - rows["stream log line"]
    await client.aclose()
    return rows


if __name__ == "__main__":
    main()
