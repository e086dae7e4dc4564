"""Neutral conversations for the request builder tests: one representative, and a strategy."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    SystemMessage,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.gateway.thinking_parts import anthropic_part
from tests.strategies import messages

SANDBOX_LIST = Tool(
    name="sandbox_list",
    description="List the sandboxes of a cluster.",
    parameters={
        "type": "object",
        "properties": {"cluster": {"type": "string"}},
        "required": ["cluster"],
    },
)
SANDBOX_LOGS = Tool(
    name="sandbox_logs",
    parameters={"type": "object", "properties": {"name": {"type": "string"}}},
)

REPRESENTATIVE = ChatRequest(
    messages=(
        SystemMessage(content="You operate Navigator clusters."),
        SystemMessage(content="Be brief."),
        UserMessage(content="Which sandboxes run on dev, and what does web log?"),
        AssistantMessage(
            content="Let me look.",
            thinking=(anthropic_part("List first, then logs.", signature="sig-1"),),
            tool_calls=(
                ToolCall(id="call_1", name="sandbox_list", arguments='{"cluster": "dev"}'),
                ToolCall(id="call_2", name="sandbox_logs", arguments='{"name": "web"}'),
            ),
        ),
        ToolResultMessage(tool_call_id="call_1", content="web\napi"),
        ToolResultMessage(tool_call_id="call_2", content="GET / 200"),
        UserMessage(content="Also the api logs."),
        AssistantMessage(tool_calls=(ToolCall(id="call_3", name="sandbox_logs", arguments=""),)),
        ToolResultMessage(tool_call_id="call_3", content=""),
    ),
    tools=(SANDBOX_LIST, SANDBOX_LOGS),
    max_tokens=1024,
    temperature=0.2,
)

conversations = st.builds(
    ChatRequest,
    messages=st.lists(messages, min_size=1, max_size=12).map(tuple),
    max_tokens=st.none() | st.integers(1, 8192),
    temperature=st.none() | st.floats(0, 2),
)


def dumps(body: object) -> str:
    return json.dumps(body, sort_keys=True)
