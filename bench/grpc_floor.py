"""What grpc.aio itself costs, with no gateway code: the floor under bench/gateway_scale.py.

A bare `grpc.aio` server (this file's handler, nothing else) in its own
process, a client in this one:

- paced: streams that write one small message every 20 ms (a timer wake-up
  and a `context.write` per message, as the gateway does per paced delta);
- request: calls that write three messages and end (the gRPC share of one
  request);
- admission: N calls started at once against handlers that each write W
  messages; the spread of the handlers' start times (W=0: idle handlers).

Server CPU time comes from /proc, as in bench/gateway_scale.py.

    .venv/bin/python bench/grpc_floor.py [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

SMALL = pb.ChatStreamEvent(content_delta=pb.ContentDelta(text=" tok1"))


def serve(ready: Any, entries: Any, use_uvloop: bool) -> None:
    """The bare server: the request's `routing_hint` says what the handler does."""
    seen: list[float] = []

    async def handler(request: pb.ChatStreamRequest, context: Any) -> None:
        seen.append(time.time())
        mode, _, count = request.routing_hint.partition(":")
        if mode == "paced":
            for _ in range(int(count)):
                await asyncio.sleep(0.02)
                await context.write(SMALL)
        else:
            for _ in range(int(count)):
                await context.write(SMALL)

    async def main() -> None:
        server = grpc.aio.server()
        handlers = {
            "ChatStream": grpc.unary_stream_rpc_method_handler(
                handler,
                request_deserializer=pb.ChatStreamRequest.FromString,
                response_serializer=pb.ChatStreamEvent.SerializeToString,
            )
        }
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("navigator.chat.v1.Chat", handlers)]
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        ready.put(port)
        while True:
            await asyncio.sleep(0.2)
            if seen and time.time() - seen[-1] > 1.0:
                entries.put(list(seen))
                seen.clear()

    if use_uvloop:
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(port: int, pid: int, entries: Any) -> dict[str, Any]:
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(16)]
    stubs = [chat_pb2_grpc.ChatStub(channel) for channel in channels]

    async def call(i: int, hint: str) -> int:
        return len([_ async for _ in stubs[i % len(stubs)].ChatStream(
            pb.ChatStreamRequest(routing_hint=hint)
        )])  # fmt: skip

    async def calls(count: int, hint: str, at_once: int) -> tuple[int, float]:
        limit = asyncio.Semaphore(at_once)

        async def limited(i: int) -> int:
            async with limit:
                return await call(i, hint)

        before = cpu_seconds(pid)
        messages = sum(await asyncio.gather(*(limited(i) for i in range(count))))
        return messages, cpu_seconds(pid) - before

    await calls(32, "burst:3", 32)  # warm up every channel
    results: dict[str, Any] = {}
    messages, cpu = await calls(300, "paced:100", 300)
    results["paced_cpu_us_per_message"] = round(cpu / messages * 1e6, 1)
    _, cpu = await calls(2000, "burst:3", 50)
    results["cpu_ms_per_request"] = round(cpu / 2000 * 1e3, 3)
    await asyncio.sleep(1.5)
    while not entries.empty():
        entries.get()
    for writes in (0, 60):
        await calls(500, f"burst:{writes}" if writes else "paced:50", 500)
        await asyncio.sleep(1.5)
        seen = sorted(entries.get(timeout=10))[-500:]
        results[f"admission_spread_500_calls_{writes}_writes_s"] = round(seen[-1] - seen[0], 3)
    for channel in channels:
        await channel.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uvloop", action="store_true", help="run the server on uvloop")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    ready, entries = context.Queue(), context.Queue()
    server = context.Process(target=serve, args=(ready, entries, args.uvloop), daemon=True)
    server.start()
    try:
        port = ready.get(timeout=30)
        assert server.pid is not None
        results = asyncio.run(measure(port, server.pid, entries))
    finally:
        server.kill()
    loop = "uvloop" if args.uvloop else "asyncio"
    print(json.dumps({"server_loop": loop, "python": sys.version.split()[0], **results}, indent=2))


if __name__ == "__main__":
    main()
