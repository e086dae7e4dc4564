"""Gateway overhead as an outside benchmark measures it (issue 44), against its floor, same run.

The shape differs from bench/first_delta.py and bench/gateway_scale.py where
an outside benchmark does:

- the upstream (its own process, plain asyncio) writes each SSE event as its
  own HTTP/1.1 chunk, draining after each, and answers `Connection: close`
  every time: every request opens a new connection;
- the OpenAI stream opens with a role-only chunk with empty content, then
  `--tokens` one-word chunks, a finish chunk, usage and `[DONE]`; the
  Anthropic stream is message_start, content_block_start,
  content_block_delta x N, content_block_stop, message_delta, message_stop;
- the client is the blocking `grpc` channel (not grpc.aio), timing from the
  call to the first `content_delta` event; the anchor is the official SDK's
  streaming helper (`client.chat.completions.stream`, `client.messages.stream`)
  timing to its first text event, against the same upstream.

First delta: `--rounds` rounds (7), each calling every contender `--calls`
times, the order rotated every round; the figure is the median over every call,
`added` the contender's median minus the SDK's (target < 1 ms).

Capacity, for each gateway and the floor in turn (`--capacity-rounds` times,
alternating; medians): CPU per paced delta (`--paced` streams at 50 tokens/s,
`--paced-tokens` each, started together from client processes; target
<= 90 us), p99 time to first delta of those streams (< 100 ms), CPU per
request (`--requests` one-token requests, 10 at a time; <= 1 ms). CPU is
user + system time of the server's processes from /proc (the supervisor and
its workers), which other load on a shared machine barely moves; the p99 and
every first-delta time are wall times and move with load: the load average is
printed at the start and the end.

The floor is a bare grpc.aio proxy (aiohttp upstream, SSE split, JSON parsed,
one gRPC message per content delta, uvloop, as many processes as the gateway
has workers, sharing the port): what any gateway written this way costs.
`--floor-final` adds `floor+final`, the same proxy ending each stream with the
whole message as the wire contract does (DESIGN.md: the final `message` is
the last event of every answer): the floor for the gateway's own shape, two
gRPC writes for a one-token answer instead of one.

    .venv/bin/python bench/outside_overhead.py [--nav after=.venv/bin/nav]
        [--nav before=../wt-overhead-base/.venv/bin/nav] [--rounds 7] [--calls 5]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gateway_scale import cpu_seconds, one_stream, p, split_calls
from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

UPSTREAM = textwrap.dedent(
    """
    import asyncio, json, sys

    TOKENS, PACED_TOKENS = int(sys.argv[1]), int(sys.argv[2])
    PACE = 0.02

    def sse(data, event=None):
        head = f"event: {event}\\n" if event else ""
        return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\\n\\n").encode()

    def openai(tokens):
        base = {"id": "chatcmpl-o", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        def chunk(delta, finish=None):
            return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        return ([chunk({"role": "assistant", "content": ""})],
                [chunk({"content": f" word{i}"}) for i in range(tokens)],
                [chunk({}, "stop"), sse({**base, "choices": [], "usage": {
                    "prompt_tokens": 9, "completion_tokens": tokens,
                    "total_tokens": 9 + tokens}}), b"data: [DONE]\\n\\n"])

    def anthropic(tokens):
        start = {"type": "message_start", "message": {"id": "msg_o", "type": "message",
                 "role": "assistant", "model": "m", "content": [], "stop_reason": None,
                 "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}}
        return ([sse(start, "message_start"),
                 sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")],
                [sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": f" word{i}"}},
                     "content_block_delta") for i in range(tokens)],
                [sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                 sse({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                      "stop_sequence": None}, "usage": {"output_tokens": tokens}},
                     "message_delta"),
                 sse({"type": "message_stop"}, "message_stop")])

    def chunked(frame):
        return b"%x\\r\\n%s\\r\\n" % (len(frame), frame)

    SHAPES = {"stream": TOKENS, "one": 1, "paced": PACED_TOKENS}
    FRAMES = {(shape, api): tuple([chunked(f) for f in part] for part in make(tokens))
              for shape, tokens in SHAPES.items()
              for api, make in (("/v1/chat/completions", openai), ("/v1/messages", anthropic))}
    HEAD = (b"HTTP/1.1 200 OK\\r\\ncontent-type: text/event-stream\\r\\n"
            b"transfer-encoding: chunked\\r\\nconnection: close\\r\\n\\r\\n")

    async def handle(reader, writer):
        try:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            lines = head.decode("latin-1").split("\\r\\n")
            path = lines[0].split(" ")[1]
            length = next((int(l.split(":", 1)[1]) for l in lines
                           if l.lower().startswith("content-length:")), 0)
            await reader.readexactly(length)
            shape, _, api = path.lstrip("/").partition("/")
            opening, deltas, ending = FRAMES[(shape, "/" + api)]
            writer.write(HEAD)
            await writer.drain()
            for frame in opening:
                writer.write(frame)
                await writer.drain()
            for frame in deltas:
                if shape == "paced":
                    await asyncio.sleep(PACE)
                writer.write(frame)
                await writer.drain()
            for frame in ending:
                writer.write(frame)
                await writer.drain()
            writer.write(b"0\\r\\n\\r\\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())
    """
)

FLOOR = textwrap.dedent(
    """
    import asyncio, json, sys
    import aiohttp, grpc, uvloop
    from navagent.core._proto import chat_pb2 as pb

    BASE, PORT, FINAL = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "final"
    PATHS = {"stream-openai": "/stream/v1/chat/completions",
             "stream-anthropic": "/stream/v1/messages",
             "one": "/one/v1/chat/completions", "paced": "/paced/v1/chat/completions"}

    def text(data, anthropic):
        if anthropic:
            return data.get("delta", {}).get("text")
        choices = data.get("choices") or [{}]
        return choices[0].get("delta", {}).get("content")

    async def main():
        client = aiohttp.ClientSession()

        async def handler(request, context):
            path = PATHS[request.routing_hint]
            anthropic = path.endswith("messages")
            buffer, text_so_far = b"", []
            async with client.post(BASE + path, data=b"{}") as response:
                async for chunk in response.content.iter_any():
                    *events, buffer = (buffer + chunk).split(b"\\n\\n")
                    for event in events:
                        for line in event.split(b"\\n"):
                            if line.startswith(b"data: {"):
                                delta = text(json.loads(line[6:]), anthropic)
                                if delta:
                                    text_so_far.append(delta)
                                    await context.write(pb.ChatStreamEvent(
                                        content_delta=pb.ContentDelta(text=delta)))
            if FINAL:  # the contract's last event: the whole message
                await context.write(pb.ChatStreamEvent(message=pb.ChatMessage(
                    role="assistant", content="".join(text_so_far))))

        server = grpc.aio.server(options=[("grpc.so_reuseport", 1)])
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            "navigator.chat.v1.Chat",
            {"ChatStream": grpc.unary_stream_rpc_method_handler(
                handler, request_deserializer=pb.ChatStreamRequest.FromString,
                response_serializer=pb.ChatStreamEvent.SerializeToString)})])
        port = server.add_insecure_port(f"127.0.0.1:{PORT}")
        await server.start()
        print(port, flush=True)
        await server.wait_for_termination()

    uvloop.run(main())
    """
)

KEY = "sk-fake-outside"
HINTS = {
    "stream-openai": ("/stream", "openai_chat_completions"),
    "stream-anthropic": ("/stream", "anthropic_messages"),
    "one": ("/one", "openai_chat_completions"),
    "paced": ("/paced", "openai_chat_completions"),
}
APIS = ("openai", "anthropic")


class Server:
    """A server under test: its address and the pids whose CPU time is its cost."""

    def __init__(self, name: str, address: str, processes: list[subprocess.Popen[Any]]) -> None:
        self.name = name
        self.address = address
        self.processes = processes

    def cpu(self) -> float:
        """CPU seconds so far of every process of this server (and their children)."""
        return sum(cpu_seconds(process.pid) for process in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def start_upstream(tokens: int, paced_tokens: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, str(tokens), str(paced_tokens)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}"


def start_floor(upstream: str, processes: int, *, final: bool = False) -> Server:
    started: list[subprocess.Popen[Any]] = []
    port = 0
    for _ in range(processes):  # the first picks the port, the rest share it
        process = subprocess.Popen(
            [sys.executable, "-c", FLOOR, upstream, str(port), "final" if final else "-"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        port = int(process.stdout.readline())
        started.append(process)
    return Server("floor+final" if final else "floor", f"127.0.0.1:{port}", started)


def write_routes(path: Path, upstream: str) -> Path:
    """The routes file every gateway under test serves: one route per `HINTS` entry."""
    path.write_text(
        "routes:\n"
        + "".join(
            f"  - routing_hint: {hint}\n    endpoint: {upstream}{prefix}\n    model: m\n"
            f"    protocols: [{protocol}]\n    api_key: {KEY}\n"
            for hint, (prefix, protocol) in HINTS.items()
        ),
        encoding="utf-8",
    )
    return path


def start_gateway(
    name: str, nav: list[str], upstream: str, folder: Path, *, metrics: bool
) -> Server:
    routes = write_routes(folder / f"routes-{name}.yaml", upstream)
    log = folder / f"gateway-{name}.log"
    args = [*nav, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes)]
    if metrics:
        args += ["--metrics-listen", "127.0.0.1:0"]
    with log.open("wb") as sink:
        process = subprocess.Popen(args, stderr=sink)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8").splitlines():
            if "gateway ready on " in line:
                address = line.split("gateway ready on ")[1].split()[0].rstrip(":,")
                time.sleep(1.0)  # every worker serving
                return Server(name, address, [process])
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"gateway {name} did not start: {log.read_text(encoding='utf-8')}")


def request(hint: str) -> pb.ChatStreamRequest:
    return pb.ChatStreamRequest(
        routing_hint=hint, messages=[pb.ChatMessage(role="user", content="go")]
    )


def grpc_first(stub: Any, hint: str) -> float:
    """Seconds from the call to its first `content_delta` (the stream read to its end)."""
    started, first = time.perf_counter(), 0.0
    for event in stub.ChatStream(request(hint)):
        if not first and event.WhichOneof("event") == "content_delta":
            first = time.perf_counter() - started
    assert first, "no content delta"
    return first


def sdk_caller(upstream: str, api: str) -> Callable[[], float]:
    """The official SDK's streaming helper: seconds to its first text event."""
    import anthropic
    import openai

    if api == "openai":
        client = openai.OpenAI(base_url=f"{upstream}/stream/v1", api_key=KEY, max_retries=0)

        def call() -> float:
            started, first = time.perf_counter(), 0.0
            with client.chat.completions.stream(
                model="m", messages=[{"role": "user", "content": "go"}]
            ) as stream:
                for event in stream:
                    if not first and event.type == "content.delta" and event.delta:
                        first = time.perf_counter() - started
            return first

        return call
    messages = anthropic.Anthropic(base_url=f"{upstream}/stream", api_key=KEY, max_retries=0)

    def call_anthropic() -> float:
        started, first = time.perf_counter(), 0.0
        with messages.messages.stream(
            model="m", max_tokens=4096, messages=[{"role": "user", "content": "go"}]
        ) as stream:
            for event in stream:
                if not first and event.type == "text" and event.text:
                    first = time.perf_counter() - started
        return first

    return call_anthropic


