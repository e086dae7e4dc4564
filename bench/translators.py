"""Throughput of our SSE decoder + stream translators against the official SDKs.

Run: `.venv/bin/python bench/translators.py [--quick] [--only deepseek openrouter ...]`

For each provider it builds realistic streams of about 50, 2,000 and 20,000
SSE events (text deltas, tool-call argument fragments, pings, the usage
chunk), cuts the bytes into network-sized chunks (4-16 KiB, fixed seed), and
times, on the same chunks:

- ours: `SSEDecoder.feed` + the protocol's translator `handle`, `finish`;
- SDK core: what the SDK does with the body once the HTTP response exists:
  its own `Stream` (SSE decoding, JSON, chunk/event models) wrapped in its
  stream helper (`ChatCompletionStream` / `MessageStream`, which accumulate
  the final message), fed by an `httpx2.Response` over the same chunks. This
  is the fair "same work" comparison and the one the target is checked on;
- SDK client: `client.chat.completions.stream(...)` / `client.messages.stream(...)`
  through an `httpx2.MockTransport` answering with the same chunks (adds the
  request building and transport, which the gateway also pays, elsewhere);
- floor: the whole body decoded once, split on blank lines, plus
  `json.loads` of each data line; no framing rules, no accumulation: the
  least any reader must do.

`deepseek` and `openrouter` are Chat Completions streams from reasoning
models on OpenAI-compatible servers (70 % reasoning deltas; OpenRouter's
carry the text twice, as `reasoning` and as a `reasoning_details` item).

Each figure is the best of several repeats, run in interleaved rounds (the
machine is shared). Targets: ours >= 2x SDK core and floor/ours within 2.5x;
for Responses (issue 13): ours >= 20x the SDK's `responses.stream`
accumulation on the same chunks, and within 2x of the floor at 2,000 events.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import time
import warnings
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
from anthropic.lib.streaming import MessageStream
from anthropic.types import RawMessageStreamEvent
from openai.lib.streaming.chat import ChatCompletionStream
from openai.lib.streaming.responses import ResponseStream
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from navagent.core.events import MessageComplete
from navagent.gateway.protocols import PROTOCOLS
from navagent.gateway.sse import SSEDecoder

SIZES = (50, 2_000, 20_000)
FAKE_KEY = "sk-bench-not-a-real-key"
WORDS = "the cluster sandbox api web logs is running ready with three pods and one 🦅 é".split()


# --- stream builders ---------------------------------------------------------


def _sse(data: Any, event: str | None = None) -> str:
    line = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return (f"event: {event}\n" if event else "") + f"data: {line}\n\n"


def _pieces(rng: random.Random) -> str:
    return "".join(" " + rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def openai_stream(events: int, rng: random.Random) -> bytes:
    """A gpt-4o-style stream: text deltas, then two tool calls in fragments, usage, [DONE]."""
    head = {
        "id": "chatcmpl-B9x2kQ7fLmN3pR5sT8vW1yZ4aC6e",
        "object": "chat.completion.chunk",
        "created": 1747300000,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_07871e2ad8",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        obfuscation = "".join(rng.choice("abcdefXYZ0123") for _ in range(rng.randint(2, 12)))
        return _sse({**head, "choices": [choice], "usage": None, "obfuscation": obfuscation})

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    body_events = events - 4
    text_events = body_events * 8 // 10
    out += [chunk({"content": _pieces(rng)}) for _ in range(text_events)]
    fragments = body_events - text_events
    for call in range(2):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": call,
                            "id": f"call_{call}abcdefghijklmnopqrstu",
                            "type": "function",
                            "function": {"name": "sandbox_logs", "arguments": ""},
                        }
                    ]
                }
            )
        )
        args = json.dumps({"names": [rng.choice(WORDS) for _ in range(fragments)]})
        step = max(1, len(args) // max(1, fragments // 2 - 1))
        for start in range(0, len(args), step):
            piece = {"index": call, "function": {"arguments": args[start : start + step]}}
            out.append(chunk({"tool_calls": [piece]}))
    out.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 1200, "completion_tokens": events, "total_tokens": 1200 + events}
    out.append(_sse({**head, "choices": [], "usage": usage, "obfuscation": "Qx"}))
    out.append(_sse("[DONE]"))
    return "".join(out).encode()


def _compat_stream(events: int, rng: random.Random, *, details: bool) -> bytes:
    """A reasoning model on an OpenAI-compatible server: mostly reasoning, then text and a call.

    `details=False`: DeepSeek's shape (`reasoning_content` deltas, usage on the
    finish chunk). `details=True`: OpenRouter's, each delta carrying the text
    twice, as `reasoning` and as a `reasoning_details` item, with a signature.
    """
    head = {
        "id": "gen-1761200000-AbCdEfGhIjKlMnOpQrSt" if details else "9f1c2d3e-4b5a-6c7d-8e9f",
        "object": "chat.completion.chunk",
        "created": 1761200000,
        "model": "anthropic/claude-sonnet-4.5" if details else "deepseek-v4-pro",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**head, "choices": [choice], **extra})

    def thought(text: str) -> dict[str, Any]:
        if not details:
            return {"content": None, "reasoning_content": text}
        item = {"type": "reasoning.text", "text": text, "format": "anthropic-claude-v1", "index": 0}
        return {"role": "assistant", "content": "", "reasoning": text, "reasoning_details": [item]}

    out = [chunk({"role": "assistant", "content": ""})]
    body_events = events - 5
    reasoning_events = body_events * 7 // 10
    out += [chunk(thought(_pieces(rng))) for _ in range(reasoning_events)]
    if details:
        signature = {"type": "reasoning.text", "signature": "Et0BCkgIChACGAIqQA2s" * 12, "index": 0}
        out.append(chunk({"content": "", "reasoning_details": [signature]}))
    out += [chunk({"content": _pieces(rng)}) for _ in range(body_events - reasoning_events - 1)]
    call = {
        "index": 0,
        "id": "call_00_Vq1mZb7kQ2",
        "type": "function",
        "function": {"name": "sandbox_logs", "arguments": '{"name": "web"}'},
    }
    out.append(chunk({"content": None, "tool_calls": [call]}))
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": events,
        "total_tokens": 1200 + events,
        "completion_tokens_details": {"reasoning_tokens": reasoning_events},
    }
    out.append(chunk({"content": ""}, "tool_calls", usage=usage))
    out.append(_sse("[DONE]"))
    return "".join(out).encode()


def deepseek_stream(events: int, rng: random.Random) -> bytes:
    """DeepSeek thinking mode: `reasoning_content` (see `_compat_stream`)."""
    return _compat_stream(events, rng, details=False)


def openrouter_stream(events: int, rng: random.Random) -> bytes:
    """OpenRouter: `reasoning` plus `reasoning_details` on every delta (see `_compat_stream`)."""
    return _compat_stream(events, rng, details=True)


def anthropic_stream(events: int, rng: random.Random) -> bytes:
    """A Claude-style stream: text block, two tool_use blocks in fragments, pings, padding."""
    pad = " " * 8

    def padded(payload: dict[str, Any]) -> str:
        text = json.dumps(payload, separators=(",", ":"))
        return text[:-1] + pad + "}"

    def ev(kind: str, payload: dict[str, Any]) -> str:
        return _sse(padded({"type": kind, **payload}), kind)

    message: dict[str, Any] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1200, "output_tokens": 1},
    }
    out = [ev("message_start", {"message": message})]
    out.append(
        ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
    )
    out.append(_sse('{"type": "ping"}', "ping"))
    body_events = events - 10
    text_events = body_events * 8 // 10
    for _ in range(text_events):
        delta = {"type": "text_delta", "text": _pieces(rng)}
        out.append(ev("content_block_delta", {"index": 0, "delta": delta}))
    out.append(ev("content_block_stop", {"index": 0}))
    fragments = (body_events - text_events) // 2
    for index in (1, 2):
        block = {"type": "tool_use", "id": f"toolu_0{index}A09q90qw90lq917835lq9", "name": "x"}
        out.append(
            ev("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
        )
        args = json.dumps({"names": [rng.choice(WORDS) for _ in range(fragments)]})
        step = max(1, len(args) // max(1, fragments))
        for start in range(0, len(args), step):
            delta = {"type": "input_json_delta", "partial_json": args[start : start + step]}
            out.append(ev("content_block_delta", {"index": index, "delta": delta}))
        out.append(ev("content_block_stop", {"index": index}))
    out.append(
        ev(
            "message_delta",
            {
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": events},
            },
        )
    )
    out.append(ev("message_stop", {}))
    return "".join(out).encode()


def responses_stream(events: int, rng: random.Random) -> bytes:
    """A gpt-5-style Responses stream: reasoning summary, text, two calls, the final response.

    As on the real wire, each event carries its `sequence_number`, deltas carry
    `obfuscation` padding, and `response.completed` repeats the whole output.
    """
    seq = itertools.count()

    def ev(kind: str, **fields: Any) -> str:
        return _sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

    def pad() -> str:
        return "".join(rng.choice("abcdefXYZ0123") for _ in range(rng.randint(2, 12)))

    response: dict[str, Any] = {
        "id": "resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33",
        "object": "response",
        "created_at": 1758034836,
        "status": "in_progress",
        "model": "gpt-5-2025-08-07",
        "output": [],
        "usage": None,
    }
    out = [ev("response.created", response=response), ev("response.in_progress", response=response)]
    body_events = events - 20
    summary_events = body_events // 10
    text_events = body_events * 7 // 10
    fragments = (body_events - summary_events - text_events) // 2
    rs = "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"
    encrypted = "gAAAAAB" + "x" * 3000
    out.append(
        ev(
            "response.output_item.added",
            output_index=0,
            item={"id": rs, "type": "reasoning", "summary": []},
        )
    )
    summary: list[str] = []
    where = {"item_id": rs, "output_index": 0, "summary_index": 0}
    empty_summary = {"type": "summary_text", "text": ""}
    out.append(ev("response.reasoning_summary_part.added", **where, part=empty_summary))
    for _ in range(summary_events):
        piece = _pieces(rng)
        summary.append(piece)
        out.append(
            ev(
                "response.reasoning_summary_text.delta",
                item_id=rs,
                output_index=0,
                summary_index=0,
                delta=piece,
                obfuscation=pad(),
            )
        )
    summary_part = {"type": "summary_text", "text": "".join(summary)}
    out.append(ev("response.reasoning_summary_part.done", **where, part=summary_part))
    reasoning = {
        "id": rs,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "".join(summary)}],
        "encrypted_content": encrypted,
    }
    out.append(ev("response.output_item.done", output_index=0, item=reasoning))
    msg = "msg_0050471a34b36ae60068c97bf19d9c819590eaf42c0edc1042"
    item = {
        "id": msg,
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    out.append(ev("response.output_item.added", output_index=1, item=item))
    at = {"item_id": msg, "output_index": 1, "content_index": 0}
    empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    out.append(ev("response.content_part.added", **at, part=empty))
    text: list[str] = []
    for _ in range(text_events):
        piece = _pieces(rng)
        text.append(piece)
        out.append(
            ev(
                "response.output_text.delta",
                item_id=msg,
                output_index=1,
                content_index=0,
                delta=piece,
                logprobs=[],
                obfuscation=pad(),
            )
        )
    part = {**empty, "text": "".join(text)}
    out.append(ev("response.output_text.done", **at, text=part["text"], logprobs=[]))
    out.append(ev("response.content_part.done", **at, part=part))
    message = {**item, "status": "completed", "content": [part]}
    out.append(ev("response.output_item.done", output_index=1, item=message))
    output: list[dict[str, Any]] = [reasoning, message]
    for call in range(2):
        fc = f"fc_{call}050471a34b36ae60068c97bf19d9c819590eaf42c0edc104"
        call_item = {
            "id": fc,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": f"call_{call}WXgs68YprAjp6t0371hiPOI",
            "name": "sandbox_logs",
        }
        out.append(ev("response.output_item.added", output_index=2 + call, item=call_item))
        args = json.dumps({"names": [rng.choice(WORDS) for _ in range(fragments)]})
        step = max(1, len(args) // max(1, fragments - 1))
        for start in range(0, len(args), step):
            out.append(
                ev(
                    "response.function_call_arguments.delta",
                    item_id=fc,
                    output_index=2 + call,
                    delta=args[start : start + step],
                    obfuscation=pad(),
                )
            )
        out.append(
            ev(
                "response.function_call_arguments.done",
                item_id=fc,
                output_index=2 + call,
                arguments=args,
            )
        )
        done = {**call_item, "status": "completed", "arguments": args}
        out.append(ev("response.output_item.done", output_index=2 + call, item=done))
        output.append(done)
    usage = {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1024},
        "output_tokens": events,
        "output_tokens_details": {"reasoning_tokens": 448},
        "total_tokens": 1200 + events,
    }
    final = {**response, "status": "completed", "output": output, "usage": usage}
    out.append(ev("response.completed", response=final))
    return "".join(out).encode()


def network_chunks(body: bytes, rng: random.Random) -> list[bytes]:
    chunks, i = [], 0
    while i < len(body):
        size = rng.randint(4 * 1024, 16 * 1024)
        chunks.append(body[i : i + size])
        i += size
    return chunks


# --- contenders --------------------------------------------------------------


def ours(protocol: str) -> Callable[[list[bytes]], str]:
    new_translator = PROTOCOLS[protocol].new_translator

    def run(chunks: list[bytes]) -> str:
        decoder, translator = SSEDecoder(), new_translator()
        handle = translator.handle
        last: list[Any] = []
        for chunk in chunks:
            for event in decoder.feed(chunk):
                last = handle(event)
        decoder.finish()
        last += translator.finish()
        final = last[-1]
        assert isinstance(final, MessageComplete), final
        return final.message.content

    return run


def _response(chunks: list[bytes]) -> httpx2.Response:
    request = httpx2.Request("POST", "http://localhost/v1/x")
    headers = {"content-type": "text/event-stream"}
    return httpx2.Response(200, content=iter(chunks), headers=headers, request=request)


def _transport_client(chunks_box: list[list[bytes]]) -> httpx2.Client:
    def answer(_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, content=iter(chunks_box[0]), headers={"content-type": "text/event-stream"}
        )

    return httpx2.Client(transport=httpx2.MockTransport(answer))


def openai_sdk_core() -> Callable[[list[bytes]], str]:
    client = openai.OpenAI(api_key=FAKE_KEY, base_url="http://localhost/v1")

    def run(chunks: list[bytes]) -> str:
        raw = openai.Stream(cast_to=ChatCompletionChunk, response=_response(chunks), client=client)
        stream = ChatCompletionStream(
            raw_stream=raw, response_format=openai.omit, input_tools=openai.omit
        )
        for _ in stream:
            pass
        return stream.get_final_completion().choices[0].message.content or ""

    return run


def openai_sdk_client() -> Callable[[list[bytes]], str]:
    box: list[list[bytes]] = [[]]
    client = openai.OpenAI(
        api_key=FAKE_KEY, base_url="http://localhost/v1", http_client=_transport_client(box)
    )

    def run(chunks: list[bytes]) -> str:
        box[0] = chunks
        messages: Any = [{"role": "user", "content": "hi"}]
        with client.chat.completions.stream(model="gpt-4o", messages=messages) as stream:
            for _ in stream:
                pass
            return stream.get_final_completion().choices[0].message.content or ""

    return run


def responses_sdk_core() -> Callable[[list[bytes]], str]:
    client = openai.OpenAI(api_key=FAKE_KEY, base_url="http://localhost/v1")

    def run(chunks: list[bytes]) -> str:
        # ResponseStreamEvent is a union alias, which Stream's `type[_T]` cannot express.
        event_type: Any = ResponseStreamEvent
        raw: openai.Stream[Any] = openai.Stream(
            cast_to=event_type, response=_response(chunks), client=client
        )
        stream = ResponseStream(
            raw_stream=raw, text_format=openai.omit, input_tools=openai.omit, starting_after=None
        )
        for _ in stream:
            pass
        return stream.get_final_response().output_text

    return run


def responses_sdk_client() -> Callable[[list[bytes]], str]:
    box: list[list[bytes]] = [[]]
    client = openai.OpenAI(
        api_key=FAKE_KEY, base_url="http://localhost/v1", http_client=_transport_client(box)
    )

    def run(chunks: list[bytes]) -> str:
        box[0] = chunks
        with client.responses.stream(model="gpt-5", input="hi") as stream:
            for _ in stream:
                pass
            return stream.get_final_response().output_text

    return run


def anthropic_sdk_core() -> Callable[[list[bytes]], str]:
    client = anthropic.Anthropic(api_key=FAKE_KEY, base_url="http://localhost")

    def run(chunks: list[bytes]) -> str:
        # RawMessageStreamEvent is a union alias, which Stream's `type[_T]` cannot express.
        event_type: Any = RawMessageStreamEvent
        raw: anthropic.Stream[RawMessageStreamEvent] = anthropic.Stream(
            cast_to=event_type, response=_response(chunks), client=client
        )
        stream = MessageStream(raw, output_format=anthropic.NOT_GIVEN)
        for _ in stream:
            pass
        message = stream.get_final_message()
        return "".join(block.text for block in message.content if block.type == "text")

    return run


def anthropic_sdk_client() -> Callable[[list[bytes]], str]:
    box: list[list[bytes]] = [[]]
    client = anthropic.Anthropic(
        api_key=FAKE_KEY, base_url="http://localhost", http_client=_transport_client(box)
    )

    def run(chunks: list[bytes]) -> str:
        box[0] = chunks
        with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for _ in stream:
                pass
            message = stream.get_final_message()
        return "".join(block.text for block in message.content if block.type == "text")

    return run


def floor(chunks: list[bytes]) -> str:
    text = b"".join(chunks).decode()
    loads = json.loads
    for block in text.split("\n\n"):
        at = block.find("data:")
        if at >= 0 and not block.startswith("[DONE]", at + 6):
            loads(block[at + 5 :])
    return ""


# --- harness -----------------------------------------------------------------


def best_times(
    contenders: dict[str, Callable[[list[bytes]], str]], chunks: list[bytes], budget: float
) -> dict[str, float]:
    """Best wall time of each contender over repeats filling about `budget` seconds each.

    Contenders run in rounds, one run each per round, so a burst of load from
    other processes on this shared machine hits all of them rather than one.
    A contender stops after 3 runs once its budget is spent, or after its
    first run if that alone exceeded the budget (the SDKs on big streams).
    """
    best = dict.fromkeys(contenders, float("inf"))
    spent = dict.fromkeys(contenders, 0.0)
    runs = dict.fromkeys(contenders, 0)

    def wants_more(name: str) -> bool:
        return spent[name] < budget or (runs[name] < 3 and best[name] < budget)

    while any(wants_more(name) for name in contenders):
        for name, run in contenders.items():
            if wants_more(name):
                start = time.perf_counter()
                run(chunks)
                elapsed = time.perf_counter() - start
                best[name] = min(best[name], elapsed)
                spent[name] += elapsed
                runs[name] += 1
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--only", nargs="*", help="providers to run (default: all)")
    args = parser.parse_args()
    budget = 0.4 if args.quick else 1.5
    warnings.simplefilter("ignore", DeprecationWarning)  # SDK model-name deprecation notices
    providers = {
        "openai": ("openai_chat_completions", openai_stream, openai_sdk_core, openai_sdk_client),
        "responses": (
            "openai_responses",
            responses_stream,
            responses_sdk_core,
            responses_sdk_client,
        ),
        "anthropic": (
            "anthropic_messages",
            anthropic_stream,
            anthropic_sdk_core,
            anthropic_sdk_client,
        ),
        # Issue 23: reasoning-heavy streams from OpenAI-compatible servers.
        "deepseek": (
            "openai_chat_completions",
            deepseek_stream,
            openai_sdk_core,
            openai_sdk_client,
        ),
        "openrouter": (
            "openai_chat_completions",
            openrouter_stream,
            openai_sdk_core,
            openai_sdk_client,
        ),
    }
    if args.only:
        providers = {name: providers[name] for name in args.only}
    header = (
        f"{'provider':<10}{'events':>7}{'KiB':>7} | {'ours ev/s':>10}{'MB/s':>7} | "
        f"{'SDK core ev/s':>13}{'MB/s':>6} | {'SDK client':>10} | {'floor ev/s':>10}{'MB/s':>7} | "
        f"{'ours/core':>9}{'ours/client':>12}{'floor/ours':>11}"
    )
    print(header)
    print("-" * len(header))
    failures = []
    for provider, (protocol, build, core, client) in providers.items():
        contenders = {"ours": ours(protocol), "core": core(), "client": client(), "floor": floor}
        for size in SIZES:
            rng = random.Random(size)
            body = build(size, rng)
            chunks = network_chunks(body, rng)
            events = body.count(b"\n\n")
            texts = {name: run(chunks) for name, run in contenders.items() if name != "floor"}
            assert len(set(texts.values())) == 1, f"{provider}/{size}: contenders disagree"
            times = best_times(contenders, chunks, budget)
            rate = {name: events / t for name, t in times.items()}
            mbps = {name: len(body) / t / 1e6 for name, t in times.items()}
            vs_core = times["core"] / times["ours"]
            vs_client = times["client"] / times["ours"]
            vs_floor = times["ours"] / times["floor"]
            print(
                f"{provider:<10}{events:>7}{len(body) / 1024:>7.0f} | "
                f"{rate['ours']:>10,.0f}{mbps['ours']:>7.1f} | "
                f"{rate['core']:>13,.0f}{mbps['core']:>6.1f} | {rate['client']:>10,.0f} | "
                f"{rate['floor']:>10,.0f}{mbps['floor']:>7.1f} | "
                f"{vs_core:>8.1f}x{vs_client:>11.1f}x{vs_floor:>10.2f}x"
            )
            if provider == "responses":  # issue 13's targets
                if min(vs_core, vs_client) < 20:
                    slower = min(vs_core, vs_client)
                    failures.append(f"{provider}/{events}: only {slower:.1f}x the SDK stream")
                if size == 2_000 and vs_floor > 2:
                    failures.append(f"{provider}/{events}: {vs_floor:.2f}x the floor")
                continue
            if vs_core < 2:
                failures.append(f"{provider}/{events}: only {vs_core:.1f}x the SDK core")
            if vs_floor > 2.5:
                failures.append(f"{provider}/{events}: {vs_floor:.2f}x the floor")
    print()
    print("targets: ours/core >= 2x, floor/ours <= 2.5x (time ours / time floor);")
    print("responses: ours >= 20x the SDK (core and responses.stream), floor/ours <= 2x at 2,000")
    print("all targets met" if not failures else "MISSED: " + "; ".join(failures))


if __name__ == "__main__":
    main()
