"""Compaction: replace older turns with a summary the model writes.

A long session outgrows the model's context. When the estimated request size
passes a threshold, the agent sends the older part of the history plus a user
message starting with `SUMMARY_INSTRUCTION_PREFIX`, and the active context
becomes: system prompt, one system message carrying the summary, and the most
recent turns verbatim. The cut is always at a turn boundary (just before a user
message), so a tool call and its result are never separated, and the current
turn is always kept. The session store keeps the full log for display.

Everything here is pure except `summarize`, which streams the summary through
the injected chat client.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from navagent.core.chat_client import ChatClient, open_stream
from navagent.core.errors import ChatFailedError
from navagent.core.events import ChatError, MessageComplete, StreamError, TextDelta
from navagent.core.messages import (
    ChatRequest,
    FrozenModel,
    Message,
    SystemMessage,
    Tool,
    UserMessage,
)

__all__ = [
    "SUMMARY_HEADER",
    "SUMMARY_INSTRUCTION",
    "SUMMARY_INSTRUCTION_PREFIX",
    "CompactionPolicy",
    "build_summary_request",
    "choose_cut",
    "estimate_tokens",
    "summarize",
    "summary_message",
]

SUMMARY_INSTRUCTION_PREFIX = "Summarize the conversation so far"
"""Every summary request's last user message starts with this exact text; the
simulated provider recognises it and answers with a summary."""
SUMMARY_INSTRUCTION = (
    f"{SUMMARY_INSTRUCTION_PREFIX} so that it can replace the messages above. Keep what"
    " later work depends on: the user's goals, the cluster and the names, ids and states"
    " that tool results showed, what was changed, decisions taken and anything still open."
    " Be concise and factual; answer with the summary only and call no tools."
)
SUMMARY_HEADER = "Summary of the earlier conversation (older messages were compacted):\n\n"
"""Opens the system message that carries a summary in the active context."""

CHARS_PER_TOKEN = 4
"""The estimate's divisor: about four characters of JSON per token for English
text and JSON under the common BPE tokenizers. Rough, but compaction only needs
to know when the context is getting big, and counting exactly would need each
provider's tokenizer on the client."""


class CompactionPolicy(FrozenModel):
    """When to compact and how much to keep.

    Sizes are in estimated tokens (see `estimate_tokens`).
    """

    threshold_tokens: int = Field(default=100_000, gt=0)
    """Compact before a request whose estimated size exceeds this."""
    keep_recent_tokens: int = Field(default=20_000, gt=0)
    """Keep as many recent whole turns as fit in this; the current turn always stays."""


def estimate_tokens(messages: Sequence[Message], tools: Sequence[Tool] = ()) -> int:
    """Estimate a request's size: characters of its JSON serialisation / 4, rounded up.

    Counts every message and tool definition as `model_dump_json` writes them;
    that over-counts keys and punctuation slightly, which errs on the side of
    compacting early.
    """
    chars = sum(len(message.model_dump_json()) for message in messages)
    chars += sum(len(tool.model_dump_json()) for tool in tools)
    return -(-chars // CHARS_PER_TOKEN)


def choose_cut(history: Sequence[Message], *, keep_tokens: int) -> int | None:
    """Pick where the kept part of `history` starts, or None when nothing can go.

    Candidates are the indices of user messages (turn starts) that have
    something other than system messages before them; the last user message is
    the current turn, so it is the latest possible cut. The earliest candidate
    whose suffix fits in `keep_tokens` wins, so as many recent turns as fit are
    kept; when none fits, only the current turn is kept.
    """
    candidates: list[int] = []
    seen_conversation = False
    for index, message in enumerate(history):
        if isinstance(message, UserMessage) and seen_conversation:
            candidates.append(index)
        if not isinstance(message, SystemMessage):
            seen_conversation = True
    if not candidates:
        return None
    for index in candidates:
        if estimate_tokens(history[index:]) <= keep_tokens:
            return index
    return candidates[-1]


def summary_message(summary: str) -> SystemMessage:
    """The system message that stands in for the compacted turns."""
    return SystemMessage(content=SUMMARY_HEADER + summary)


def build_summary_request(
    *,
    system_prompt: str,
    older: Sequence[Message],
    tools: Sequence[Tool],
    routing_hint: str,
    max_tokens: int | None = None,
) -> ChatRequest:
    """The request that asks the model to summarise `older`.

    The tools stay in the request because Anthropic refuses a history with
    tool_use blocks when no tools are defined; the instruction asks for text.
    """
    messages: list[Message] = [SystemMessage(content=system_prompt)] if system_prompt else []
    messages.extend(older)
    messages.append(UserMessage(content=SUMMARY_INSTRUCTION))
    return ChatRequest(
        messages=tuple(messages),
        tools=tuple(tools),
        routing_hint=routing_hint,
        max_tokens=max_tokens,
    )


async def summarize(client: ChatClient, request: ChatRequest) -> str:
    """Stream the summary and return its text.

    Raises:
        ChatFailedError: the completion failed, or produced no text.
    """
    streamed: list[str] = []
    async with open_stream(client, request) as events:
        async for event in events:
            match event:
                case TextDelta():
                    streamed.append(event.text)
                case MessageComplete():
                    text = (event.message.content or "".join(streamed)).strip()
                    if not text:
                        break
                    return text
                case StreamError():
                    raise ChatFailedError(event.error)
                case _:
                    pass
    raise ChatFailedError(ChatError(message="the model returned no summary text", code="internal"))
