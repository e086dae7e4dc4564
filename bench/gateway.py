"""Gateway latency and throughput against a provider that streams as fast as it can.

Three processes, as in production: a "firehose" provider (a minimal HTTP/1.1
server in its own process that answers every POST with a precomputed
2,000-token stream in the OpenAI or Anthropic wire format, one chunk per
token, no pacing), `nav gateway serve` routed to it, and this process as the
client.

1. Time to first delta and total time, median of N runs, for
   a) the official SDK streaming directly from the firehose, and
   b) our gRPC client -> gateway -> firehose.
   Targets: added time to first delta < 3 ms (median); total through the
   gateway <= the SDK's direct total.
2. `--concurrency` streams at once through the one gateway: errors (target 0),
   wall time, and the gateway's peak RSS (VmHWM).

    .venv/bin/python bench/gateway.py [--runs 30] [--tokens 2000] [--concurrency 500]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

PROVIDER_SOURCE = textwrap.dedent(
    """
    import asyncio, json, sys

    TOKENS = int(sys.argv[2])

    def sse(data, event=None):
        head = f"event: {event}\\n" if event else ""
        return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\\n\\n").encode()

    def openai_frames():
        base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
                "model": "gpt-bench"}
        def chunk(delta, finish=None):
            return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        frames = [chunk({"role": "assistant", "content": ""})]
        frames += [chunk({"content": f" tok{i}"}) for i in range(TOKENS)]
        frames.append(chunk({}, "stop"))
        frames.append(sse({**base, "choices": [], "usage": {"prompt_tokens": 9,
                           "completion_tokens": TOKENS, "total_tokens": TOKENS + 9}}))
        frames.append(b"data: [DONE]\\n\\n")
        return frames

    def anthropic_frames():
        frames = [sse({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
                  "role": "assistant", "model": "claude-bench", "content": [], "stop_reason": None,
                  "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}},
                  "message_start"),
                  sse({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}, "content_block_start")]
        frames += [sse({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": f" tok{i}"}}, "content_block_delta")
                   for i in range(TOKENS)]
        frames += [sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                   sse({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                        "stop_sequence": None}, "usage": {"output_tokens": TOKENS}},
                       "message_delta"),
                   sse({"type": "message_stop"}, "message_stop")]
        return frames

    def chunked(frames):
        return [b"%x\\r\\n%s\\r\\n" % (len(f), f) for f in frames]

    BODIES = {"/v1/chat/completions": b"".join(chunked(openai_frames())) + b"0\\r\\n\\r\\n",
              "/v1/messages": b"".join(chunked(anthropic_frames())) + b"0\\r\\n\\r\\n"}
    HEAD = (b"HTTP/1.1 200 OK\\r\\ncontent-type: text/event-stream\\r\\n"
            b"transfer-encoding: chunked\\r\\n\\r\\n")

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                lines = head.decode("latin-1").split("\\r\\n")
                path = lines[0].split(" ")[1]
                length = next((int(l.split(":", 1)[1]) for l in lines
                               if l.lower().startswith("content-length:")), 0)
                await reader.readexactly(length)
                # As fast as it can: the whole body in one write, the kernel
                # splitting it into segments as the client reads.
                writer.write(HEAD + BODIES[path])
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())
    """
)

KEY = "sk-fake-bench"


def start_provider(tokens: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", PROVIDER_SOURCE, "serve", str(tokens)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    return process, f"http://127.0.0.1:{port}"


def start_gateway(
    endpoint: str, protocol: str, folder: Path, *, max_streams: int
) -> tuple[subprocess.Popen[bytes], str]:
    routes = folder / f"routes-{protocol}.yaml"
    routes.write_text(
        "routes:\n"
        f"  - routing_hint: agent\n    endpoint: {endpoint}\n    model: bench\n"
        f"    protocols: [{protocol}]\n    api_key: {KEY}\n",
        encoding="utf-8",
    )
    log = folder / f"gateway-{protocol}-{max_streams}.log"
    nav = str(Path(sys.executable).with_name("nav"))
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                nav,
                "gateway",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--routes",
                str(routes),
                "--max-concurrent-streams",
                str(max_streams),
            ],
            stderr=sink,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8").splitlines():
            if "gateway ready on " in line:
                return process, line.split("gateway ready on ")[1].split(":")[0] + ":" + (
                    line.split("gateway ready on ")[1].split(":")[1]
                )
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the gateway did not start: {log.read_text(encoding='utf-8')}")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


REQUEST = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="go")])


async def through_gateway(stub: Any) -> tuple[float, float, str]:
    started = time.perf_counter()
    first = 0.0
    kind = ""
    async for event in stub.ChatStream(REQUEST):
        kind = event.WhichOneof("event") or ""
        if not first and kind == "content_delta":
            first = time.perf_counter() - started
    return first, time.perf_counter() - started, kind


async def openai_direct(endpoint: str) -> tuple[float, float, str]:
    import openai

    async with openai.AsyncOpenAI(base_url=f"{endpoint}/v1", api_key=KEY, max_retries=0) as sdk:
        started = time.perf_counter()
        first = 0.0
        stream = await sdk.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": "go"}], stream=True
        )
        async for chunk in stream:
            if not first and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - started
        return first, time.perf_counter() - started, "message"


async def anthropic_direct(endpoint: str) -> tuple[float, float, str]:
    import anthropic

    async with anthropic.AsyncAnthropic(base_url=endpoint, api_key=KEY, max_retries=0) as sdk:
        started = time.perf_counter()
        first = 0.0
        async with sdk.messages.stream(
            model="bench", max_tokens=4096, messages=[{"role": "user", "content": "go"}]
        ) as stream:
            async for text in stream.text_stream:
                if not first and text:
                    first = time.perf_counter() - started
            await stream.get_final_message()
        return first, time.perf_counter() - started, "message"


async def latency(endpoint: str, address: str, protocol: str, runs: int) -> dict[str, float]:
    direct = openai_direct if protocol == "openai_chat_completions" else anthropic_direct
    sdk_first, sdk_total, gw_first, gw_total = [], [], [], []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        await through_gateway(stub)  # warm the channel and the upstream pool
        await direct(endpoint)
        for _ in range(runs):  # interleaved so machine noise hits both alike
            first, total, kind = await direct(endpoint)
            sdk_first.append(first)
            sdk_total.append(total)
            first, total, kind = await through_gateway(stub)
            assert kind == "message", kind
            gw_first.append(first)
            gw_total.append(total)
    return {
        "sdk_first": statistics.median(sdk_first) * 1000,
        "sdk_total": statistics.median(sdk_total) * 1000,
        "gw_first": statistics.median(gw_first) * 1000,
        "gw_total": statistics.median(gw_total) * 1000,
    }


async def concurrent(address: str, streams: int, channels: int) -> tuple[int, int, float]:
    opened = [grpc.aio.insecure_channel(address) for _ in range(channels)]
    stubs = [chat_pb2_grpc.ChatStub(channel) for channel in opened]

    async def one(i: int) -> str:
        try:
            return (await through_gateway(stubs[i % channels]))[2]
        except grpc.aio.AioRpcError as exc:
            return f"rpc:{exc.code().name}"

    started = time.perf_counter()
    kinds = await asyncio.gather(*(one(i) for i in range(streams)))
    wall = time.perf_counter() - started
    for channel in opened:
        await channel.close()
    ok = sum(kind == "message" for kind in kinds)
    return ok, streams - ok, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--concurrent-tokens", type=int, default=2000)
    parser.add_argument(
        "--protocol",
        choices=["openai_chat_completions", "anthropic_messages", "both"],
        default="both",
    )
    args = parser.parse_args()
    protocols = (
        ["openai_chat_completions", "anthropic_messages"]
        if args.protocol == "both"
        else [args.protocol]
    )
    provider, endpoint = start_provider(args.tokens)
    folder = Path(tempfile.mkdtemp(prefix="nav-bench-"))
    try:
        print(f"{args.tokens}-token stream, median of {args.runs} interleaved runs (ms)")
        print(
            f"{'protocol':<26}{'SDK first':>10}{'GW first':>10}{'added':>8}"
            f"{'SDK total':>11}{'GW total':>10}{'GW/SDK':>8}"
        )
        for protocol in protocols:
            gateway, address = start_gateway(endpoint, protocol, folder, max_streams=1)
            try:
                r = asyncio.run(latency(endpoint, address, protocol, args.runs))
            finally:
                gateway.send_signal(signal.SIGTERM)
                gateway.wait(10)
            print(
                f"{protocol:<26}{r['sdk_first']:>10.2f}{r['gw_first']:>10.2f}"
                f"{r['gw_first'] - r['sdk_first']:>8.2f}{r['sdk_total']:>11.1f}"
                f"{r['gw_total']:>10.1f}{r['gw_total'] / r['sdk_total']:>8.2f}"
            )
        provider.kill()
        provider, endpoint = start_provider(args.concurrent_tokens)
        gateway, address = start_gateway(
            endpoint, protocols[0], folder, max_streams=args.concurrency
        )
        try:
            ok, errors, wall = asyncio.run(
                concurrent(address, args.concurrency, channels=max(1, args.concurrency // 50))
            )
            rss = peak_rss_mib(gateway.pid)
        finally:
            gateway.send_signal(signal.SIGTERM)
            gateway.wait(30)
        print(
            f"\n{args.concurrency} concurrent {args.concurrent_tokens}-token streams "
            f"({protocols[0]}): {ok} ok, {errors} errors, {wall:.1f} s wall, "
            f"{ok * args.concurrent_tokens / wall:,.0f} deltas/s, gateway peak RSS {rss:.0f} MiB"
        )
    finally:
        provider.kill()


if __name__ == "__main__":
    main()
