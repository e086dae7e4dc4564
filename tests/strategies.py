"""Hypothesis strategies for the neutral conversation model, shared by every layer's tests.

Texts and arguments mix hand-picked edge cases (empty, whitespace only,
non-ASCII, invalid or non-object JSON) with arbitrary values, so properties
about translation see the inputs providers are picky about.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

texts = st.sampled_from(["", " ", "\n\n", "hi", "Let me check.", "é 🦅"]) | st.text(max_size=40)
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = (
    st.sampled_from(["", "{}", '{"a": 1}', "not json", "[1]", '{"nested": {"b": [1]}}'])
    | st.dictionaries(st.text(max_size=8), json_values, max_size=3).map(json.dumps)
    | texts
)
tool_calls = st.builds(ToolCall, id=ids, name=ids, arguments=arguments)
thinking_parts = st.builds(
    ThinkingPart,
    text=texts,
    origin=texts,
    # Opaque to everyone but its origin's builder, which must survive any of it.
    payload=texts | st.dictionaries(st.text(max_size=20), json_values, max_size=4).map(json.dumps),
)
assistant_messages = st.builds(
    AssistantMessage,
    content=texts,
    tool_calls=st.lists(tool_calls, max_size=3).map(tuple),
    thinking=st.lists(thinking_parts, max_size=2).map(tuple),
    refusal=st.just("") | texts,
)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, content=texts),
    st.builds(UserMessage, content=texts),
    assistant_messages,
    st.builds(ToolResultMessage, tool_call_id=ids, content=texts),
)
tools = st.builds(
    Tool,
    name=ids,
    description=texts,
    parameters=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)
