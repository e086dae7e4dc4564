"""Gemini transcripts, the real recordings first, against the `google-genai` SDK's own parse.

The SDK reads each body from a local HTTP server (no network, a fake key);
our translation must give the same text, calls, thought signatures (the
bytes the SDK decodes), finish reason and token counts.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from navagent.core.wire_formats import wire_format
from tests.gateway.streams import TRANSCRIPTS, final_message, transcript, translate, turn_end

genai = pytest.importorskip("google.genai")

SAMPLES = sorted(
    path.stem
    for path in (TRANSCRIPTS / "gemini").glob("*.sse")
    if path.stem.startswith("real_") or path.stem.startswith(("text_", "thinking_", "call_"))
)


class _Body(BaseHTTPRequestHandler):
    body = b""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(body: bytes) -> str:
        handler = type("Handler", (_Body,), {"body": body})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def sdk_parse(base_url: str) -> dict[str, Any]:
    """What `generate_content_stream` gives for the served body, in neutral terms."""
    from google.genai import types

    version = wire_format("gemini").path.split("/")[1]
    client = genai.Client(
        api_key="fake-key", http_options=types.HttpOptions(base_url=base_url, api_version=version)
    )
    text, calls, signatures, finish, usage = "", [], [], None, None
    for chunk in client.models.generate_content_stream(model="m", contents="hi"):
        candidate = chunk.candidates[0] if chunk.candidates else None
        for part in candidate.content.parts or () if candidate and candidate.content else ():
            if part.function_call is not None:
                calls.append((part.function_call.name, part.function_call.args or {}))
            elif part.text and not part.thought:
                text += part.text
            if part.thought_signature:
                signatures.append(part.thought_signature)
        if candidate is not None and candidate.finish_reason is not None:
            finish = candidate.finish_reason.value
        usage = chunk.usage_metadata or usage
    return {
        "text": text,
        "calls": calls,
        "signatures": signatures,
        "finish": finish,
        "usage": usage,
    }


@pytest.mark.parametrize("name", SAMPLES)
def test_gemini_transcript_matches_the_sdk(name: str, serve: Any) -> None:
    body = transcript("gemini", name)
    expected = sdk_parse(serve(body))
    events = translate("gemini", body, origin="google_gemini:test")
    message = final_message(events).message
    assert message.content == expected["text"]
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == expected["calls"]
    payloads = [json.loads(part.payload) for part in message.thinking if part.payload]
    ours = [base64.b64decode(s["signature"]) for p in payloads for s in p["signatures"]]
    assert ours == expected["signatures"]
    end = turn_end(events)
    assert end.provider_finish_reason == expected["finish"]
    usage = expected["usage"]
    assert end.usage.input_tokens == (usage.prompt_token_count or 0)
    assert end.usage.reasoning_tokens == (usage.thoughts_token_count or 0)
    assert end.usage.output_tokens == (usage.candidates_token_count or 0) + (
        usage.thoughts_token_count or 0
    )


def test_the_real_recordings_are_here() -> None:
    assert sum(name.startswith("real_") for name in SAMPLES) == 2
    assert all((TRANSCRIPTS / "gemini" / f"{name}.sse").read_bytes().endswith(b"\r\n\r\n")
               for name in SAMPLES)  # fmt: skip
