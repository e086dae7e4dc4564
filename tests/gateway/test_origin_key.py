"""The route's key is part of its origin: one endpoint and model behind two organisations' keys.

A common failover: org A's key, then org B's, for the same endpoint and model.
Encrypted reasoning can only be read by the organisation that wrote it, so
after the failover org B must get a history without org A's opaque parts
(which every provider accepts), not the parts themselves (which it refuses,
`invalid_encrypted_content`). Through the gateway: a Dispatcher whose first
route answers turn 1 with opaque reasoning, then refuses turn 2's key, so turn
2 fails over to the second route.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

from navagent.core.events import StreamEvent
from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import route_origin
from navagent.gateway.dispatch import Dispatcher, RetryPolicy
from navagent.gateway.routes import parse_routes
from navagent.gateway.upstream import Upstream
from tests.gateway.streams import final_message, transcript

ENDPOINT = "http://llm.provider.test"
KEY_A, KEY_B = "org-a-test-key", "org-b-test-key"


@dataclass(frozen=True)
class Case:
    """A protocol whose turn 1 carries opaque reasoning, and the opaque value to look for."""

    provider: str
    """The transcripts' folder (`fixtures/sse/<provider>`)."""
    model: str
    reasoning: str
    """The transcript of turn 1: opaque reasoning, then tool calls."""
    text: str
    """The transcript of turn 2's answer."""
    opaque: str
    """The signature or encrypted content turn 1 streamed, as it goes back."""


CASES = {
    "openai_chat_completions": Case(
        "openai",
        "google/gemini-3-pro-preview",
        "reasoning_details_encrypted_then_tool_call",
        "text_with_usage",
        "CiQBjz1rX3m0ZfQ2sY8v7wTq0pLkNjHgFdSaQwErTyUiOpAsDfGhJkLzXcVbNm==",
    ),
    "openai_responses": Case(
        "openai-responses",
        "gpt-5-mini",
        "reasoning_then_two_calls",
        "text_with_usage",
        "gAAA-final-1",
    ),
    "anthropic_messages": Case(
        "anthropic",
        "claude-sonnet-4-5",
        "thinking_signature_then_tool_use",
        "text_two_blocks",
        "EqQBCkgIARABGAIiQL7Zf3v0sIg==",
    ),
    "google_gemini": Case(
        "gemini", "gemini-2.5-flash", "thinking_then_two_calls", "text_with_usage", "c2lnLWNhbGw="
    ),
}

Reply = Callable[[httpx.Request], httpx.Response]


def sse(body: bytes) -> Reply:
    return lambda _request: httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=body
    )


def refused(_request: httpx.Request) -> httpx.Response:
    return httpx.Response(401, content=b'{"error": {"message": "invalid key"}}')


class Provider:
    """One host behind both routes: answers each request with the next reply, in order."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies.pop(0)(request)


async def events_of(dispatcher: Dispatcher, request: ChatRequest) -> list[StreamEvent]:
    return [event async for batch in dispatcher.stream(request) for event in batch]


def dispatcher(protocol: str, model: str, second_key: str, client: httpx.AsyncClient) -> Dispatcher:
    """Two routes for one hint: one endpoint and model, org A's key then `second_key`."""
    routes = parse_routes(
        {
            "routes": [
                {
                    "name": name,
                    "routing_hint": "agent",
                    "endpoint": ENDPOINT,
                    "model": model,
                    "protocols": [protocol],
                    "api_key": key,
                }
                for name, key in (("org-a", KEY_A), ("second", second_key))
            ]
        },
        source="test-routes",
    )
    return Dispatcher(
        routes, Upstream(client), policy=RetryPolicy(), sleep=_no_wait, rng=random.Random(7)
    )


async def _no_wait(_seconds: float) -> None:
    return None


async def two_turns(protocol: str, second_key: str) -> tuple[AssistantMessage, list[httpx.Request]]:
    """Turn 1 on org A's route; turn 2 fails over to the route with `second_key`.

    Returns turn 1's message and the three requests: turn 1, turn 2 to org A
    (which refuses its key, not retried), turn 2 to the second route.
    """
    case = CASES[protocol]
    provider = Provider(
        sse(transcript(case.provider, case.reasoning)),
        refused,
        sse(transcript(case.provider, case.text)),
    )
    history: tuple[UserMessage | AssistantMessage | ToolResultMessage, ...] = (
        UserMessage(content="list the sandboxes"),
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(provider)) as client:
        gateway = dispatcher(protocol, case.model, second_key, client)
        first = final_message(await events_of(gateway, ChatRequest(messages=history))).message
        assert first.thinking and first.tool_calls
        results = tuple(ToolResultMessage(tool_call_id=c.id, content="w") for c in first.tool_calls)
        history = (*history, first, *results)
        final_message(await events_of(gateway, ChatRequest(messages=history)))
    assert len(provider.requests) == 3
    return first, provider.requests