def first_delta(upstream: str, servers: list[Server], rounds: int, calls: int) -> dict[str, Any]:
    channels = {server.name: grpc.insecure_channel(server.address) for server in servers}
    results: dict[str, Any] = {}
    try:
        for api in APIS:
            hint = f"stream-{api}"
            callers: dict[str, Callable[[], float]] = {"sdk": sdk_caller(upstream, api)}
            for name, channel in channels.items():
                stub = chat_pb2_grpc.ChatStub(channel)
                callers[name] = functools.partial(grpc_first, stub, hint)
            for call in callers.values():  # warm every connection and code path
                call()
                call()
            names = list(callers)
            times: dict[str, list[float]] = {name: [] for name in names}
            for round_ in range(rounds):
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:  # who goes first rotates
                    times[name] += [callers[name]() for _ in range(calls)]
            medians = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
            results[api] = {
                "median_ms": {name: round(ms, 2) for name, ms in medians.items()},
                "added_ms": {
                    name: round(ms - medians["sdk"], 2)
                    for name, ms in medians.items()
                    if name != "sdk"
                },
            }
    finally:
        for channel in channels.values():
            channel.close()
    return results


async def per_request(server: Server, count: int, at_once: int) -> dict[str, Any]:
    channels = [grpc.aio.insecure_channel(server.address) for _ in range(4)]
    stubs = [chat_pb2_grpc.ChatStub(channel) for channel in channels]
    limit = asyncio.Semaphore(at_once)

    async def one(i: int) -> tuple[float, int, str]:
        async with limit:
            return await one_stream(stubs[i % len(stubs)], "one")

    try:
        await asyncio.gather(*(one(i) for i in range(20)))  # warm up
        before = server.cpu()
        done = await asyncio.gather(*(one(i) for i in range(count)))
        cpu = server.cpu() - before
    finally:
        for channel in channels:
            await channel.close()
    return {
        "cpu_ms_per_request": cpu / count * 1000,
        "errors": sum(deltas != 1 for _, deltas, _ in done),
    }


