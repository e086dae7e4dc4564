"""validate_history and repair_history: the tool-call invariant and its restoration."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.history import (
    INTERRUPTED_RESULT,
    InvalidHistoryError,
    repair_history,
    validate_history,
)
from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.core.strategies import Conversation, any_message, conversations

A = ToolCall(id="a", name="sandbox_list")
B = ToolCall(id="b", name="sandbox_get")
USER = UserMessage(content="hi")
CALLS = AssistantMessage(tool_calls=(A, B))


def result(call_id: str, content: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, content=content)


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([USER, result("a")], "messages[1]: tool result for 'a' follows no unanswered tool call"),
        ([USER, CALLS, result("a")], "tool call 'b' has no result"),
        (
            [USER, CALLS, result("b"), result("a")],
            "messages[2]: tool result for 'b' is out of call order",
        ),
        (
            [USER, CALLS, result("a"), result("z")],
            "messages[3]: tool result for 'z' answers no call",
        ),
        (
            [USER, CALLS, result("a"), USER, result("b")],
            "messages[3]: tool call 'b' has no result before this user",
        ),
        (
            [USER, CALLS, result("a"), result("b"), result("b")],
            "messages[4]: tool result for 'b' follows no",
        ),
        ([USER, AssistantMessage(tool_calls=(A, A))], "messages[1]: two tool calls share an id"),
    ],
    ids=["orphan", "unanswered", "order", "unknown-id", "interleaved", "duplicate", "dup-call-id"],
)
def test_validate_history_names_the_problem(messages: list[Message], problem: str) -> None:
    with pytest.raises(InvalidHistoryError) as error:
        validate_history(messages)
    assert str(error.value).startswith(problem)


def test_validate_history_accepts_reused_ids_in_later_blocks() -> None:
    validate_history([USER, CALLS, result("a"), result("b"), USER, CALLS, result("a"), result("b")])


def test_repair_history_answers_unanswered_calls_and_orders_results() -> None:
    recorded: list[Message] = [USER, CALLS, result("b", "B done"), USER, result("a", "late")]
    assert repair_history(recorded) == (
        USER,
        CALLS,
        result("a", INTERRUPTED_RESULT),
        result("b", "B done"),
        USER,
    )


def test_repair_history_drops_dangling_state() -> None:
    recorded: list[Message] = [
        result("a"),  # no call
        USER,
        AssistantMessage(),  # empty completion
        AssistantMessage(tool_calls=(A, A)),  # duplicate id
        result("a", "first"),
        result("a", "second"),
        SystemMessage(content="note"),
    ]
    assert repair_history(recorded) == (
        USER,
        AssistantMessage(tool_calls=(A,)),
        result("a", "first"),
        SystemMessage(content="note"),
    )


@settings(max_examples=300)
@given(conversations())
def test_repair_history_restores_call_order_of_a_recorded_log(conversation: Conversation) -> None:
    validate_history(conversation.history)
    assert repair_history(conversation.recorded) == conversation.history
    assert repair_history(conversation.history) == conversation.history


@settings(max_examples=300)
@given(conversations(), st.data())
def test_repair_history_of_a_log_cut_anywhere_is_valid(
    conversation: Conversation, data: st.DataObject
) -> None:
    # A crash (kill -9) can stop the log after any entry.
    cut = data.draw(st.integers(0, len(conversation.recorded)))
    prefix = conversation.recorded[:cut]
    repaired = repair_history(prefix)
    validate_history(repaired)
    kept = [m for m in repaired if not isinstance(m, ToolResultMessage)]
    assert kept == [m for m in prefix if not isinstance(m, ToolResultMessage)]
    real_results = [
        m for m in repaired if isinstance(m, ToolResultMessage) and m.content != INTERRUPTED_RESULT
    ]
    assert sorted(real_results, key=repr) == sorted(
        (m for m in prefix if isinstance(m, ToolResultMessage)), key=repr
    )


@pytest.mark.slow
@settings(max_examples=500)
@given(st.lists(any_message, max_size=12))
def test_repair_history_of_any_sequence_is_valid_and_stable(messages: list[Message]) -> None:
    repaired = repair_history(messages)
    validate_history(repaired)
    assert repair_history(repaired) == repaired
