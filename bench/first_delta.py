"""Time to first delta through the gateway, against its floors of the same run (issue 33).

A provider stand-in (its own process, plain asyncio) answers in the OpenAI
Chat Completions or Anthropic Messages format, in two shapes:

- `one`: one event per read (head, then each event on its own write, 1 ms apart);
- `burst`: the response head, a 2 ms pause, then 200 events and the end in
  one write, as fast providers and buffering proxies deliver them.

Each shape and protocol is measured, interleaved round by round, through:

- `sdk`: the official SDK calling the stand-in directly (the target's baseline);
- `proxy-httpx` / `proxy-aiohttp`: a bare grpc.aio proxy (its own process:
  POST, split SSE, parse JSON, one gRPC message per delta) over httpx or
  aiohttp, the floor of any gRPC gateway written this way;
- `gateway`: `nav gateway serve` (the `--nav` command; another checkout's to
  compare commits).

The figure is the median time from the call to the first content delta, and
`added` is the gateway's median minus the SDK's (target < 1 ms).

    .venv/bin/python bench/first_delta.py [--rounds 40] [--nav "path/to/nav"]
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from navagent.core._proto import chat_pb2 as pb
from navagent.core._proto import chat_pb2_grpc

PROVIDER = textwrap.dedent(
    """
    import asyncio, json

    BURST = 200

    def sse(data, event=None):
        head = f"event: {event}\\n" if event else ""
        return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\\n\\n").encode()

    def openai(tokens):
        base = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        def chunk(delta, finish=None):
            return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        return ([chunk({"role": "assistant", "content": ""})]
                + [chunk({"content": f" tok{i}"}) for i in range(tokens)]
                + [chunk({}, "stop"), sse({**base, "choices": [], "usage": {
                    "prompt_tokens": 9, "completion_tokens": tokens, "total_tokens": 9 + tokens}}),
                   b"data: [DONE]\\n\\n"])

    def anthropic(tokens):
        start = {"type": "message_start", "message": {"id": "msg_b", "type": "message",
                 "role": "assistant", "model": "m", "content": [], "stop_reason": None,
                 "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}}
        return ([sse(start, "message_start"),
                 sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")]
                + [sse({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": f" tok{i}"}},
                       "content_block_delta") for i in range(tokens)]
                + [sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                   sse({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                        "stop_sequence": None}, "usage": {"output_tokens": tokens}},
                       "message_delta"),
                   sse({"type": "message_stop"}, "message_stop")])

    def chunked(frame):
        return b"%x\\r\\n%s\\r\\n" % (len(frame), frame)

    FRAMES = {(shape, path): (openai if path.endswith("completions") else anthropic)(
                  BURST if shape == "burst" else 6)
              for shape in ("one", "burst")
              for path in ("/v1/chat/completions", "/v1/messages")}
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
                shape, _, api = path.lstrip("/").partition("/")
                frames = FRAMES[(shape, "/" + api)]
                writer.write(HEAD)
                await writer.drain()
                if shape == "burst":
                    await asyncio.sleep(0.002)
                    writer.write(b"".join(map(chunked, frames)) + b"0\\r\\n\\r\\n")
                else:
                    for frame in frames:
                        await asyncio.sleep(0.001)
                        writer.write(chunked(frame))
                    writer.write(b"0\\r\\n\\r\\n")
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
)

PROXY = textwrap.dedent(
    """
    import asyncio, json, sys
    import grpc
    from navagent.core._proto import chat_pb2 as pb

    CLIENT, BASE = sys.argv[1], sys.argv[2]
    PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}

    def texts(data, api):
        if api == "openai":
            choices = data.get("choices") or [{}]
            return choices[0].get("delta", {}).get("content")
        return data.get("delta", {}).get("text")

    async def main():
        if CLIENT == "httpx":
            import httpx
            client = httpx.AsyncClient(timeout=None)
            async def chunks(url):
                async with client.stream("POST", url, content=b"{}") as response:
                    async for chunk in response.aiter_bytes():
                        yield chunk
        else:
            import aiohttp
            client = aiohttp.ClientSession()
            async def chunks(url):
                async with client.post(url, data=b"{}") as response:
                    async for chunk in response.content.iter_any():
                        yield chunk

        async def handler(request, context):
            shape, api = request.routing_hint.split("-")
            buffer = b""
            async for chunk in chunks(f"{BASE}/{shape}{PATHS[api]}"):
                *events, buffer = (buffer + chunk).split(b"\\n\\n")
                for event in events:
                    for line in event.split(b"\\n"):
                        if line.startswith(b"data: {"):
                            text = texts(json.loads(line[6:]), api)
                            if text:
                                await context.write(
                                    pb.ChatStreamEvent(content_delta=pb.ContentDelta(text=text)))

        server = grpc.aio.server()
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            "navigator.chat.v1.Chat",
            {"ChatStream": grpc.unary_stream_rpc_method_handler(
                handler, request_deserializer=pb.ChatStreamRequest.FromString,
                response_serializer=pb.ChatStreamEvent.SerializeToString)})])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(port, flush=True)
        await server.wait_for_termination()

    asyncio.run(main())
    """
)

KEY = "sk-fake-bench"
SHAPES = ("one", "burst")
APIS = {"openai": "openai_chat_completions", "anthropic": "anthropic_messages"}


def spawn(source: str, *args: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", source, *args], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def start_gateway(nav: list[str], port: int, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    routes = folder / "routes.yaml"
    routes.write_text(
        "routes:\n"
        + "".join(
            f"  - routing_hint: {shape}-{api}\n"
            f"    endpoint: http://127.0.0.1:{port}/{shape}\n"
            f"    model: m\n    protocols: [{protocol}]\n    api_key: {KEY}\n"
            for shape in SHAPES
            for api, protocol in APIS.items()
        ),
        encoding="utf-8",
    )
    log = folder / "gateway.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*nav, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes)],
            stderr=sink,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8").splitlines():
            if "gateway ready on " in line:
                return process, line.split("gateway ready on ")[1].split()[0].rstrip(":,")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the gateway did not start: {log.read_text(encoding='utf-8')}")


def grpc_first(stub: Any, hint: str) -> Callable[[], Awaitable[float]]:
    async def call() -> float:
        started, first = time.perf_counter(), 0.0
        request = pb.ChatStreamRequest(
            routing_hint=hint, messages=[pb.ChatMessage(role="user", content="go")]
        )
        async for event in stub.ChatStream(request):
            if not first and event.WhichOneof("event") == "content_delta":
                first = time.perf_counter() - started
        return first

    return call


def sdk_first(endpoint: str, shape: str, api: str) -> Callable[[], Awaitable[float]]:
    import anthropic
    import openai

    openai_sdk = openai.AsyncOpenAI(base_url=f"{endpoint}/{shape}/v1", api_key=KEY, max_retries=0)
    anthropic_sdk = anthropic.AsyncAnthropic(
        base_url=f"{endpoint}/{shape}", api_key=KEY, max_retries=0
    )

    async def call() -> float:
        started, first = time.perf_counter(), 0.0
        if api == "openai":
            stream = await openai_sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}], stream=True
            )
            async for chunk in stream:
                if not first and chunk.choices and chunk.choices[0].delta.content:
                    first = time.perf_counter() - started
            return first
        async with anthropic_sdk.messages.stream(
            model="m", max_tokens=4096, messages=[{"role": "user", "content": "go"}]
        ) as events:
            async for text in events.text_stream:
                if not first and text:
                    first = time.perf_counter() - started
        return first

    return call