def paced(server: Server, streams: int, tokens: int, client_processes: int) -> dict[str, Any]:
    before = server.cpu()
    done, wall = split_calls(server.address, "paced", streams, client_processes, 8)
    cpu = server.cpu() - before
    # A gateway merges the deltas a slow client has not taken yet: count statuses.
    firsts = [first for first, _, kind in done if not kind.startswith("status:")]
    return {
        "cpu_us_per_delta": cpu / (streams * tokens) * 1e6,
        "ttfd_p99_ms": p(firsts, 0.99) * 1000,
        "ttfd_p50_ms": p(firsts, 0.5) * 1000,
        "errors": streams - len(firsts),
        "wall_s": wall,
    }


def capacity(servers: list[Server], args: argparse.Namespace) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {server.name: [] for server in servers}
    for round_ in range(args.capacity_rounds):
        order = servers if round_ % 2 == 0 else servers[::-1]
        for server in order:
            row = asyncio.run(per_request(server, args.requests, 10))
            time.sleep(0.5)
            row |= paced(server, args.paced, args.paced_tokens, args.client_processes)
            rows[server.name].append(row)
            time.sleep(0.5)
    return {
        name: {
            key: round(statistics.median(r[key] for r in runs), 3)
            if key != "errors"
            else sum(r[key] for r in runs)
            for key in runs[0]
        }
        for name, runs in rows.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nav",
        action="append",
        default=[],
        help="NAME=COMMAND, a gateway to measure (repeat to compare trees; default: this venv's)",
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5, help="calls per contender per round")
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--paced", type=int, default=100)
    parser.add_argument("--paced-tokens", type=int, default=200)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--capacity-rounds", type=int, default=2)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0, help="floor processes (0: cpu count)")
    parser.add_argument("--no-metrics", action="store_true", help="no --metrics-listen")
    parser.add_argument(
        "--floor-final",
        action="store_true",
        help="also a floor that ends each stream with the final message, as the contract does",
    )
    parser.add_argument("--skip-capacity", action="store_true")
    parser.add_argument("--skip-first-delta", action="store_true")
    args = parser.parse_args()
    navs = [entry.partition("=") for entry in args.nav] or [
        ("gateway", "=", str(Path(sys.executable).with_name("nav")))
    ]
    load_before = os.getloadavg()
    upstream, endpoint = start_upstream(args.tokens, args.paced_tokens)
    servers: list[Server] = []
    results: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="nav-bench-outside-") as folder:
            for name, _, command in navs:
                servers.append(
                    start_gateway(
                        name, command.split(), endpoint, Path(folder), metrics=not args.no_metrics
                    )
                )
            floor_processes = args.workers or len(os.sched_getaffinity(0))
            servers.append(start_floor(endpoint, floor_processes))
            if args.floor_final:
                servers.append(start_floor(endpoint, floor_processes, final=True))
            if not args.skip_first_delta:
                results["first_delta"] = first_delta(endpoint, servers, args.rounds, args.calls)
            if not args.skip_capacity:
                results["capacity"] = capacity(servers, args)
            for server in servers:
                server.stop()
            servers.clear()
    finally:
        for server in servers:
            server.stop()
        upstream.terminate()
        upstream.wait(10)
    report = {
        "python": sys.version.split()[0],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "metrics": not args.no_metrics,
        **results,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
