"""Prompt caching in the simulated provider, modelled on the real APIs.

Anthropic caches the prefix up to each `cache_control` breakpoint (tools,
system, messages, in that order) once it is long enough, reports a first sight
as `cache_creation_input_tokens` and a repeat as `cache_read_input_tokens`, and
refuses a fifth breakpoint. OpenAI caches long prefixes by itself and reports
repeats as `prompt_tokens_details.cached_tokens`. The bodies here are what the
gateway really sends for the agent's own tools and system prompt.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.prompts import default_system_prompt
from navagent.core.tools import TOOLS
from navagent.fixtures.provider import PromptCache, SimHTTPError, SimulatedProvider, simulate
from navagent.gateway.anthropic import build_request as anthropic_request
from navagent.gateway.openai import build_request as openai_request

SYSTEM = SystemMessage(content=default_system_prompt("demo"))
FIRST: tuple[Message, ...] = (SYSTEM, UserMessage(content="list my sandboxes"))
SECOND: tuple[Message, ...] = (
    *FIRST,
    AssistantMessage(tool_calls=(ToolCall(id="toolu_1", name="sandbox_list"),)),
    ToolResultMessage(tool_call_id="toolu_1", content="NAME  PHASE\ndev-box  Ready"),
)
THIRD: tuple[Message, ...] = (
    *SECOND,
    AssistantMessage(content="dev-box is Ready."),
    UserMessage(content="show its logs"),
)


def anthropic_body(messages: tuple[Message, ...], *, tools: bool = True) -> dict[str, Any]:
    request = ChatRequest(messages=messages, tools=TOOLS if tools else ())
    return anthropic_request(
        request, endpoint="http://x", model="claude-sonnet-4-6", api_key="k"
    ).body


def openai_body(messages: tuple[Message, ...]) -> dict[str, Any]:
    request = ChatRequest(messages=messages, tools=TOOLS)
    return openai_request(request, endpoint="http://x", model="gpt-4.1-mini", api_key="k").body


def usage_of(frames: tuple[bytes, ...], event: str) -> dict[str, Any]:
    for frame in frames:
        for line in frame.decode().splitlines():
            if line.startswith("data: {") and f'"{event}"' in line:
                data = json.loads(line[6:])
                usage: dict[str, Any] = (
                    data["message"]["usage"] if event == "message_start" else data["usage"]
                )
                return usage
    raise AssertionError(f"no {event} event")


def test_anthropic_first_sight_writes_and_the_growing_history_reads() -> None:
    cache = PromptCache()
    first = usage_of(
        simulate("anthropic", anthropic_body(FIRST), cache=cache).frames, "message_start"
    )
    assert first["cache_read_input_tokens"] == 0
    assert first["cache_creation_input_tokens"] > 1024  # tools + system + first message
    second = usage_of(
        simulate("anthropic", anthropic_body(SECOND), cache=cache).frames, "message_start"
    )
    # The breakpoint moved to the newest message; the old one is found by looking back.
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert 0 < second["cache_creation_input_tokens"] < first["cache_creation_input_tokens"]
    third = usage_of(
        simulate("anthropic", anthropic_body(THIRD), cache=cache).frames, "message_delta"
    )
    assert third["cache_read_input_tokens"] == (
        second["cache_read_input_tokens"] + second["cache_creation_input_tokens"]
    )
    # input_tokens excludes both cache counts, as on the real API.
    total = simulate("anthropic", anthropic_body(THIRD)).script.input_tokens
    assert (
        third["input_tokens"]
        + third["cache_read_input_tokens"]
        + third["cache_creation_input_tokens"]
        == total
    )


def test_anthropic_short_prefixes_are_not_cached() -> None:
    cache = PromptCache()
    body = anthropic_body((UserMessage(content="hi"),), tools=False)
    for _ in range(2):
        usage = usage_of(simulate("anthropic", body, cache=cache).frames, "message_start")
        assert (usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]) == (0, 0)


def test_anthropic_more_than_four_breakpoints_is_the_real_error() -> None:
    body = anthropic_body(THIRD)
    for message in body["messages"][:2]:
        message["content"][-1]["cache_control"] = {"type": "ephemeral"}
    with pytest.raises(SimHTTPError) as refused:
        simulate("anthropic", body)
    assert refused.value.status == 400
    assert str(refused.value.message) == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )


def test_openai_repeated_long_prefix_reports_cached_tokens() -> None:
    cache = PromptCache()
    first = simulate("openai", openai_body(FIRST), cache=cache).script
    assert first.cache_read_tokens == 0 and first.input_tokens > 1024
    second = simulate("openai", openai_body(SECOND), cache=cache).script
    assert second.cache_read_tokens > 1024
    assert second.cache_read_tokens % 128 == 0
    assert second.cache_read_tokens <= first.input_tokens < second.input_tokens
    chunk = simulate("openai", openai_body(SECOND), cache=cache).frames[-2]
    assert b'"cached_tokens":' + str(second.cache_read_tokens).encode() in chunk


def test_server_caches_across_requests_and_reset_forgets(sim: SimulatedProvider) -> None:
    with anthropic.Anthropic(base_url=sim.base_url, api_key="sk-ant-test", max_retries=0) as client:

        def cached_read(messages: tuple[Message, ...]) -> int:
            body = anthropic_body(messages)
            body.pop("stream")
            with client.messages.stream(**body) as stream:
                usage = stream.get_final_message().usage
            return usage.cache_read_input_tokens or 0

        assert cached_read(FIRST) == 0
        assert cached_read(SECOND) > 0
        sim.reset()
        assert cached_read(SECOND) == 0
