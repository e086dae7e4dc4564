"""The pure parts of compaction: the size estimate, the cut point, the request."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.compaction import (
    CHARS_PER_TOKEN,
    SUMMARY_HEADER,
    CompactionPolicy,
    build_summary_request,
    choose_cut,
    estimate_tokens,
    summary_message,
)
from navagent.core.history import validate_history
from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.core.fakes import TOOLS
from tests.core.strategies import Conversation, conversations


def test_estimate_tokens_is_json_chars_over_four() -> None:
    message = UserMessage(content="x" * 100)
    chars = len(message.model_dump_json())
    assert estimate_tokens([message]) == -(-chars // 4)
    assert estimate_tokens([message], TOOLS) == -(
        -(chars + sum(len(t.model_dump_json()) for t in TOOLS)) // 4
    )
    assert estimate_tokens([]) == 0


def turn(n: int, size: int = 400) -> list[Message]:
    call = ToolCall(id="call_0", name="sandbox_list")
    return [
        UserMessage(content=f"turn {n}"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(tool_call_id="call_0", content="r" * size),
        AssistantMessage(content=f"answer {n}"),
    ]


def test_choose_cut_keeps_as_many_recent_turns_as_fit() -> None:
    history = turn(1) + turn(2) + turn(3) + [UserMessage(content="now")]
    two_turns = estimate_tokens(history[8:])
    assert choose_cut(history, keep_tokens=two_turns) == 8
    assert choose_cut(history, keep_tokens=two_turns - 1) == 12
    assert choose_cut(history, keep_tokens=1) == 12, "the current turn always stays"
    assert choose_cut(history, keep_tokens=10**9) == 4, "at least one turn goes"


def test_choose_cut_has_nothing_to_cut_in_a_single_turn_or_after_a_summary() -> None:
    assert choose_cut(turn(1), keep_tokens=1) is None
    assert choose_cut([summary_message("old"), *turn(1)], keep_tokens=1) is None


def test_build_summary_request_ends_with_the_instruction() -> None:
    older = turn(1)
    request = build_summary_request(
        system_prompt="prompt", older=older, tools=TOOLS, routing_hint="agent", max_tokens=99
    )
    assert request.messages[0] == SystemMessage(content="prompt")
    assert request.messages[1:-1] == tuple(older)
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    assert last.content.startswith("Summarize the conversation so far")
    assert (request.tools, request.max_tokens) == (TOOLS, 99)
    validate_history(request.messages)


def test_summary_message_carries_the_summary() -> None:
    assert summary_message("we did X") == SystemMessage(content=SUMMARY_HEADER + "we did X")


@pytest.mark.slow
@settings(max_examples=500)
@given(conversations(max_turns=5), st.integers(1, 2000))
def test_choose_cut_never_splits_a_call_from_its_results(
    conversation: Conversation, keep_tokens: int
) -> None:
    history = conversation.history
    cut = choose_cut(history, keep_tokens=keep_tokens)
    if cut is None:
        return
    last_user = max(i for i, m in enumerate(history) if isinstance(m, UserMessage))
    assert isinstance(history[cut], UserMessage)
    assert 0 < cut <= last_user
    assert any(not isinstance(m, SystemMessage) for m in history[:cut])
    validate_history(history[:cut])
    validate_history(history[cut:])


@pytest.mark.parametrize(("size", "kept_from"), [(20_000, 2), (20_001, 4)])
def test_the_default_policy_keeps_recent_turns_of_exactly_20000_tokens(
    size: int, kept_from: int
) -> None:
    """The default boundary: recent turns of 20,000 estimated tokens are kept whole.

    One token more and only the current turn is. Sizes computed, not guessed.
    """
    tail: list[Message] = [
        AssistantMessage(content="ok"),
        UserMessage(content="now"),
        AssistantMessage(content="x"),
    ]
    blank = estimate_tokens([UserMessage(content=""), *tail])
    pad = "a" * ((size - blank) * CHARS_PER_TOKEN)  # one character of JSON per "a"
    history: list[Message] = [
        UserMessage(content="first"),
        AssistantMessage(content="one"),
        UserMessage(content=pad),
        *tail,
    ]
    assert estimate_tokens(history[2:]) == size
    keep = CompactionPolicy().keep_recent_tokens
    assert choose_cut(history, keep_tokens=keep) == kept_from
