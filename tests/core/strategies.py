"""Hypothesis strategies for conversations as the agent builds and records them."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from navagent.core.compaction import summary_message
from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

words = st.text(alphabet="abc xyz", max_size=30)
# Few ids on purpose: providers such as the simulator reuse "call_0" in every
# completion, so results must be matched within their block, not globally.
call_ids = st.sampled_from(["call_0", "call_1", "call_2", "toolu_x"])


@dataclass(frozen=True)
class Conversation:
    history: tuple[Message, ...]
    """What the agent holds: results in call order."""
    recorded: tuple[Message, ...]
    """What a store logged: results in the order the tools finished."""


@st.composite
def conversations(draw: st.DrawFn, *, max_turns: int = 4) -> Conversation:
    history: list[Message] = []
    recorded: list[Message] = []
    if draw(st.booleans()):
        summary = summary_message(draw(words))
        history.append(summary)
        recorded.append(summary)
    for _turn in range(draw(st.integers(1, max_turns))):
        user = UserMessage(content=draw(words))
        history.append(user)
        recorded.append(user)
        for _round in range(draw(st.integers(0, 3))):
            count = draw(st.integers(1, 3))
            calls = tuple(ToolCall(id=f"call_{i}", name="sandbox_list") for i in range(count))
            assistant = AssistantMessage(content=draw(words), tool_calls=calls)
            results = [
                ToolResultMessage(tool_call_id=c.id, content=draw(words) or "ok") for c in calls
            ]
            history += [assistant, *results]
            recorded += [assistant, *draw(st.permutations(results))]
        if draw(st.booleans()):
            answer = AssistantMessage(content=draw(words) or "done")
            history.append(answer)
            recorded.append(answer)
    return Conversation(tuple(history), tuple(recorded))


any_message: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, content=words),
    st.builds(UserMessage, content=words),
    st.builds(
        AssistantMessage,
        content=words,
        tool_calls=st.lists(
            st.builds(ToolCall, id=call_ids, name=st.just("sandbox_get")), max_size=3
        ).map(tuple),
    ),
    st.builds(ToolResultMessage, tool_call_id=call_ids, content=words),
)
