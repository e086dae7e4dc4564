"""The committed protobuf modules and their wire compatibility with Navigator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from navagent.core._proto import _generate
from navagent.core._proto import chat_pb2 as pb
from tests.fixed_schema import fixed_schema

PROTO_DIR = Path(_generate.__file__).parent


def test_generated_modules_match_schema(tmp_path: Path) -> None:
    written = _generate.generate(tmp_path)
    stale = [
        path.name for path in written if path.read_bytes() != (PROTO_DIR / path.name).read_bytes()
    ]
    assert not stale, (
        f"{stale} are stale: run `python -m navagent.core._proto._generate` and commit"
    )


def test_generated_modules_staleness_is_detected(tmp_path: Path) -> None:
    # The check above compares bytes; prove an edit to the schema shows up.
    edited = tmp_path / "edited"
    original = _generate.HERE
    scratch = tmp_path / "proto"
    scratch.mkdir()
    (scratch / "chat.proto").write_text(
        (original / "chat.proto")
        .read_text(encoding="utf-8")
        .replace("string routing_hint = 3;", "string routing_hint = 3;\n  string added = 99;"),
        encoding="utf-8",
    )
    _generate.HERE = scratch
    try:
        written = _generate.generate(edited)
    finally:
        _generate.HERE = original
    assert any(p.read_bytes() != (PROTO_DIR / p.name).read_bytes() for p in written)


def test_fixed_field_numbers_are_unchanged() -> None:
    fixed = fixed_schema()
    for name in (
        "ChatStreamRequest",
        "ChatMessage",
        "Tool",
        "ToolCall",
        "ChatStreamEvent",
        "ContentDelta",
        "ChatError",
    ):
        theirs = getattr(fixed, name).DESCRIPTOR
        ours = getattr(pb, name).DESCRIPTOR
        for field in theirs.fields:
            mine = ours.fields_by_name[field.name]
            assert (mine.number, mine.type, mine.is_repeated) == (
                field.number,
                field.type,
                field.is_repeated,
            ), f"{name}.{field.name} changed"
        extensions = [f.number for f in ours.fields if f.name not in theirs.fields_by_name]
        assert all(number >= 10 for number in extensions), f"{name}: extensions start at 10"


def _fixed_request() -> Any:
    fixed = fixed_schema()
    return fixed.ChatStreamRequest(
        messages=[
            fixed.ChatMessage(role="system", content="be brief"),
            fixed.ChatMessage(role="user", content="list my sandboxes ✓"),
            fixed.ChatMessage(
                role="assistant",
                tool_calls=[fixed.ToolCall(id="call_1", name="sandbox_list", arguments="{}")],
            ),
            fixed.ChatMessage(role="tool", content="NAME ...", tool_call_id="call_1"),
        ],
        tools=[fixed.Tool(name="sandbox_list", description="List", parameters_schema="{}")],
        routing_hint="agent",
    )


def test_fixed_schema_request_decodes_with_ours() -> None:
    theirs = _fixed_request()
    ours = pb.ChatStreamRequest.FromString(theirs.SerializeToString())
    assert [m.role for m in ours.messages] == ["system", "user", "assistant", "tool"]
    assert ours.messages[1].content == "list my sandboxes ✓"
    assert ours.messages[2].tool_calls[0].name == "sandbox_list"
    assert ours.messages[3].tool_call_id == "call_1"
    assert ours.tools[0].parameters_schema == "{}"
    assert ours.routing_hint == "agent"
    assert not ours.HasField("max_tokens")
    assert ours.extended_events is False
    # And back: nothing of theirs is lost through our message.
    assert ours.SerializeToString() == theirs.SerializeToString()


@pytest.mark.parametrize(
    "event",
    [
        pb.ChatStreamEvent(content_delta=pb.ContentDelta(text="hé")),
        pb.ChatStreamEvent(
            message=pb.ChatMessage(
                role="assistant",
                content="done",
                tool_calls=[pb.ToolCall(id="c", name="n", arguments='{"a":1}')],
                thinking=[pb.ThinkingBlock(text="hmm", origin="o", payload="{}")],
            )
        ),
        pb.ChatStreamEvent(
            error=pb.ChatError(
                message="overloaded", status_code=529, code=pb.ERROR_CODE_OVERLOADED, retryable=True
            )
        ),
    ],
    ids=["content_delta", "message", "error"],
)
def test_our_fixed_events_decode_with_fixed_schema(event: pb.ChatStreamEvent) -> None:
    fixed = fixed_schema()
    theirs = fixed.ChatStreamEvent.FromString(event.SerializeToString())
    kind = event.WhichOneof("event")
    assert theirs.WhichOneof("event") == kind
    if kind == "content_delta":
        assert theirs.content_delta.text == "hé"
    elif kind == "message":
        assert theirs.message.content == "done"
        assert theirs.message.tool_calls[0].arguments == '{"a":1}'
    else:
        assert (theirs.error.message, theirs.error.status_code) == ("overloaded", 529)


def test_extension_events_are_unset_for_fixed_schema() -> None:
    # Why the gateway only sends extension events on request: an old client
    # sees an event whose oneof is empty.
    fixed = fixed_schema()
    event = pb.ChatStreamEvent(thinking_delta=pb.ThinkingDelta(text="x"))
    assert fixed.ChatStreamEvent.FromString(event.SerializeToString()).WhichOneof("event") is None
