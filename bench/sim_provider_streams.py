"""How many concurrent SSE streams the simulated provider sustains, and how fast.

Runs the simulator in-process (its own threads) with an asyncio client in the
main thread, the arrangement of `nav agent --demo`. Two clients: `raw`
(asyncio sockets, minimal parsing: measures the simulator) and `httpx`
(`httpx.AsyncClient`, what the gateway uses). Prints one row per client,
pacing and concurrency: wall time, events per second, first-event latency.

    .venv/bin/python bench/sim_provider_streams.py [--concurrency 100 500] [--pacing 0 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable

import httpx

from navagent.fixtures.provider import SimulatedProvider

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
Stream = Callable[[int, float], Awaitable[tuple[float, int]]]


def body(i: int) -> bytes:
    request = {
        "model": "claude-sim",
        "max_tokens": 1024,
        "stream": True,
        "messages": [{"role": "user", "content": f"hello number {i}"}],
    }
    return json.dumps(request).encode()


def raw_client(port: int) -> Stream:
    async def one(i: int, start: float) -> tuple[float, int]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        payload = body(i)
        head = "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        writer.write(
            f"POST /v1/messages HTTP/1.1\r\nHost: sim\r\n{head}Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        data, first = b"", 0.0
        while not data.endswith(b"\r\n0\r\n\r\n"):
            chunk = await reader.read(65536)
            if not chunk:
                raise ConnectionError("stream ended early")
            if not first and b"data:" in data + chunk:
                first = time.monotonic() - start
            data += chunk
        writer.close()
        return first, data.count(b"\ndata:")

    return one


def httpx_client(client: httpx.AsyncClient) -> Stream:
    async def one(i: int, start: float) -> tuple[float, int]:
        first, events = 0.0, 0
        request = client.build_request("POST", "/v1/messages", content=body(i), headers=HEADERS)
        response = await client.send(request, stream=True)
        try:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    events += 1
                    first = first or time.monotonic() - start
        finally:
            await response.aclose()
        return first, events

    return one


async def measure(
    sim: SimulatedProvider, kind: str, concurrency: int
) -> tuple[float, list[float], int, int]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=sim.base_url, limits=limits, timeout=120) as client:
        one = raw_client(sim.port) if kind == "raw" else httpx_client(client)
        start = time.monotonic()
        results = await asyncio.gather(
            *(one(i, start) for i in range(concurrency)), return_exceptions=True
        )
        elapsed = time.monotonic() - start
    ok = [r for r in results if isinstance(r, tuple)]
    return elapsed, sorted(r[0] for r in ok), sum(r[1] for r in ok), len(results) - len(ok)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--pacing", type=float, nargs="+", default=[0.0, 20.0])
    parser.add_argument("--client", nargs="+", default=["raw", "httpx"], choices=["raw", "httpx"])
    args = parser.parse_args()
    print(
        f"{'client':>6} {'streams':>7} {'pacing ms':>9} {'wall s':>7} {'events/s':>9} "
        f"{'first p50 ms':>12} {'first p99 ms':>12} {'failed':>6}"
    )
    for kind in args.client:
        for pacing in args.pacing:
            for concurrency in args.concurrency:
                with SimulatedProvider(pacing_ms=pacing, keep_bodies=False) as sim:
                    elapsed, firsts, events, failed = asyncio.run(measure(sim, kind, concurrency))
                p50 = statistics.median(firsts) * 1000 if firsts else float("nan")
                p99 = firsts[max(int(len(firsts) * 0.99) - 1, 0)] * 1000 if firsts else float("nan")
                print(
                    f"{kind:>6} {concurrency:>7} {pacing:>9.0f} {elapsed:>7.2f} "
                    f"{events / elapsed:>9.0f} {p50:>12.1f} {p99:>12.1f} {failed:>6}"
                )


if __name__ == "__main__":
    main()
