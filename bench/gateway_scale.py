"""The gateway at scale: paced capacity, CPU per delta and per request, fair admission.

Three kinds of process, as in production: a provider (a minimal HTTP/1.1
server in its own process, OpenAI wire format), `nav gateway serve --workers N`
routed to it, and clients (this process for the one-token requests; several
client processes for the paced and firehose streams, since one Python process
cannot start and read hundreds of streams without becoming the bottleneck;
each uses several gRPC connections, so the kernel spreads them over the
workers). Everything shares this machine's cores. The provider answers by path:

- `/paced`: 200 deltas at 50 tokens/s, one delta per write, as a real model
  streams (one ticker writes the next delta of every open stream every 20 ms);
- `/one`: a one-token answer, for the cost of a request;
- `/firehose`: 200 deltas in one write, as fast as it can.

The gateway's CPU time (user + system of the supervisor and its workers,
from /proc) is the honest measure on a shared machine; wall times are given
too. Targets (issue 14): >= 20,000 paced deltas/s, <= 50 us of CPU per paced
delta, <= 1 ms per request, p99 time to first delta < 250 ms with 500 paced
streams, 1,000 firehose streams with 0 errors, the last reaching the
provider within 1 s of the first.

    .venv/bin/python bench/gateway_scale.py [--workers 2] [--paced 500] [--firehose 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

PROVIDER_SOURCE = textwrap.dedent(
    """
    import asyncio, json, time

    DELTAS, INTERVAL = 200, 0.02
    BASE = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-bench"}

    def sse(data):
        return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\\n\\n"

    def chunk(delta, finish=None):
        body = sse({**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        return b"%x\\r\\n%s\\r\\n" % (len(body), body)

    def tail(tokens):
        usage = sse({**BASE, "choices": [], "usage": {"prompt_tokens": 9,
                     "completion_tokens": tokens, "total_tokens": tokens + 9}})
        done = b"data: [DONE]\\n\\n"
        return (chunk({}, "stop") + b"%x\\r\\n%s\\r\\n" % (len(usage), usage)
                + b"%x\\r\\n%s\\r\\n" % (len(done), done) + b"0\\r\\n\\r\\n")

    HEAD = (b"HTTP/1.1 200 OK\\r\\ncontent-type: text/event-stream\\r\\n"
            b"transfer-encoding: chunked\\r\\n\\r\\n" + chunk({"role": "assistant", "content": ""}))
    DELTA = [chunk({"content": f" tok{i}"}) for i in range(DELTAS)]
    FIREHOSE = HEAD + b"".join(DELTA) + tail(DELTAS)
    ONE = HEAD + DELTA[0] + tail(1)
    arrivals = []
    paced = {}  # writer -> index of its next delta

    async def ticker():
        while True:
            await asyncio.sleep(INTERVAL)
            for writer, index in list(paced.items()):
                if index < DELTAS:
                    writer.write(DELTA[index])
                    paced[writer] = index + 1
                else:
                    writer.write(tail(DELTAS))
                    del paced[writer]

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                lines = head.decode("latin-1").split("\\r\\n")
                method, path = lines[0].split(" ")[:2]
                length = next((int(l.split(":", 1)[1]) for l in lines
                               if l.lower().startswith("content-length:")), 0)
                await reader.readexactly(length)
                if method == "GET":
                    body = json.dumps(arrivals).encode()
                    arrivals.clear()
                    writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-length: %d\\r\\n\\r\\n%s"
                                 % (len(body), body))
                    continue
                arrivals.append([time.time(), path.split("/")[1]])
                if path.startswith("/paced"):
                    writer.write(HEAD)
                    paced[writer] = 0
                    while writer in paced:
                        await asyncio.sleep(0.05)
                elif path.startswith("/one"):
                    writer.write(ONE)
                else:
                    writer.write(FIREHOSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            paced.pop(writer, None)
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        print(server.sockets[0].getsockname()[1], flush=True)
        asyncio.get_running_loop().create_task(ticker())
        await server.serve_forever()

    asyncio.run(main())
    """
)

KEY = "sk-fake-bench"
DELTAS = 200


def start_provider() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", PROVIDER_SOURCE], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def start_gateway(
    provider_port: int, folder: Path, *, workers: int, nav: list[str]
) -> tuple[subprocess.Popen[bytes], str]:
    routes = folder / "routes.yaml"
    routes.write_text(
        "routes:\n"
        + "".join(
            f"  - routing_hint: {hint}\n    endpoint: http://127.0.0.1:{provider_port}/{hint}\n"
            f"    model: bench\n    protocols: [openai_chat_completions]\n    api_key: {KEY}\n"
            for hint in ("paced", "one", "firehose")
        ),
        encoding="utf-8",
    )
    log = folder / "gateway.log"
    args = ["gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes)]
    args += ["--max-concurrent-streams", "4096", "--log-level", "warning"]
    if workers:
        args += ["--workers", str(workers)]
    with log.open("wb") as sink:
        process = subprocess.Popen([*nav, *args], stderr=sink, env={**os.environ})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # The ready line is INFO: with --log-level warning, wait for the port instead.
        address = _listening_address(process.pid)
        if address:
            time.sleep(1.0 if workers != 1 else 0.2)  # every worker serving
            return process, address
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the gateway did not start: {log.read_text(encoding='utf-8')}")


def _listening_address(pid: int) -> str | None:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    pids = {pid, *_children(pid)}
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            return "127.0.0.1:" + line.split()[3].rsplit(":", 1)[1]
    return None


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text(encoding="ascii").split()] if path.exists() else []


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` and its children (the workers), now."""
    total = 0.0
    for each in (pid, *_children(pid)):
        try:
            stat = Path(f"/proc/{each}/stat").read_text(encoding="ascii")
            fields = stat.rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def arrivals(provider_port: int, hint: str = "") -> list[float]:
    """When requests (for `hint`, if given) reached the provider since the last call."""
    with urllib.request.urlopen(f"http://127.0.0.1:{provider_port}/stats", timeout=10) as page:
        return [when for when, path in json.loads(page.read()) if not hint or path == hint]


def request(hint: str) -> pb.ChatStreamRequest:
    return pb.ChatStreamRequest(
        messages=[pb.ChatMessage(role="user", content="go")], routing_hint=hint
    )


async def one_stream(stub: Any, hint: str) -> tuple[float, int, str]:
    """(time to first delta, deltas received, last event kind) of one call."""
    started = time.perf_counter()
    first, deltas, kind = 0.0, 0, ""
    try:
        async for event in stub.ChatStream(request(hint)):
            kind = event.WhichOneof("event") or ""
            if kind == "content_delta":
                deltas += 1
                if not first:
                    first = time.perf_counter() - started
    except grpc.aio.AioRpcError as exc:
        kind = f"status:{exc.code().name}"
    return first, deltas, kind


class Client:
    """Several gRPC connections, used round-robin, so calls spread over the workers."""

    def __init__(self, address: str, connections: int) -> None:
        options = [("grpc.use_local_subchannel_pool", 1), ("grpc.http2.bdp_probe", 0)]
        self.channels = [
            grpc.aio.insecure_channel(address, options=options) for _ in range(connections)
        ]
        self.stubs = [chat_pb2_grpc.ChatStub(channel) for channel in self.channels]
        self._next = 0

    def stub(self) -> Any:
        self._next += 1
        return self.stubs[self._next % len(self.stubs)]

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()


def _client_process(
    address: str, hint: str, count: int, connections: int, start_at: float, out: Any
) -> None:
    """One client process: `count` calls at once, from `start_at` (wall clock)."""

    async def run() -> list[tuple[float, int, str]]:
        client = Client(address, connections)
        try:
            await asyncio.gather(*(one_stream(client.stub(), "one") for _ in range(connections)))
            await asyncio.sleep(max(0.0, start_at - time.time()))
            return await asyncio.gather(*(one_stream(client.stub(), hint) for _ in range(count)))
        finally:
            await client.close()

    out.put(asyncio.run(run()))


def split_calls(
    address: str, hint: str, count: int, processes: int, connections: int
) -> tuple[list[tuple[float, int, str]], float]:
    """`count` concurrent calls from `processes` client processes starting together,
    and the wall time from their common start to the last call's end.

    One Python process cannot start (and read) a thousand streams at once
    without becoming the bottleneck itself: the calls then reach the gateway
    over seconds, whatever the gateway does. Several processes, each with its
    own connections, stand in for many agents.
    """
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    start_at = time.time() + 3.0  # every process connected and warmed up by then
    shares = [count // processes + (i < count % processes) for i in range(processes)]
    workers = [
        context.Process(
            target=_client_process,
            args=(address, hint, share, max(1, connections // processes), start_at, out),
        )
        for share in shares
    ]
    for worker in workers:
        worker.start()
    done = [row for _ in workers for row in out.get()]
    wall = time.time() - start_at
    for worker in workers:
        worker.join()
    return done, wall


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def measure(address: str, gateway_pid: int, provider_port: int, args: Any) -> dict[str, Any]:
    client = Client(address, args.connections)
    results: dict[str, Any] = {}
    try:
        await asyncio.gather(*(one_stream(client.stub(), "one") for _ in range(50)))  # warm up
        arrivals(provider_port)

        # Per request: one-token answers, `--concurrency` at a time.
        semaphore = asyncio.Semaphore(args.concurrency)

        async def limited() -> tuple[float, int, str]:
            async with semaphore:
                return await one_stream(client.stub(), "one")

        cpu, wall = cpu_seconds(gateway_pid), time.perf_counter()
        done = await asyncio.gather(*(limited() for _ in range(args.requests)))
        wall, cpu = time.perf_counter() - wall, cpu_seconds(gateway_pid) - cpu
        results["requests"] = {
            "count": args.requests,
            "errors": sum(kind != "message" for _, _, kind in done),
            "cpu_ms_per_request": round(cpu / args.requests * 1000, 3),
            "requests_per_s": round(args.requests / wall),
        }
        arrivals(provider_port)

        # Paced: every stream 200 deltas at 50/s, from several client processes.
        cpu = cpu_seconds(gateway_pid)
        done, wall = await asyncio.to_thread(
            split_calls, address, "paced", args.paced, args.client_processes, args.connections
        )
        cpu = cpu_seconds(gateway_pid) - cpu
        firsts = [first for first, _, kind in done if kind == "message"]
        deltas = args.paced * DELTAS
        results["paced"] = {
            "streams": args.paced,
            "errors": sum(kind != "message" for _, _, kind in done),
            "wall_s": round(wall, 2),
            "ideal_wall_s": DELTAS * 0.02,
            "forwarded_deltas_per_s": round(deltas / wall),
            "cpu_us_per_delta": round(cpu / deltas * 1e6, 1),
            "ttfd_p50_ms": round(p(firsts, 0.5) * 1000, 1),
            "ttfd_p99_ms": round(p(firsts, 0.99) * 1000, 1),
            "messages_per_stream": round(statistics.mean(d for _, d, _ in done), 1),
        }
        arrivals(provider_port)

        # Firehose: all at once, from several client processes.
        cpu = cpu_seconds(gateway_pid)
        done, wall = await asyncio.to_thread(
            split_calls, address, "firehose", args.firehose, args.client_processes, args.connections
        )
        cpu = cpu_seconds(gateway_pid) - cpu
        seen = sorted(arrivals(provider_port, "firehose"))
        results["firehose"] = {
            "streams": args.firehose,
            "errors": sum(kind != "message" for _, _, kind in done),
            "error_kinds": sorted({kind for _, _, kind in done if kind != "message"}),
            "admission_spread_s": round(seen[-1] - seen[0], 3) if seen else None,
            "wall_s": round(wall, 2),
            "cpu_us_per_delta": round(cpu / (args.firehose * DELTAS) * 1e6, 1),
        }
    finally:
        await client.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=0, help="0: the gateway's default")
    parser.add_argument("--paced", type=int, default=500)
    parser.add_argument("--firehose", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--client-processes",
        type=int,
        default=4,
        help="client processes for the paced and firehose streams",
    )
    parser.add_argument(
        "--nav",
        default=str(Path(sys.executable).with_name("nav")),
        help="the nav command to measure (e.g. another checkout's)",
    )
    args = parser.parse_args()
    provider, provider_port = start_provider()
    with tempfile.TemporaryDirectory(prefix="nav-bench-scale-") as folder:
        nav = args.nav.split()
        gateway, address = start_gateway(provider_port, Path(folder), workers=args.workers, nav=nav)
        try:
            results = asyncio.run(measure(address, gateway.pid, provider_port, args))
        finally:
            gateway.terminate()
            gateway.wait(30)
            provider.terminate()
            provider.wait(10)
    print(json.dumps({"workers": args.workers or "default", **results}, indent=2))


if __name__ == "__main__":
    main()