@pytest.mark.parametrize("protocol", sorted(CASES))
@pytest.mark.parametrize("second_key", [KEY_B, KEY_A], ids=["other-organisation", "same-key"])
async def test_a_failover_to_another_key_drops_the_opaque_reasoning_of_the_first(
    protocol: str, second_key: str
) -> None:
    opaque = CASES[protocol].opaque.encode()
    first, (_, to_a, to_second) = await two_turns(protocol, second_key)
    assert to_a.url == to_second.url
    assert any(second_key in value for value in to_second.headers.values())
    assert opaque in to_a.content  # org A gets its own reasoning back
    assert (opaque in to_second.content) is (second_key == KEY_A)
    saved = first.model_dump_json()  # what reaches the client's history
    assert KEY_A not in saved and KEY_B not in saved


async def test_anthropic_turns_thinking_off_for_a_loop_whose_thinking_another_key_wrote() -> None:
    # With thinking on, the API refuses the open loop once its thinking is dropped:
    # the second organisation gets `thinking: disabled`, the same key its blocks back.
    _, (*_, to_other) = await two_turns("anthropic_messages", KEY_B)
    _, (*_, to_same) = await two_turns("anthropic_messages", KEY_A)
    other, same = json.loads(to_other.content), json.loads(to_same.content)
    assert other["thinking"] == {"type": "disabled"}
    assert other["messages"][1]["content"][0]["type"] == "tool_use"
    assert "thinking" not in same
    assert same["messages"][1]["content"][0]["type"] == "thinking"


def test_the_origin_tells_keys_apart_and_equal_keys_together() -> None:
    def origin(key: str, endpoint: str = ENDPOINT) -> str:
        return route_origin("openai_responses", endpoint, "gpt-5", key)

    assert origin(KEY_A) != origin(KEY_B)
    assert origin(KEY_A) == origin(KEY_A, f"{ENDPOINT}/v1/")  # one route, spelt two ways
    assert origin("") not in (origin(KEY_A), origin(KEY_B))  # a keyless route (a local server)
    assert all(key not in origin(key) for key in (KEY_A, KEY_B))


def test_origins_are_stable_across_releases() -> None:
    # A changed digest drops every saved session's reasoning once. A keyless route's
    # origin is the digest of endpoint and model alone, as before keys counted.
    model = "llama3.1"
    before_keys = hashlib.sha256(f"http://localhost:11434\n{model}".encode()).hexdigest()[:12]
    local = route_origin("openai_chat_completions", "http://localhost:11434/v1", model, "")
    assert local == f"openai_chat_completions:{before_keys}"
    keyed = route_origin("openai_chat_completions", "http://localhost:11434/v1", model, KEY_A)
    assert keyed == "openai_chat_completions:04d255abac96"


def test_a_login_in_the_endpoint_counts_as_a_credential_never_under_the_fast_hash() -> None:
    # Two proxies' logins on one host are two origins; the login is stretched like
    # a key, so a history's digest cannot be checked against guesses of it cheaply.
    model = "gpt-5"
    one = route_origin("openai_responses", "https://team:first-pass@proxy.example/v1", model, "")
    same = route_origin("openai_responses", "https://team:first-pass@proxy.example", model, "")
    other = route_origin("openai_responses", "https://team:other-pass@proxy.example", model, "")
    bare = route_origin("openai_responses", "https://proxy.example", model, "")
    assert one == same and len({one, other, bare}) == 3
    fast = hashlib.sha256(f"https://team:first-pass@proxy.example\n{model}".encode())
    assert one != f"openai_responses:{fast.hexdigest()[:12]}"
    # A key and a login are one credential: either changing changes the origin.
    keyed = route_origin("openai_responses", "https://team:first-pass@proxy.example", model, KEY_A)
    key_only = route_origin("openai_responses", "https://proxy.example", model, KEY_A)
    assert keyed not in {one, key_only}
