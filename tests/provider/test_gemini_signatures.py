"""Gemini thought signatures round trip through our gateway and the simulator."""

from __future__ import annotations

import pytest

from navagent.core.messages import ChatRequest, ToolResultMessage, UserMessage
from navagent.core.tools import TOOLS
from navagent.fixtures.provider import SimHTTPError, simulate
from navagent.gateway.protocols import PROTOCOLS
from tests.gateway.thinking_parts import payload_of
from tests.provider.test_translators_agree import KEY, SANDBOXES, round_trip


def test_gemini_thought_signature_survives_a_tool_round_trip() -> None:
    model = "gemini-2.5-flash"
    first = ChatRequest(messages=(UserMessage(content="list my sandboxes"),), tools=TOOLS)
    reply, _, message = round_trip("gemini", first, model=model)
    assert message.thinking and message.thinking[0].text == reply.script.thinking_text
    (signed,) = payload_of(message.thinking[0])["signatures"]
    assert signed["on"] == "call" and signed["call_id"] == message.tool_calls[0].id
    follow_up = ChatRequest(
        messages=(
            *first.messages,
            message,
            ToolResultMessage(tool_call_id=message.tool_calls[0].id, content=SANDBOXES),
        ),
        tools=TOOLS,
    )
    reply, _, answer = round_trip("gemini", follow_up, model=model)
    assert "dev-box" in answer.content
    # A signature moved to another call is refused, as the real API refuses it.
    body = (
        PROTOCOLS["google_gemini"]
        .build_request(follow_up, endpoint="http://sim.test", model=model, api_key=KEY)
        .body
    )
    call_part = body["contents"][1]["parts"][0]
    assert call_part["thoughtSignature"] == signed["signature"]
    call_part["functionCall"]["args"] = {"name": "other"}
    with pytest.raises(SimHTTPError, match="thought signature") as info:
        simulate("gemini", body, model=model)
    assert info.value.status == 400
