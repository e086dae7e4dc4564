"""The one invariant a conversation history must keep, and how to restore it.

Providers reject a request in which a tool call has no result, or a result has
no call (OpenAI: "An assistant message with 'tool_calls' must be followed by
tool messages responding to each 'tool_call_id'"; Anthropic: every `tool_use`
needs a `tool_result` in the next user message). So after any failure, cancel
or crash the agent must leave a history in which:

- every tool call is answered exactly once,
- its results come right after the assistant message that made the calls,
  in call order, before any other message,
- no tool result exists without a call.

`validate_history` checks this; `repair_history` turns any recorded sequence
(for example the log of a process killed mid-turn) into a history that passes.
Both are pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from navagent.core.errors import NavAgentError
from navagent.core.messages import AssistantMessage, Message, ToolCall, ToolResultMessage

__all__ = [
    "INTERRUPTED_RESULT",
    "InvalidHistoryError",
    "repair_history",
    "validate_history",
]

INTERRUPTED_RESULT = "interrupted: the session ended before this tool finished"
"""The result `repair_history` gives a call that never got one."""


class InvalidHistoryError(NavAgentError, ValueError):
    """A history breaks the tool-call invariant; the text names the message."""


def validate_history(messages: Sequence[Message]) -> None:
    """Check that every tool call is answered exactly once, in order, right after it.

    Raises:
        InvalidHistoryError: naming the first offending message by index.
    """
    pending: list[str] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, ToolResultMessage):
            answered = message.tool_call_id
            if not pending:
                raise InvalidHistoryError(
                    f"{where}: tool result for {answered!r} follows no unanswered tool call"
                )
            if answered != pending[0]:
                problem = "is out of call order" if answered in pending else "answers no call"
                raise InvalidHistoryError(
                    f"{where}: tool result for {answered!r} {problem} of the preceding"
                    f" assistant message (expected {pending[0]!r})"
                )
            pending.pop(0)
            continue
        if pending:
            raise InvalidHistoryError(
                f"{where}: tool call {pending[0]!r} has no result before this {message.role}"
                " message"
            )
        if isinstance(message, AssistantMessage):
            ids = [call.id for call in message.tool_calls]
            if len(set(ids)) != len(ids):
                raise InvalidHistoryError(f"{where}: two tool calls share an id")
            pending = ids
    if pending:
        raise InvalidHistoryError(f"tool call {pending[0]!r} has no result")


def repair_history(
    messages: Sequence[Message], *, missing_result: str = INTERRUPTED_RESULT
) -> tuple[Message, ...]:
    """Return the closest valid history to a recorded message sequence.

    Results are moved into call order behind their call (a store records them
    in the order the tools finished), each unanswered call gets a result saying
    `missing_result`, and dangling state is dropped: results that answer no
    call of the preceding assistant message, duplicate results, duplicate call
    ids within one message, and empty assistant messages. A valid history comes
    back unchanged.
    """
    repaired: list[Message] = []
    calls: tuple[ToolCall, ...] = ()
    results: dict[str, ToolResultMessage] = {}

    def close_block() -> None:
        for call in calls:
            answer = results.get(call.id)
            repaired.append(
                answer or ToolResultMessage(tool_call_id=call.id, content=missing_result)
            )

    for message in messages:
        if isinstance(message, ToolResultMessage):
            wanted = any(call.id == message.tool_call_id for call in calls)
            if wanted and message.tool_call_id not in results:
                results[message.tool_call_id] = message
            continue
        close_block()
        calls, results = (), {}
        if isinstance(message, AssistantMessage):
            if message.is_empty:
                continue
            unique = _unique_calls(message.tool_calls)
            if len(unique) != len(message.tool_calls):
                message = message.model_copy(update={"tool_calls": unique})
            calls = unique
        repaired.append(message)
    close_block()
    return tuple(repaired)


def _unique_calls(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for call in calls:
        if call.id not in seen:
            seen.add(call.id)
            unique.append(call)
    return tuple(unique)
