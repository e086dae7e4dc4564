"""Message classes built from tests/navigator_chat_fixed.proto (fixed fields only).

The schema is compiled at test time into a private descriptor pool, so its
classes never collide with ours in the default pool even though both declare
`navigator.chat.v1`.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SCHEMA = Path(__file__).with_name("navigator_chat_fixed.proto")
CHAT_STREAM_METHOD = "/navigator.chat.v1.Chat/ChatStream"


@dataclass(frozen=True)
class FixedSchema:
    """Classes of the fixed-field schema, by message name."""

    ChatStreamRequest: Any
    ChatMessage: Any
    Tool: Any
    ToolCall: Any
    ChatStreamEvent: Any
    ContentDelta: Any
    ChatError: Any


@functools.cache
def fixed_schema() -> FixedSchema:
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch, "fixed.pb")
        status = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{SCHEMA.parent}",
                f"--descriptor_set_out={out}",
                SCHEMA.name,
            ]
        )
        assert status == 0, "protoc could not compile the fixed schema"
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    names = FixedSchema.__dataclass_fields__
    return FixedSchema(
        **{
            name: message_factory.GetMessageClass(
                pool.FindMessageTypeByName(f"navigator.chat.v1.{name}")
            )
            for name in names
        }
    )
