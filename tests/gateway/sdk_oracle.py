"""The official SDKs' own stream accumulators, run on given bytes (test oracle only).

Produces `expected` dicts in the conformance corpus format
(../shared/conformance/real/README.md), so the hand-made transcripts can be
checked against the SDKs with the same comparison as the real recordings.
The SDKs talk to an `httpx2.MockTransport`: no network, a fake key.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import anthropic
import httpx2
import openai

from tests.gateway.streams import FAKE_KEY


def _client(body: bytes) -> httpx2.Client:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    return httpx2.Client(transport=httpx2.MockTransport(answer))


def openai_expected(body: bytes) -> dict[str, Any]:
    client = openai.OpenAI(
        api_key=FAKE_KEY, base_url="http://localhost/v1", http_client=_client(body)
    )
    with client.chat.completions.stream(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        last_usage = None
        for event in stream:
            if event.type == "chunk" and event.chunk.usage is not None:
                last_usage = event.chunk.usage
        # Not get_final_completion(): it refuses finish_reason "length".
        snapshot = stream.current_completion_snapshot
    choice = next(c for c in snapshot.choices if c.index == 0)
    calls = []
    for call in choice.message.tool_calls or []:
        try:
            parsed, valid = json.loads(call.function.arguments), True
        except ValueError:
            parsed, valid = None, False
        calls.append(
            {
                "id": call.id,
                "name": call.function.name,
                "arguments": call.function.arguments,
                "arguments_parsed": parsed,
                "arguments_valid_json": valid,
            }
        )
    return {
        "choices": [
            {
                "index": 0,
                "finish_reason": choice.finish_reason,
                "content": choice.message.content,
                "refusal": choice.message.refusal,
                "tool_calls": calls,
            }
        ],
        "usage": snapshot.usage.model_dump(exclude_none=True) if snapshot.usage else None,
        # As in the corpus: the SDK keeps the last usage even when it is null.
        "usage_from_last_nonnull_usage_chunk": last_usage.model_dump() if last_usage else None,
    }


def anthropic_expected(body: bytes) -> dict[str, Any]:
    client = anthropic.Anthropic(
        api_key=FAKE_KEY, base_url="http://localhost", http_client=_client(body)
    )
    with warnings.catch_warnings():
        # The SDK warns about model names it considers deprecated; irrelevant here.
        warnings.simplefilter("ignore", DeprecationWarning)
        with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for _ in stream:
                pass
            message = stream.get_final_message()
    return {
        "stop_reason": message.stop_reason,
        "content": [block.model_dump(exclude_none=True) for block in message.content],
        "usage": message.usage.model_dump(exclude_none=True),
    }


def responses_expected(body: bytes) -> dict[str, Any]:
    """The openai SDK's `responses.stream` result, in the shape of the Responses corpus."""
    import hashlib

    client = openai.OpenAI(
        api_key=FAKE_KEY, base_url="http://localhost/v1", http_client=_client(body)
    )
    with client.responses.stream(model="gpt-5", input="x") as stream:
        for _ in stream:
            pass
        response = stream.get_final_response()
    output: list[dict[str, Any]] = []
    for item in response.output:
        if item.type == "message":
            parts = [part.model_dump(exclude_none=True) for part in item.content]
            output.append({"type": "message", "id": item.id, "content": parts})
        elif item.type == "function_call":
            output.append(item.model_dump(exclude_none=True))
        elif item.type == "reasoning":
            encrypted = item.encrypted_content
            output.append(
                {
                    "type": "reasoning",
                    "id": item.id,
                    "summary": [part.text for part in item.summary],
                    "encrypted_content": {
                        "chars": len(encrypted),
                        "sha256": hashlib.sha256(encrypted.encode()).hexdigest(),
                    }
                    if encrypted
                    else None,
                }
            )
        else:
            output.append({"type": item.type, "other_item": True})
    return {
        "sdk": {"final_from": "get_final_response()"},
        "status": response.status,
        "incomplete_details": None,
        "output": output,
        "output_text": response.output_text,
        "usage": response.usage.model_dump(exclude_none=True) if response.usage else None,
    }
