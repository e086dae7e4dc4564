"""Where the time to first delta goes, phase by phase, in the outside benchmark's shape (issue 44).

bench/outside_overhead.py gives the total against the SDK and the floor; this
splits one gateway process's share of it. The provider stand-in is
outside_overhead's (its own process: each SSE event its own HTTP chunk, a new
connection per request, `--tokens` content events after a role-only chunk);
the gateway serves in this process, as a worker does (multiprocess metrics,
the redacting log formatter, frozen heap); the client is the blocking `grpc`
channel in a process of its own, timing each call to its first
`content_delta`. Every time is read on the machine's monotonic clock (one
clock for every process on Linux), from the moment the client calls:

- `handler`: the call reaches `ChatService.chat_stream` (grpc's own work on
  both sides: the floor pays it too);
- `upstream sent`: admission, slots, route, request built, just before the
  gateway's transport sends it;
- `headers`: the provider's response head is in (a connect per request: the
  stand-in closes every connection);
- `write started` / `write returned`: the first content delta handed to
  grpc.aio and its `write` returning;
- `client got it`: the client holds the delta.

    .venv/bin/python bench/first_delta_phases.py [--calls 40] [--api openai]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="nav-bench-phases-")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.outside_overhead import start_upstream, write_routes
from navagent.cli.gateway_cmd import LogLevel
from navagent.cli.gateway_cmd import _configure_logging as configure_logging
from navagent.core.events import CONTENT_EVENTS, StreamEvent
from navagent.gateway import _loop, metrics
from navagent.gateway._network import AiohttpTransport, preload
from navagent.gateway._slots import Slots
from navagent.gateway.callers import SLOT_COUNTERS
from navagent.gateway.routes import load_routes
from navagent.gateway.server import Gateway
from navagent.gateway.service import ChatService
from navagent.gateway.settings import GatewaySettings

PHASES = ("handler", "upstream sent", "headers", "write started", "write returned")

CLIENT = """
import json, sys, time, grpc
from navagent.core._proto import chat_pb2 as pb, chat_pb2_grpc
stub = chat_pb2_grpc.ChatStub(grpc.insecure_channel(sys.argv[1]))
request = pb.ChatStreamRequest(routing_hint=sys.argv[2],
                               messages=[pb.ChatMessage(role="user", content="go")])
calls = []
for _ in range(int(sys.argv[3])):
    started, first = time.monotonic(), 0.0
    for event in stub.ChatStream(request):
        if not first and event.WhichOneof("event") == "content_delta":
            first = time.monotonic()
    calls.append((started, first))
print(json.dumps(calls), flush=True)
"""


class _Phases:
    """The gateway's side of each call: when it passed each phase (monotonic seconds)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, float]] = []

    def mark(self, phase: str) -> None:
        self.calls[-1].setdefault(phase, time.monotonic())

    def watch(self) -> None:
        """Wrap the four methods each phase ends in (one call at a time: the client is serial)."""
        phases = self
        chat_stream, open_, write = (
            ChatService.chat_stream,
            AiohttpTransport.open,
            ChatService._write,
        )

        async def timed_chat_stream(service: ChatService, *args: Any) -> None:
            phases.calls.append({"handler": time.monotonic()})
            await chat_stream(service, *args)

        async def timed_open(transport: AiohttpTransport, *args: Any) -> Any:
            phases.mark("upstream sent")
            answer = await open_(transport, *args)
            phases.mark("headers")
            return answer

        async def timed_write(service: ChatService, event: StreamEvent, *args: Any) -> None:
            first = isinstance(event, CONTENT_EVENTS) and "write started" not in phases.calls[-1]
            if first:
                phases.mark("write started")
            await write(service, event, *args)
            if first:
                phases.mark("write returned")

        patches: dict[tuple[type, str], Callable[..., Awaitable[Any]]] = {
            (ChatService, "chat_stream"): timed_chat_stream,
            (AiohttpTransport, "open"): timed_open,
            (ChatService, "_write"): timed_write,
        }
        for (owner, name), replacement in patches.items():
            setattr(owner, name, replacement)


def _configure_logging() -> None:
    """As `nav gateway serve` does, written to /dev/null: the log line is part of the cost."""
    configure_logging(LogLevel.info)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(open(os.devnull, "w", encoding="utf-8"))


async def _measure(endpoint: str, hint: str, calls: int, folder: Path) -> list[dict[str, float]]:
    routes = write_routes(folder / "routes.yaml", endpoint)
    settings = GatewaySettings(listen="127.0.0.1:0", routes=routes)
    metrics.enable()
    phases = _Phases()
    phases.watch()  # before the server is made: it binds `chat_stream` then
    slots = Slots.shared(workers=1, counters=SLOT_COUNTERS).worker(0)
    gateway = Gateway(settings, load_routes(routes), slots=slots, reuse_port=True)
    await gateway.start(announce=False)
    preload()
    _loop.settle()
    client = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLIENT,
        gateway.address,
        hint,
        str(calls + 2),  # two to warm the connection and every code path
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert client.stdout is not None
    seen = json.loads(await client.stdout.readline())
    await client.wait()
    await gateway.stop()
    rows = []
    for (started, first), marks in list(zip(seen, phases.calls, strict=True))[2:]:
        row = {phase: (marks[phase] - started) * 1000 for phase in PHASES}
        rows.append(row | {"client got it": (first - started) * 1000})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--api", choices=("openai", "anthropic"), default="openai")
    args = parser.parse_args()
    _configure_logging()
    upstream, endpoint = start_upstream(args.tokens, 1)
    try:
        with tempfile.TemporaryDirectory(prefix="nav-bench-phases-") as folder:
            rows = _loop.run(_measure(endpoint, f"stream-{args.api}", args.calls, Path(folder)))
    finally:
        upstream.terminate()
        upstream.wait(10)
    report: dict[str, Any] = {"load_average": [round(x, 2) for x in os.getloadavg()]}
    for phase in rows[0]:
        times = sorted(row[phase] for row in rows)
        report[phase] = {
            "p10_ms": round(times[len(times) // 10], 2),
            "median_ms": round(statistics.median(times), 2),
            "p90_ms": round(times[len(times) * 9 // 10], 2),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