async def measure(endpoint: str, addresses: dict[str, str], rounds: int) -> dict[str, Any]:
    channels = {name: grpc.aio.insecure_channel(address) for name, address in addresses.items()}
    results: dict[str, Any] = {}
    try:
        for shape in SHAPES:
            for api in APIS:
                hint = f"{shape}-{api}"
                calls = {"sdk": sdk_first(endpoint, shape, api)}
                calls |= {
                    name: grpc_first(chat_pb2_grpc.ChatStub(channel), hint)
                    for name, channel in channels.items()
                }
                for call in calls.values():  # warm every connection
                    await call()
                    await call()
                times: dict[str, list[float]] = {name: [] for name in calls}
                for _ in range(rounds):  # interleaved: machine noise hits all alike
                    for name, call in calls.items():
                        times[name].append(await call())
                results[hint] = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
    finally:
        for channel in channels.values():
            await channel.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument(
        "--nav", default=str(Path(sys.executable).with_name("nav")), help="the nav to measure"
    )
    args = parser.parse_args()
    provider, port = spawn(PROVIDER)
    endpoint = f"http://127.0.0.1:{port}"
    processes: list[subprocess.Popen[Any]] = [provider]
    try:
        addresses: dict[str, str] = {}
        for client in ("httpx", "aiohttp"):
            proxy, proxy_port = spawn(PROXY, client, endpoint)
            processes.append(proxy)
            addresses[f"proxy-{client}"] = f"127.0.0.1:{proxy_port}"
        with tempfile.TemporaryDirectory(prefix="nav-bench-first-") as folder:
            gateway, address = start_gateway(args.nav.split(), port, Path(folder))
            processes.append(gateway)
            addresses["gateway"] = address
            results = asyncio.run(measure(endpoint, addresses, args.rounds))
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
            process.wait(10)
    names = ["sdk", *addresses]
    print(f"median time to first delta, ms ({args.rounds} interleaved rounds)")
    print(f"{'case':<18}" + "".join(f"{name:>15}" for name in names) + f"{'added':>9}")
    for case, row in results.items():
        added = row["gateway"] - row["sdk"]
        print(f"{case:<18}" + "".join(f"{row[n]:>15.2f}" for n in names) + f"{added:>+9.2f}")


if __name__ == "__main__":
    main()
