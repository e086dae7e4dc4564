"""The reasoning dialects replay every translator path they have (issue 42).

Each test plants a defect a user would notice in one translator path that
only an OpenAI-compatible server's (or a redacted conversation's) stream
takes, and checks that the replay of the committed cassette of
`reasoning-dialects`, `reasoning-details`, `reasoning-tool-loop` (Mistral's
thinking blocks), `thinking-round-trip` (Groq's `reasoning`) or
`parallel-logs` (o4-mini's reasoning before each call) now fails, naming the turn and
what differs: the next request's echo of the reasoning (matched against the
recorded request), or what the client was shown against the final message.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from navagent.core.events import ToolCallStart
from navagent.core.wire_formats import wire_format
from navagent.fixtures.harness import SimulatedCluster, load_scenario, replay_scenario
from navagent.fixtures.harness.cassettes._cassette import load_cassette
from navagent.gateway.anthropic import request as anthropic_request
from navagent.gateway.openai import request as openai_request
from navagent.gateway.openai import stream as openai_stream
from navagent.gateway.openai_responses import request as responses_request
from tests.scenarios.conftest import CASSETTES, CopyCase


def _translator(provider: str) -> Any:
    return importlib.import_module(wire_format(provider).gateway).Translator


def echo_content_only_beside_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """`reasoning_content` goes back only on messages with tool calls (an answer's is lost)."""
    original = openai_request._echo_reasoning

    def echo(assistant: Any, message: Any, origin: str, echo: Any) -> None:
        original(assistant, message, origin, echo)
        if not message.tool_calls:
            assistant.pop("reasoning_content", None)

    monkeypatch.setattr(openai_request, "_echo_reasoning", echo)


def drop_reasoning_details(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenRouter's `reasoning_details` are never sent back."""
    original = openai_request._echo_reasoning

    def echo(assistant: Any, message: Any, origin: str, echo: Any) -> None:
        original(assistant, message, origin, echo)
        assistant.pop("reasoning_details", None)

    monkeypatch.setattr(openai_request, "_echo_reasoning", echo)


def keep_first_detail_fragment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `reasoning_details` item keeps its first text fragment, not the joined text."""
    original = openai_stream._DetailItem.merge

    def merge(self: Any, fragment: dict[str, Any]) -> None:
        if "text" in self.fields:
            fragment = {key: value for key, value in fragment.items() if key != "text"}
        original(self, fragment)

    monkeypatch.setattr(openai_stream._DetailItem, "merge", merge)


def hide_raw_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Responses `reasoning_text.delta` is kept in the message but never streamed."""
    translator = _translator("openai-responses")
    original = translator._reasoning_text_delta
    monkeypatch.setattr(translator, "_reasoning_text_delta", lambda s, p: original(s, p) and [])


def ignore_final_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    """The final response's re-encrypted reasoning is ignored (`output_item.done`'s goes back)."""
    monkeypatch.setattr(_translator("openai-responses"), "_final_reasoning", lambda s, o: None)


def drop_redacted_thinking(monkeypatch: pytest.MonkeyPatch) -> None:
    """`redacted_thinking` blocks are not sent back."""
    original = anthropic_request._thinking

    def thinking(part: Any, origin: str) -> Any:
        block = original(part, origin)
        return None if block is not None and block["type"] == "redacted_thinking" else block

    monkeypatch.setattr(anthropic_request, "_thinking", thinking)


def drop_tool_call_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic `tool_use` starts are never shown (the final message still has the calls)."""
    translator = _translator("anthropic")
    original = translator._block_start

    def start(self: Any, payload: dict[str, Any]) -> Any:
        return [e for e in original(self, payload) if not isinstance(e, ToolCallStart)]

    monkeypatch.setattr(translator, "_block_start", start)


def refuse_thinking_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mistral's thinking block, a list of text chunks, is refused as malformed."""
    original = openai_stream.OpenAIStreamTranslator._content_blocks

    def blocks(self: Any, content: list[Any], events: list[Any]) -> str:
        if any(isinstance(block, dict) and block.get("type") == "thinking" for block in content):
            return "choices[0].delta.content[] thinking block has no thinking list"
        return original(self, content, events)

    monkeypatch.setattr(openai_stream.OpenAIStreamTranslator, "_content_blocks", blocks)


def thinking_blocks_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mistral's thinking blocks are shown as answer text (every block's text is text)."""

    def blocks(self: Any, content: list[Any], events: list[Any]) -> str:
        for block in content:
            chunks = block.get("thinking") if block.get("type") == "thinking" else [block]
            for chunk in chunks:
                self._content(chunk["text"], events)
        return ""

    monkeypatch.setattr(openai_stream.OpenAIStreamTranslator, "_content_blocks", blocks)


def ignore_reasoning_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only `reasoning_content` is read: Groq's `reasoning` strings are lost."""
    original = openai_stream.OpenAIStreamTranslator._delta

    def delta(self: Any, fields: dict[str, Any], events: list[Any]) -> str:
        if "reasoning_details" not in fields:
            fields = {key: value for key, value in fields.items() if key != "reasoning"}
        return original(self, fields, events)

    monkeypatch.setattr(openai_stream.OpenAIStreamTranslator, "_delta", delta)


def every_reasoning_item_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reasoning item goes back before the first call, whichever call it preceded."""
    original = responses_request._reasoning

    def reasoning(part: Any, origin: str) -> Any:
        found = original(part, origin)
        return None if found is None else (found[0], 0)

    monkeypatch.setattr(responses_request, "_reasoning", reasoning)


def reasoning_after_its_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reasoning item that followed a call goes back after the call after it."""
    original = responses_request._reasoning

    def reasoning(part: Any, origin: str) -> Any:
        found = original(part, origin)
        return found if found is None or not found[1] else (found[0], found[1] + 1)

    monkeypatch.setattr(responses_request, "_reasoning", reasoning)


def reasoning_without_summary_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only reasoning items with a summary go back (the later, silent ones are lost)."""
    original = responses_request._reasoning

    def reasoning(part: Any, origin: str) -> Any:
        found = original(part, origin)
        return found if found is None or found[0]["summary"] else None

    monkeypatch.setattr(responses_request, "_reasoning", reasoning)


Plant = Callable[[pytest.MonkeyPatch], None]


@pytest.mark.parametrize(
    ("scenario_id", "provider", "plant", "expected"),
    [
        (
            "reasoning-dialects",
            "openai",
            echo_content_only_beside_calls,
            (
                "format openai, turn 2, request 3 (",
                "the request differs from the cassette's at messages[4].reasoning_content\n"
                '    cassette: "I have the results of sandbox_logs; I will report them."\n'
                "    replay:   (missing)",
            ),
        ),
        (
            "reasoning-details",
            "openai",
            drop_reasoning_details,
            (
                "format openai, turn 1, request 2 (",
                "the request differs from the cassette's at messages[2].reasoning_details\n",
            ),
        ),
        (
            "reasoning-details",
            "openai",
            keep_first_detail_fragment,
            ("at messages[2].reasoning_details[0].text\n", '    replay:   ""'),
        ),
        (
            "reasoning-dialects",
            "openai-responses",
            hide_raw_reasoning,
            ("[shown-once] completion 1 streamed the reasoning '' but its final message's is",),
        ),
        (
            "reasoning-details",
            "openai-responses",
            ignore_final_reasoning,
            (
                "format openai-responses, turn 1, request 2 (",
                "the request differs from the cassette's at input[2].encrypted_content",
            ),
        ),
        (
            "reasoning-dialects",
            "anthropic",
            drop_redacted_thinking,
            (
                "format anthropic, turn 1, request 2 (",
                "at messages[1].content[0].type\n"
                '    cassette: "redacted_thinking"\n'
                '    replay:   "text"',
            ),
        ),
        (
            "reasoning-dialects",
            "anthropic",
            drop_tool_call_starts,
            ("[shown-once] completion 1 announced tool calls [] but its final message has [(0,",),
        ),
        (
            "reasoning-tool-loop",
            "openai",
            refuse_thinking_lists,
            (
                "turn 1: failed unexpectedly (upstream_unavailable): OpenAI stream:"
                " choices[0].delta.content[] thinking block has no thinking list",
            ),
        ),
        (
            "reasoning-tool-loop",
            "openai",
            thinking_blocks_as_text,
            (
                "format openai, turn 1, request 2 (",
                "the request differs from the cassette's at messages[2].content\n"
                "    cassette: null\n"
                '    replay:   "The user asked:',
            ),
        ),
        (
            "thinking-round-trip",
            "openai",
            ignore_reasoning_field,
            ("format openai, turn 1 (", "expected reasoning from openai"),
        ),
        (
            "parallel-logs",
            "openai-responses",
            every_reasoning_item_first,
            (
                "format openai-responses, turn 1, request 2 (",
                "the request differs from the cassette's at input[3].type\n"
                '    cassette: "function_call"\n'
                '    replay:   "reasoning"',
            ),
        ),
        (
            "parallel-logs",
            "openai-responses",
            reasoning_after_its_call,
            ("the request differs from the cassette's at input[4].type\n",),
        ),
        (
            "parallel-logs",
            "openai-responses",
            reasoning_without_summary_dropped,
            ("the request differs from the cassette's at input[4].type\n",),
        ),
    ],
)
async def test_a_defect_in_a_dialect_path_fails_the_replay(
    scenario_id: str,
    provider: str,
    plant: Plant,
    expected: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    copy_case: CopyCase,
    cluster: SimulatedCluster,
) -> None:
    folder = copy_case(scenario_id, providers=(provider,))
    scenario = load_scenario(folder / f"{scenario_id}.yaml")
    assert (await replay_scenario(scenario, provider, cluster=cluster)).passed

    plant(monkeypatch)
    result = await replay_scenario(scenario, provider, cluster=cluster)

    assert not result.passed
    for text in expected:
        assert text in result.report, result.report


def test_route_options_are_recorded_for_the_chat_completions_route_only() -> None:
    def echo(provider: str) -> str | None:
        return load_cassette(CASSETTES / provider / "reasoning-dialects.yaml").source.reasoning_echo

    assert echo("openai") == "reasoning_content"  # the replay's route echoes the same way
    assert echo("openai-responses") is None and echo("anthropic") is None
