"""Neutral request -> Anthropic Messages request body."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from syrupy.assertion import SnapshotAssertion

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    SystemMessage,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.gateway._origin import route_origin
from navagent.gateway.anthropic import build_request
from navagent.gateway.anthropic.request import DEFAULT_MAX_TOKENS
from tests.gateway.conversations import (
    REPRESENTATIVE,
    SANDBOX_LIST,
    SANDBOX_LOGS,
    conversations,
    dumps,
)
from tests.gateway.streams import FAKE_KEY
from tests.gateway.thinking_parts import (
    ANTHROPIC_ENDPOINT,
    ANTHROPIC_MODEL,
    ANTHROPIC_ORIGIN,
    anthropic_part,
)

ENDPOINT = ANTHROPIC_ENDPOINT
OTHER_KEY = "org-b-test-key"
"""Another organisation's key (or this one's after a rotation), same endpoint and model."""


def marked_body_of(request: ChatRequest) -> dict[str, Any]:
    return build_request(request, endpoint=ENDPOINT, model=ANTHROPIC_MODEL, api_key=FAKE_KEY).body


def body_of(request: ChatRequest) -> Any:
    """The body without its cache breakpoints (those are tested on their own below)."""
    return without_breakpoints(marked_body_of(request))


def without_breakpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_breakpoints(item) for item in value]
    return value


def breakpoints(value: Any, path: str = "") -> list[str]:
    """Where `cache_control` is set, as paths like `tools.1` or `messages.2.content.0`."""
    found: list[str] = []
    if isinstance(value, dict):
        if "cache_control" in value:
            assert value["cache_control"] == {"type": "ephemeral"}
            found.append(path)
        for key, item in value.items():
            found += breakpoints(item, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += breakpoints(item, f"{path}.{index}".lstrip("."))
    return found


def test_anthropic_request_representative_body(snapshot: SnapshotAssertion) -> None:
    upstream = build_request(
        REPRESENTATIVE, endpoint=ENDPOINT, model=ANTHROPIC_MODEL, api_key=FAKE_KEY
    )
    assert upstream.url == "https://api.anthropic.com/v1/messages"
    assert upstream.body == snapshot


@pytest.mark.parametrize(
    "endpoint",
    ["https://api.anthropic.com", "https://api.anthropic.com/", "https://api.anthropic.com/v1/"],
)
def test_anthropic_request_endpoint_with_or_without_v1(endpoint: str) -> None:
    upstream = build_request(REPRESENTATIVE, endpoint=endpoint, model="m", api_key=FAKE_KEY)
    assert upstream.url == "https://api.anthropic.com/v1/messages"


def test_anthropic_request_every_system_message_is_lifted_and_joined() -> None:
    request = ChatRequest(
        messages=(
            SystemMessage(content="First."),
            UserMessage(content="hi"),
            SystemMessage(content="  "),
            SystemMessage(content="Second."),
        )
    )
    body = body_of(request)
    assert body["system"] == [{"type": "text", "text": "First.\n\nSecond."}]
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_anthropic_request_no_system_key_without_system_messages() -> None:
    assert "system" not in body_of(ChatRequest(messages=(UserMessage(content="hi"),)))


def test_anthropic_request_assistant_blocks_thinking_then_text_then_tool_use() -> None:
    assistant = body_of(REPRESENTATIVE)["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "List first, then logs.", "signature": "sig-1"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_1", "name": "sandbox_list", "input": {"cluster": "dev"}},
        {"type": "tool_use", "id": "call_2", "name": "sandbox_logs", "input": {"name": "web"}},
    ]


@pytest.mark.parametrize("arguments", ["", "{}", "not json", "[1, 2]", '"text"', "{"])
def test_anthropic_request_tool_use_input_is_an_object(arguments: str) -> None:
    request = ChatRequest(
        messages=(
            UserMessage(content="u"),
            AssistantMessage(tool_calls=(ToolCall(id="t", name="n", arguments=arguments),)),
        )
    )
    (block,) = body_of(request)["messages"][1]["content"]
    assert block["input"] == {}


def test_anthropic_request_redacted_and_unsigned_thinking() -> None:
    thinking = (
        anthropic_part(redacted="opaque-bytes"),
        anthropic_part("unsigned: cannot be verified"),
        anthropic_part("", signature="sig-empty-text"),
        ThinkingPart(text="garbage payload", origin=ANTHROPIC_ORIGIN, payload="[1, 2"),
        ThinkingPart(text="not an object", origin=ANTHROPIC_ORIGIN, payload="[1]"),
    )
    request = ChatRequest(
        messages=(UserMessage(content="u"), AssistantMessage(content="ok", thinking=thinking))
    )
    assert body_of(request)["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "opaque-bytes"},
        {"type": "thinking", "thinking": "", "signature": "sig-empty-text"},
        {"type": "text", "text": "ok"},
    ]


@pytest.mark.parametrize(
    "origin",
    [
        "",  # saved before origins existed
        route_origin("anthropic_messages", "https://bedrock.example", ANTHROPIC_MODEL, FAKE_KEY),
        route_origin("anthropic_messages", ENDPOINT, "claude-haiku-4-5", FAKE_KEY),
        route_origin("openai_chat_completions", ENDPOINT, ANTHROPIC_MODEL, FAKE_KEY),
        route_origin("anthropic_messages", ENDPOINT, ANTHROPIC_MODEL, OTHER_KEY),
    ],
    ids=["no-origin", "other-endpoint", "other-model", "other-protocol", "other-key"],
)
def test_anthropic_request_thinking_from_another_route_is_never_sent(origin: str) -> None:
    # Issue 22 part 4: a payload is read only by the route that wrote it.
    thinking = (
        anthropic_part("signed elsewhere", signature="sig-x", origin=origin),
        anthropic_part(redacted="opaque-x", origin=origin),
    )
    request = ChatRequest(
        messages=(UserMessage(content="u"), AssistantMessage(content="ok", thinking=thinking))
    )
    assert body_of(request)["messages"][1]["content"] == [{"type": "text", "text": "ok"}]


def test_anthropic_request_consecutive_tool_results_and_next_user_message_share_one_turn() -> None:
    messages = body_of(REPRESENTATIVE)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "web\napi"},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "GET / 200"},
        {"type": "text", "text": "Also the api logs."},
    ]
    # An empty result carries no content rather than an empty one.
    assert messages[4]["content"] == [{"type": "tool_result", "tool_use_id": "call_3"}]


def test_anthropic_request_tool_results_stay_ahead_of_text_in_a_merged_turn() -> None:
    request = ChatRequest(
        messages=(
            UserMessage(content="first"),
            AssistantMessage(tool_calls=(ToolCall(id="t1", name="n"),)),
            UserMessage(content="interjection"),
            ToolResultMessage(tool_call_id="t1", content="done"),
        )
    )
    turn = body_of(request)["messages"][2]["content"]
    assert [block["type"] for block in turn] == ["tool_result", "text"]


def test_anthropic_request_never_sends_empty_text_blocks() -> None:
    request = ChatRequest(
        messages=(
            UserMessage(content="hi"),
            AssistantMessage(content="", tool_calls=(ToolCall(id="t", name="n"),)),
            ToolResultMessage(tool_call_id="t", content="r"),
            UserMessage(content="   "),
            AssistantMessage(content="\n\n"),
            UserMessage(content="again"),
        )
    )
    messages = body_of(request)["messages"]
    assert '"text": ""' not in dumps(messages)
    # The blank assistant turn disappears and the user turns around it merge.
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"][-1] == {"type": "text", "text": "again"}


def test_anthropic_request_max_tokens_default_and_options() -> None:
    plain = body_of(ChatRequest(messages=(UserMessage(content="hi"),)))
    assert plain["max_tokens"] == DEFAULT_MAX_TOKENS == 4096
    assert "temperature" not in plain and "tools" not in plain
    assert plain["stream"] is True
    body = body_of(REPRESENTATIVE)
    assert (body["max_tokens"], body["temperature"]) == (1024, 0.2)


def test_anthropic_request_tools_shape() -> None:
    assert body_of(REPRESENTATIVE)["tools"] == [
        {
            "name": "sandbox_list",
            "description": "List the sandboxes of a cluster.",
            "input_schema": SANDBOX_LIST.parameters,
        },
        {"name": "sandbox_logs", "input_schema": SANDBOX_LOGS.parameters},
    ]


def test_anthropic_request_headers_and_key_only_in_x_api_key() -> None:
    upstream = build_request(REPRESENTATIVE, endpoint=ENDPOINT, model="m", api_key=FAKE_KEY)
    assert upstream.headers["x-api-key"] == FAKE_KEY
    assert upstream.headers["anthropic-version"] == "2023-06-01"
    assert upstream.headers["content-type"] == "application/json"
    assert [k for k, v in upstream.headers.items() if FAKE_KEY in v] == ["x-api-key"]
    assert FAKE_KEY not in dumps(upstream.body)
    assert FAKE_KEY not in repr(upstream)


@settings(max_examples=500)
@given(request=conversations)
def test_anthropic_request_property_alternates_and_never_sends_empty_text(
    request: ChatRequest,
) -> None:
    body = body_of(request)
    messages = body["messages"]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False)), roles
    for message in messages:
        blocks = message["content"]
        assert blocks, "a turn with no blocks"
        assert all(b["text"].strip() for b in blocks if b["type"] == "text")
        kinds = [b["type"] for b in blocks]
        if "tool_result" in kinds:  # tool results lead their user turn
            assert message["role"] == "user"
            assert kinds == sorted(kinds, key=lambda kind: kind != "tool_result")
        for block in blocks:
            if block["type"] == "tool_use":
                assert isinstance(block["input"], dict)
    # Nothing is lost: every call and every result is there, in order.
    sent = [b for m in messages for b in m["content"]]
    neutral = request.messages
    assert [b["id"] for b in sent if b["type"] == "tool_use"] == [
        c.id for m in neutral if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert sorted(b["tool_use_id"] for b in sent if b["type"] == "tool_result") == sorted(
        m.tool_call_id for m in neutral if isinstance(m, ToolResultMessage)
    )
    systems = [m.content for m in neutral if isinstance(m, SystemMessage) and m.content.strip()]
    assert "".join(block["text"] for block in body.get("system", [])) == "\n\n".join(systems)
    assert FAKE_KEY not in dumps(body)


# --- prompt caching breakpoints ---------------------------------------------------


def test_anthropic_request_breakpoints_on_last_tool_system_and_last_message() -> None:
    body = marked_body_of(REPRESENTATIVE)
    last = len(body["messages"]) - 1
    last_block = len(body["messages"][last]["content"]) - 1
    assert breakpoints(body) == [
        f"messages.{last}.content.{last_block}",
        "system.0",
        "tools.1",
    ]


def test_anthropic_request_breakpoint_moves_with_the_growing_history() -> None:
    first = ChatRequest(
        messages=(SystemMessage(content="s"), UserMessage(content="list them")),
        tools=(SANDBOX_LIST,),
    )
    grown = first.model_copy(
        update={
            "messages": (
                *first.messages,
                AssistantMessage(content="web and api."),
                UserMessage(content="and the logs?"),
            )
        }
    )
    before, after = marked_body_of(first), marked_body_of(grown)
    assert "messages.0.content.0" in breakpoints(before)
    assert "messages.0.content.0" not in breakpoints(after)
    assert "messages.2.content.0" in breakpoints(after)
    # Unmarked, the earlier request is a prefix of the later one: the cache key.
    assert without_breakpoints(after)["messages"][:1] == without_breakpoints(before)["messages"]


def test_anthropic_request_breakpoint_skips_thinking_blocks() -> None:
    thinking = (anthropic_part("t", signature="sig"),)
    request = ChatRequest(
        messages=(UserMessage(content="u"), AssistantMessage(content="ok", thinking=thinking))
    )
    assert breakpoints(marked_body_of(request)) == ["messages.1.content.1"]


@settings(max_examples=300)
@given(request=conversations)
def test_anthropic_request_property_at_most_four_breakpoints_in_allowed_places(
    request: ChatRequest,
) -> None:
    body = marked_body_of(request)
    marks = breakpoints(body)
    assert len(marks) <= 4
    last = len(body["messages"]) - 1
    for mark in marks:
        parts = mark.split(".")
        if parts[0] == "messages":
            assert int(parts[1]) == last
            block = body["messages"][last]["content"][int(parts[3])]
            assert block["type"] in ("text", "tool_use", "tool_result")
        else:
            assert mark in ("system.0", f"tools.{len(body.get('tools', [])) - 1}")


OTHER_ROUTE = route_origin(
    "anthropic_messages", "https://backup.example", ANTHROPIC_MODEL, FAKE_KEY
)
OTHER_KEY_ROUTE = route_origin("anthropic_messages", ENDPOINT, ANTHROPIC_MODEL, OTHER_KEY)
CALL = ToolCall(id="toolu_1", name="sandbox_list", arguments="{}")


def open_loop(*thinking: ThinkingPart, then: tuple[UserMessage, ...] = ()) -> ChatRequest:
    """A turn whose answer called a tool and whose result is in: the loop is open."""
    return ChatRequest(
        messages=(
            UserMessage(content="list them"),
            AssistantMessage(content="", tool_calls=(CALL,), thinking=thinking),
            ToolResultMessage(tool_call_id=CALL.id, content="web-1"),
            *then,
        )
    )


@pytest.mark.parametrize(
    "thinking",
    [
        (anthropic_part("written elsewhere", signature="sig-x", origin=OTHER_ROUTE),),
        (anthropic_part(redacted="opaque-x", origin=OTHER_ROUTE),),
        (anthropic_part("written through the old key", signature="sig-x", origin=OTHER_KEY_ROUTE),),
        (anthropic_part("cut before its signature"),),
        (ThinkingPart(text="saved before origins existed"),),
    ],
    ids=["failover", "redacted-failover", "key-rotated", "unsigned", "migrated"],
)
def test_anthropic_request_open_loop_that_cannot_echo_its_thinking_turns_thinking_off(
    thinking: tuple[ThinkingPart, ...],
) -> None:
    # Issue 42: with thinking on, the API refuses a last assistant turn before tool
    # results that does not start with thinking, on every later request of the session.
    body = marked_body_of(open_loop(*thinking))
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    assert body["thinking"] == {"type": "disabled"}
    # The next user turn closes the loop, but merges with the tool result: still off.
    merged = marked_body_of(open_loop(*thinking, then=(UserMessage(content="and now?"),)))
    assert merged["thinking"] == {"type": "disabled"}


@pytest.mark.parametrize(
    "request_",
    [
        open_loop(anthropic_part("mine", signature="sig-1")),  # echoed: thinking stays on
        open_loop(),  # a model that never thought: nothing to turn off
        ChatRequest(  # no loop open: the last assistant turn is followed by a user's text
            messages=(
                UserMessage(content="u"),
                AssistantMessage(
                    content="ok", thinking=(anthropic_part("x", signature="s", origin=OTHER_ROUTE),)
                ),
                UserMessage(content="v"),
            )
        ),
    ],
    ids=["own-thinking", "never-thought", "closed-loop"],
)
def test_anthropic_request_leaves_thinking_alone_otherwise(request_: ChatRequest) -> None:
    assert "thinking" not in marked_body_of(request_)


def test_anthropic_request_a_failed_over_thinking_loop_is_accepted_by_the_simulator() -> None:
    # The simulator refuses as the API does (a `-thinking` model thinks unless told not to).
    from navagent.fixtures.provider import SimHTTPError, simulate

    request = open_loop(anthropic_part("elsewhere", signature="sig-x", origin=OTHER_ROUTE))
    body = build_request(
        request, endpoint=ENDPOINT, model="claude-sonnet-4-5-thinking", api_key=FAKE_KEY
    ).body
    body["tools"] = [{"name": "sandbox_list", "input_schema": {"type": "object"}}]
    reply = simulate("anthropic", body)
    assert not reply.script.thinking  # answered, without thinking
    del body["thinking"]
    with pytest.raises(SimHTTPError, match="must start with a thinking block"):
        simulate("anthropic", body)
