"""Thinking parts as each protocol's translator leaves them (payload shapes), for the tests."""

from __future__ import annotations

import json
from typing import Any

from navagent.core.messages import ThinkingPart
from navagent.gateway._origin import route_origin
from tests.gateway.streams import FAKE_KEY

ANTHROPIC_ENDPOINT, ANTHROPIC_MODEL = "https://api.anthropic.com", "claude-sonnet-4-5"
ANTHROPIC_ORIGIN = route_origin("anthropic_messages", ANTHROPIC_ENDPOINT, ANTHROPIC_MODEL, FAKE_KEY)


def encode(payload: dict[str, Any]) -> str:
    """JSON as the translators write payloads (compact, non-ASCII kept)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def payload_of(part: ThinkingPart) -> dict[str, Any]:
    """The decoded payload ({} when there is none)."""
    return dict(json.loads(part.payload)) if part.payload else {}


def anthropic_part(
    text: str = "", *, signature: str = "", redacted: str = "", origin: str = ANTHROPIC_ORIGIN
) -> ThinkingPart:
    """A thinking block (signed, or redacted) as the Anthropic translator keeps it."""
    payload = {"redacted_data": redacted} if redacted else {"signature": signature}
    has_payload = bool(redacted or signature)
    return ThinkingPart(text=text, origin=origin, payload=encode(payload) if has_payload else "")


def responses_part(
    text: str,
    *,
    item_id: str,
    encrypted: str,
    summary: tuple[str, ...] = (),
    after: int = 0,
    origin: str,
) -> ThinkingPart:
    """A reasoning item as the Responses translator keeps it."""
    payload = {
        "item_id": item_id,
        "encrypted_content": encrypted,
        "summary": list(summary),
        "after_tool_calls": after,
    }
    return ThinkingPart(text=text, origin=origin, payload=encode(payload))
