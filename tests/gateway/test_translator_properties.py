"""Properties of both translators over generated streams, split at random points."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.events import RefusalDelta, TextDelta, ThinkingDelta, ToolCallStart
from tests.gateway.streams import final_message, translate, turn_end

_pieces = st.text(max_size=6) | st.sampled_from(["é", "🦅", "\u2028", "\r\n", "data: x", "\n\n"])
_objects = st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=3)


@st.composite
def _fragments(draw: st.DrawFn) -> list[str]:
    """A JSON object cut into pieces at arbitrary points (possibly no pieces at all)."""
    text = json.dumps(draw(_objects), ensure_ascii=False)
    if draw(st.booleans()) and text == "{}":
        return draw(st.sampled_from([[], [""]]))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@st.composite
def _split(draw: st.DrawFn, body: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=10)))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def _sse(data: Any, event: str | None = None) -> str:
    line = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (f"event: {event}\n" if event else "") + f"data: {line}\n\n"


# --- OpenAI ------------------------------------------------------------------

_openai_parts = st.lists(
    st.one_of(
        st.tuples(st.just("text"), _pieces),
        st.tuples(st.just("refusal"), _pieces),
        st.tuples(st.just("tool"), st.integers(0, 2), _fragments()),
    ),
    max_size=12,
)


def _openai_body(parts: list[tuple[Any, ...]]) -> tuple[bytes, dict[str, str], dict[int, str]]:
    events = [_sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
    texts, named = {"text": "", "refusal": ""}, set()
    arguments: dict[int, str] = {}
    for part in parts:
        if part[0] in texts:
            texts[part[0]] += part[1]
            key = "content" if part[0] == "text" else "refusal"
            events.append(_sse({"choices": [{"index": 0, "delta": {key: part[1]}}]}))
            continue
        _, index, fragments = part
        for fragment in fragments or [None]:
            call: dict[str, Any] = {"index": index, "function": {"arguments": fragment}}
            if index not in named:
                named.add(index)
                call |= {"id": f"call_{index}", "type": "function"}
                call["function"]["name"] = f"tool_{index}"
            arguments[index] = arguments.get(index, "") + (fragment or "")
            events.append(_sse({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    events.append(_sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    events.append(_sse({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}))
    events.append(_sse("[DONE]"))
    return "".join(events).encode(), texts, arguments


@settings(max_examples=500)
@given(data=st.data(), parts=_openai_parts)
def test_openai_stream_property_deltas_fold_into_the_final_message(
    data: st.DataObject, parts: list[tuple[Any, ...]]
) -> None:
    body, texts, arguments = _openai_body(parts)
    events = translate("openai", data.draw(_split(body)))
    message = final_message(events).message
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == message.content == texts["text"]
    refusal = "".join(e.text for e in events if isinstance(e, RefusalDelta))
    assert refusal == message.refusal == texts["refusal"]
    assert turn_end(events).finish_reason == ("refusal" if refusal else "stop")
    # Calls in order of first appearance; ToolCallStart.index is that position.
    order = list(dict.fromkeys(part[1] for part in parts if part[0] == "tool"))
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (f"call_{i}", f"tool_{i}", arguments[i] or "{}") for i in order
    ]
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == list(range(len(order)))
    assert turn_end(events).usage.output_tokens == 4


# --- Anthropic ---------------------------------------------------------------

_anthropic_blocks = st.lists(
    st.one_of(
        st.tuples(st.just("text"), st.lists(_pieces, max_size=4)),
        st.tuples(st.just("thinking"), st.lists(_pieces, max_size=4)),
        st.tuples(st.just("tool_use"), _fragments()),
        st.tuples(st.just("server_tool_use"), _fragments()),
    ),
    max_size=6,
)


def _anthropic_body(blocks: list[tuple[str, list[str]]]) -> bytes:
    events = [
        _sse({"type": "message_start", "message": {"usage": {"input_tokens": 9}}}, "message_start")
    ]
    for index, (kind, pieces) in enumerate(blocks):
        start: dict[str, Any] = {"type": kind}
        delta_type, key = {
            "text": ("text_delta", "text"),
            "thinking": ("thinking_delta", "thinking"),
        }.get(kind, ("input_json_delta", "partial_json"))
        if kind in ("tool_use", "server_tool_use"):
            start |= {"id": f"toolu_{index}", "name": f"tool_{index}", "input": {}}
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        for piece in pieces:
            delta = {"type": delta_type, key: piece}
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        if kind == "thinking":
            delta = {"type": "signature_delta", "signature": f"sig{index}"}
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return "".join(events).encode()  # fmt: skip


@settings(max_examples=500)
@given(data=st.data(), blocks=_anthropic_blocks)
def test_anthropic_stream_property_deltas_fold_into_the_final_message(
    data: st.DataObject, blocks: list[tuple[str, list[str]]]
) -> None:
    events = translate("anthropic", data.draw(_split(_anthropic_body(blocks))))
    message = final_message(events).message
    text = "".join("".join(pieces) for kind, pieces in blocks if kind == "text")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == message.content == text
    thinking = ["".join(pieces) for kind, pieces in blocks if kind == "thinking"]
    assert [p.text for p in message.thinking] == thinking
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "".join(thinking)
    tools = [(i, pieces) for i, (kind, pieces) in enumerate(blocks) if kind == "tool_use"]
    assert [(c.id, c.parsed_arguments()) for c in message.tool_calls] == [
        (f"toolu_{i}", json.loads("".join(pieces) or "{}")) for i, pieces in tools
    ]
    assert (turn_end(events).usage.input_tokens, turn_end(events).usage.output_tokens) == (9, 5)
