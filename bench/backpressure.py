"""Gateway memory under a slow client (issue 9): back-pressure, not buffering.

Three processes: a provider that firehoses N one-token deltas (default
1,000,000) as fast as its socket takes them, `nav gateway serve` routed to it,
and this process as a client that reads one message per second. Without
back-pressure the gateway would read the whole answer while the client
dawdles; with it, the gateway stops reading the provider and TCP pushes back.

Reports the gateway's RSS before the stream and its peak (VmHWM) after, the
growth (target: under 20 MB), the time taken, the number of messages, and
whether the full text arrived (it must).

    .venv/bin/python bench/backpressure.py [--tokens 1000000] [--interval 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gateway import peak_rss_mib, start_gateway
from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

TOKEN = " ab"

PROVIDER_SOURCE = textwrap.dedent(
    """
    import asyncio, json, sys

    TOKENS = int(sys.argv[1])
    BASE = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-bench"}

    def frame(delta, finish=None, **extra):
        body = {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra}
        data = b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\\n\\n"
        return b"%x\\r\\n%s\\r\\n" % (len(data), data)

    HEAD = (b"HTTP/1.1 200 OK\\r\\ncontent-type: text/event-stream\\r\\n"
            b"transfer-encoding: chunked\\r\\n\\r\\n")
    DELTA = frame({"content": __TOKEN__})
    BATCH = 1000

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                lines = head.decode("latin-1").split("\\r\\n")
                length = next((int(l.split(":", 1)[1]) for l in lines
                               if l.lower().startswith("content-length:")), 0)
                body = json.loads(await reader.readexactly(length))
                tokens = TOKENS if body["messages"][-1]["content"] == "go" else 1
                writer.write(HEAD + frame({"role": "assistant", "content": ""}))
                left = tokens
                while left:
                    n = min(BATCH, left)
                    writer.write(DELTA * n)
                    await writer.drain()  # blocks while the gateway is not reading
                    left -= n
                usage = {"prompt_tokens": 9, "completion_tokens": tokens, "total_tokens": 0}
                writer.write(frame({}, "stop"))
                data = json.dumps({**BASE, "choices": [], "usage": usage}).encode()
                payload = b"data: " + data + b"\\n\\n" + b"data: [DONE]\\n\\n"
                writer.write(b"%x\\r\\n%s\\r\\n0\\r\\n\\r\\n" % (len(payload), payload))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())
    """
).replace("__TOKEN__", repr(TOKEN))


def current_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 2**20),
    # Without BDP probing the client's HTTP/2 window stays at 64 KiB, so its
    # slowness reaches the gateway. With it, gRPC grows the window to ~6 MB and
    # absorbs ~4,600 small messages in the client's own buffers first: a
    # one-message-per-second reader would then take over an hour.
    ("grpc.http2.bdp_probe", 0),
]


async def warm_up(address: str) -> None:
    """One one-token stream, so the baseline already holds imports and connection pools."""
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="warm")])
        async for _ in chat_pb2_grpc.ChatStub(channel).ChatStream(request):
            pass


async def read_slowly(address: str, interval: float, pid: int = 0) -> tuple[int, str, str]:
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        stub = chat_pb2_grpc.ChatStub(channel)
        messages, deltas, final = 0, [], ""
        request = pb.ChatStreamRequest(messages=[pb.ChatMessage(role="user", content="go")])
        async for event in stub.ChatStream(request):
            messages += 1
            kind = event.WhichOneof("event")
            if kind == "content_delta":
                deltas.append(event.content_delta.text)
            elif kind == "message":
                final = event.message.content
            elif kind == "error":
                raise RuntimeError(f"the stream failed: {event.error.message}")
            await asyncio.sleep(interval)  # a slow client: one message per interval
            if pid and messages % 10 == 0:
                chars = sum(map(len, deltas))
                print(
                    f"  {messages} messages, {chars:,} characters, "
                    f"gateway RSS {current_rss_mib(pid):.1f} MiB",
                    file=sys.stderr,
                )
        return messages, "".join(deltas), final


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()

    provider = subprocess.Popen(
        [sys.executable, "-c", PROVIDER_SOURCE, str(args.tokens)], stdout=subprocess.PIPE, text=True
    )
    assert provider.stdout is not None
    endpoint = f"http://127.0.0.1:{provider.stdout.readline().strip()}"
    with tempfile.TemporaryDirectory() as folder:
        gateway, address = start_gateway(
            endpoint, "openai_chat_completions", Path(folder), max_streams=4
        )
        try:
            time.sleep(0.5)
            asyncio.run(warm_up(address))
            before = current_rss_mib(gateway.pid)
            started = time.monotonic()
            messages, deltas, final = asyncio.run(read_slowly(address, args.interval, gateway.pid))
            seconds = time.monotonic() - started
            peak = peak_rss_mib(gateway.pid)
        finally:
            gateway.terminate()
            gateway.wait(10)
            provider.terminate()
    expected = TOKEN * args.tokens
    complete = deltas == expected and final == expected
    print(f"tokens            {args.tokens:,} ({len(expected):,} characters)")
    print(f"client            one message per {args.interval:g}s")
    print(f"messages          {messages}")
    print(f"duration          {seconds:.1f}s")
    print(f"gateway RSS       {before:.1f} MiB before, {peak:.1f} MiB peak")
    print(f"RSS growth        {peak - before:.1f} MiB (target < 20 MB)")
    print(f"full text         {'yes' if complete else 'NO'}")
    if not complete:
        sys.exit(1)


if __name__ == "__main__":
    main()
