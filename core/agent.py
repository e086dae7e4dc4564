"""The client-side tool-calling loop.

One `Agent` holds one conversation. `run_turn` appends the user's message and
then repeats: stream a completion, append it, run its tool calls, append their
results in call order, until the model answers without tool calls or the
per-turn iteration limit is hit. Reads run concurrently; a call that changes
the cluster (`barrier_tools`) is a barrier: the calls before it finish first,
it runs alone, the calls after it start after it ends, so "create x and show
its logs" in one response never reads before the create. Lines the user typed
while the turn ran (`steering`) join the history as user messages before the
next completion of the same turn. Events go to an injected sink; the
model, the tools and persistence are injected too (`ChatClient`, `ToolRunner`,
`ConversationRecorder`), so the loop holds no terminal, subprocess or SQLite
code and tests drive it with fakes.

Whatever ends a turn - an answer, the limit, a failed or timed-out completion,
a cancelled task (Ctrl-C), a crashed tool runner - the history afterwards
passes `validate_history`, so the next turn sends a request providers accept:

- a failed completion appends nothing (the user message stays);
- a cancel while streaming keeps the partial text, marked as interrupted,
  and drops partial tool calls;
- a cancel while tools run cancels every tool task and gives each call that
  has no result a result saying the user cancelled it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn, Protocol

from navagent.core.agent_events import (
    AgentEvent,
    AgentNotice,
    ContextCompacted,
    EventSink,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnFinishReason,
    TurnStarted,
)
from navagent.core.chat_client import ChatClient, open_stream
from navagent.core.compaction import (
    CompactionPolicy,
    build_summary_request,
    choose_cut,
    estimate_tokens,
    summarize,
    summary_message,
)
from navagent.core.errors import ChatFailedError, NavAgentError
from navagent.core.events import (
    ChatError,
    MessageComplete,
    StreamError,
    TextDelta,
    TurnEnd,
    Usage,
)
from navagent.core.history import validate_history
from navagent.core.messages import (
    DEFAULT_ROUTING_HINT,
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.redaction import redact_cut_end
from navagent.core.tools import TOOLS_BY_NAME, ToolOutcome, ToolRunner

__all__ = [
    "BARRIER_TOOLS",
    "CANCELLED_RESULT",
    "CUT_AT_LIMIT_NOTE",
    "DEFAULT_MAX_ITERATIONS",
    "FILTERED_NOTE",
    "INTERRUPTED_MARK",
    "PAUSED_NOTE",
    "REFUSED_NOTE",
    "Agent",
    "AgentBusyError",
    "ConversationRecorder",
    "NothingToUndoError",
    "Steering",
    "call_batches",
]

DEFAULT_MAX_ITERATIONS = 20
"""Completions per turn before the loop stops and hands back to the user."""
INTERRUPTED_MARK = "\n\n[interrupted by the user]"
"""Appended to the partial text of a completion cancelled while streaming."""
CANCELLED_RESULT = "cancelled: the user interrupted the turn before this tool finished"
"""The result of a tool call that was still running when its turn was cancelled."""
REFUSED_NOTE = "the model declined to answer this request"
"""The turn's closing note when the model refused."""
CUT_AT_LIMIT_NOTE = (
    "the answer stopped at the model's output token limit, so it may be cut short;"
    " send 'continue' for the rest"
)
"""The turn's closing note when the answer ended at the output limit (finish `length`)."""
FILTERED_NOTE = "the provider's content filter stopped the answer, so it may be incomplete"
"""The turn's closing note when a content filter ended the answer (finish `content_filter`)."""
PAUSED_NOTE = (
    "the provider paused this turn (pause_turn), which only its server-side tools do and this"
    " agent offers none; what the model said so far is kept, send another message to continue"
)
"""The turn's closing note for a `pause_turn` finish."""
BARRIER_TOOLS = frozenset(name for name, spec in TOOLS_BY_NAME.items() if spec.needs_confirmation)
"""Tools that change the cluster, so later calls may depend on them."""

Steering = Callable[[], Sequence[str]]
"""Hands over (and forgets) the lines the user queued while the turn ran."""


def call_batches(
    calls: Sequence[ToolCall], barriers: frozenset[str] = BARRIER_TOOLS
) -> list[list[int]]:
    """Split call indices into groups that run one after another.

    Consecutive non-barrier calls share a group (they run concurrently); a
    barrier call is a group of its own, so call order is kept around it.
    """
    batches: list[list[int]] = []
    for index, call in enumerate(calls):
        previous = calls[batches[-1][-1]].name if batches else None
        if previous is not None and previous not in barriers and call.name not in barriers:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


class ConversationRecorder(Protocol):
    """Persists the conversation as it happens (implemented by the session store).

    Calls are synchronous and short: each writes one small row. Tool results
    are recorded in the order the tools finish, which may differ from call
    order; loading puts them back in call order (`repair_history`).
    """

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        """Persist one message the moment it becomes part of the conversation.

        `usage` is what the completion that produced an assistant message cost.
        """
        ...

    def record_usage(self, usage: Usage) -> None:
        """Persist what a completion that added no message to the history cost.

        An empty completion (an Anthropic refusal without words) stays out of
        the history, which providers would refuse, but it was billed.
        """
        ...

    def record_compaction(self, summary: str, kept: tuple[Message, ...]) -> None:
        """Persist that the history is now `summary_message(summary)` + `kept`."""
        ...

    def record_rewind(self, messages: int) -> None:
        """Persist that the last `messages` messages recorded are taken back (`/retry`).

        Whatever was recorded after the first of them (a compaction) goes with them.
        """
        ...


def _session_id(recorder: ConversationRecorder | None) -> str:
    """The recorder's `session_id` attribute when it has one (the session store's do)."""
    value = getattr(recorder, "session_id", "")
    return value if isinstance(value, str) else ""


class AgentBusyError(NavAgentError, RuntimeError):
    """`run_turn` or `compact` was called while a turn was still running."""


class NothingToUndoError(NavAgentError, LookupError):
    """`undo_last_turn` found no turn to take back."""


@dataclass(frozen=True)
class _TurnStart:
    """How to take the last turn back: the history before it and its message."""

    before: tuple[Message, ...]
    text: str


def _ignore(_event: AgentEvent) -> None:
    """The default sink."""


class Agent:
    """One conversation with the model and its tools."""

    def __init__(
        self,
        client: ChatClient,
        runner: ToolRunner,
        *,
        system_prompt: str,
        tools: tuple[Tool, ...],
        sink: EventSink = _ignore,
        routing_hint: str = DEFAULT_ROUTING_HINT,
        max_tokens: int | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        history: Sequence[Message] = (),
        recorder: ConversationRecorder | None = None,
        compaction: CompactionPolicy | None = None,
        barrier_tools: frozenset[str] = BARRIER_TOOLS,
    ) -> None:
        """Set up a conversation, new or resumed.

        Args:
            client: Streams completions (e.g. `GrpcChatClient`).
            runner: Runs one tool call (never raises but for cancellation).
            system_prompt: Sent first in every request; not part of `history`.
            tools: The tools offered to the model on every request.
            sink: Receives every `AgentEvent`, in order.
            routing_hint: Selects the gateway route.
            max_tokens: Output cap per completion; None lets the gateway choose.
            max_iterations: Completions per turn before the turn stops.
            history: A resumed conversation (e.g. `SessionStore.load_history`).
            recorder: Persists messages as they happen; None keeps nothing.
            compaction: When to compact older turns; None never compacts
                automatically (`compact()` still works).
            barrier_tools: Calls that run alone, in call order (see `call_batches`).

        Raises:
            InvalidHistoryError: `history` breaks the tool-call invariant.
            ValueError: `max_iterations` is below 1.
        """
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        validate_history(history)
        self._client = client
        self._runner = runner
        self._system_prompt = system_prompt
        self._tools = tools
        self._sink = sink
        self._routing_hint = routing_hint
        self._max_tokens = max_tokens
        self._max_iterations = max_iterations
        self._history: list[Message] = list(history)
        self._recorder = recorder
        self._compaction = compaction
        self._barrier_tools = barrier_tools
        self._busy = False
        self._last_turn: _TurnStart | None = None
        self._recorded_in_turn = 0
        """Messages recorded since the last turn started (what a rewind takes back)."""
        self._shown_text = False
        """The completion in progress has streamed answer text (shown, not yet kept)."""

    @property
    def history(self) -> tuple[Message, ...]:
        """The active conversation after the system prompt.

        After a compaction it starts with the summary's system message. While a
        turn's tools run, the last assistant message's results are not yet in it.
        """
        return tuple(self._history)

    @property
    def session_id(self) -> str:
        """The session this conversation is saved in; empty when none (yet)."""
        return _session_id(self._recorder)

    @property
    def routing_hint(self) -> str:
        """The gateway route the next completions ask for (`/model` changes it)."""
        return self._routing_hint

    @routing_hint.setter
    def routing_hint(self, hint: str) -> None:
        self._routing_hint = hint

    @property
    def request_messages(self) -> tuple[Message, ...]:
        """What the next request sends: the system prompt, then `history`."""
        prompt: tuple[Message, ...] = (
            (SystemMessage(content=self._system_prompt),) if self._system_prompt else ()
        )
        return prompt + tuple(self._history)

    async def run_turn(self, user_text: str, *, steering: Steering | None = None) -> TurnFinished:
        """Answer one user message, running tools until the model is done.

        `steering`, when given, is asked before every completion after the
        first; each line it returns becomes a user message at that point of
        the history (after the tool results, so the history stays valid).

        Returns:
            The `TurnFinished` event (reason `answered` or `iteration_limit`),
            also sent to the sink as the turn's last event.

        Raises:
            ChatFailedError: a completion failed or timed out; the sink has
                already seen the `StreamError` and a `TurnFinished`.
            asyncio.CancelledError: the task was cancelled; history is valid.
            AgentBusyError: another turn is still running.
        """
        with self._exclusive():
            self._last_turn = _TurnStart(before=tuple(self._history), text=user_text)
            self._recorded_in_turn = 0
            self._append(UserMessage(content=user_text))  # a lazy session exists after this
            self._emit(TurnStarted(text=user_text, session_id=self.session_id))
            iterations = 0
            compaction_allowed = True
            try:
                while iterations < self._max_iterations:
                    if compaction_allowed and self._compaction is not None:
                        # One failed attempt per turn is enough noise.
                        compaction_allowed = await self._maybe_compact(self._compaction)
                    if iterations and steering is not None:
                        for line in steering():
                            self._append(UserMessage(content=line))
                    iterations += 1
                    completed = await self._complete()
                    if isinstance(completed, ChatError):
                        self._fail(completed, iterations, partial=self._shown_text)
                    result, end = completed
                    if not result.is_empty:
                        self._append(result, usage=end.usage if end is not None else None)
                    elif end is not None and self._recorder is not None:
                        self._record_usage(end.usage)
                    if not result.tool_calls:
                        return self._finish_without_calls(result, end, iterations)
                    await self._run_tools(result.tool_calls)
                return self._finish(
                    "iteration_limit",
                    f"stopped after {iterations} model call{'' if iterations == 1 else 's'} in"
                    " this turn without a final"
                    " answer; send another message to let the model continue",
                    iterations,
                )
            except asyncio.CancelledError:
                self._emit(
                    TurnFinished(
                        reason="cancelled",
                        message="turn cancelled",
                        iterations=iterations,
                        session_id=self.session_id,
                    )
                )
                raise

    def undo_last_turn(self) -> str:
        """Take the last turn back, for `/retry`; returns the message that started it.

        The history returns to what it was before that message (a compaction
        done since is undone too), and the recorder is told, so the saved
        session ends up as if the turn never ran. For a resumed conversation
        with no turn run yet, the last turn starts at the last user message.

        Raises:
            NothingToUndoError: nothing was said yet, or the last message was
                compacted into a summary.
            AgentBusyError: a turn is running.
        """
        with self._exclusive():
            turn, recorded = self._last_turn, self._recorded_in_turn
            if turn is None:
                turn, recorded = self._last_user_turn()
            self._last_turn, self._recorded_in_turn = None, 0
            self._history = list(turn.before)
            if self._recorder is not None and recorded:
                self._persist(lambda recorder: recorder.record_rewind(recorded))
            return turn.text

    def _last_user_turn(self) -> tuple[_TurnStart, int]:
        for index in range(len(self._history) - 1, -1, -1):
            message = self._history[index]
            if isinstance(message, UserMessage):
                before = tuple(self._history[:index])
                return _TurnStart(before=before, text=message.content), len(self._history) - index
        raise NothingToUndoError(
            "there is no message to take back (nothing was said yet, or it was compacted)"
        )

    async def compact(self) -> bool:
        """Compact older turns now, whatever the size; True when it happened.

        A failure is reported to the sink as a notice and changes nothing.
        """
        with self._exclusive():
            policy = self._compaction or CompactionPolicy()
            return await self._compact(policy, estimate_tokens(self.request_messages, self._tools))

    # --- completion ---------------------------------------------------------

    async def _complete(self) -> tuple[AssistantMessage, TurnEnd | None] | ChatError:
        request = ChatRequest(
            messages=self.request_messages,
            tools=self._tools,
            routing_hint=self._routing_hint,
            max_tokens=self._max_tokens,
        )
        streamed: list[str] = []
        self._shown_text = False
        end: TurnEnd | None = None
        try:
            async with open_stream(self._client, request) as events:
                async for event in events:
                    self._emit(event)
                    match event:
                        case TextDelta():
                            streamed.append(event.text)
                            self._shown_text = self._shown_text or bool(event.text.strip())
                        case TurnEnd():
                            end = event
                        case MessageComplete():
                            return event.message, end
                        case StreamError():
                            return event.error
                        case _:
                            pass
        except asyncio.CancelledError:
            # Cut where the user stopped it: it may end in half a credential,
            # which redaction could not recognise once saved.
            partial = redact_cut_end("".join(streamed))
            if partial.strip():
                self._append(AssistantMessage(content=partial + INTERRUPTED_MARK))
            raise
        return ChatError(message="the completion ended without a final message", code="internal")

    def _fail(self, error: ChatError, iterations: int, *, partial: bool = False) -> NoReturn:
        reason = "timeout" if error.code == "timeout" else "error"
        self._emit(
            TurnFinished(
                reason=reason,
                message=error.message,
                iterations=iterations,
                error=error,
                session_id=self.session_id,
                partial=partial,
            )
        )
        raise ChatFailedError(error)

    def _finish_without_calls(
        self, result: AssistantMessage, end: TurnEnd | None, iterations: int
    ) -> TurnFinished:
        """End a turn whose last completion asked for no tools."""
        finish = end.finish_reason if end is not None else "stop"
        if finish == "pause_turn":
            return self._finish("paused", PAUSED_NOTE, iterations)
        if result.refusal or finish == "refusal":
            return self._finish("refused", REFUSED_NOTE, iterations)
        if finish == "length":
            return self._finish("answered", CUT_AT_LIMIT_NOTE, iterations)
        if finish == "content_filter":
            return self._finish("answered", FILTERED_NOTE, iterations)
        note = "" if result.content else "the model returned an empty answer"
        return self._finish("answered", note, iterations)

    def _finish(self, reason: TurnFinishReason, message: str, iterations: int) -> TurnFinished:
        event = TurnFinished(
            reason=reason, message=message, iterations=iterations, session_id=self.session_id
        )
        self._emit(event)
        return event

    # --- tools --------------------------------------------------------------

    async def _run_tools(self, calls: tuple[ToolCall, ...]) -> None:
        outcomes: dict[int, ToolOutcome] = {}
        try:
            for batch in call_batches(calls, self._barrier_tools):
                # A TaskGroup cancels every sibling when the turn is cancelled (or a
                # sink raises), and waits for them, so no tool outlives its turn.
                async with asyncio.TaskGroup() as group:
                    for index in batch:
                        self._emit(ToolStarted(index=index, call=calls[index]))
                        group.create_task(self._run_tool(index, calls[index], outcomes))
        finally:
            for index, call in enumerate(calls):
                outcome = outcomes.get(index)
                if outcome is None:
                    outcome = ToolOutcome(call=call, status="cancelled", content=CANCELLED_RESULT)
                    self._record(ToolResultMessage(tool_call_id=call.id, content=outcome.content))
                    self._emit(ToolFinished(index=index, outcome=outcome))
                self._history.append(
                    ToolResultMessage(tool_call_id=call.id, content=outcome.content)
                )

    async def _run_tool(self, index: int, call: ToolCall, outcomes: dict[int, ToolOutcome]) -> None:
        try:
            outcome = await self._runner.run(call)
        except Exception as exc:  # the model must see a result even if a runner breaks its contract
            outcome = ToolOutcome(
                call=call,
                status="failed",
                content=f"the tool runner failed: {type(exc).__name__}: {exc}",
            )
        outcomes[index] = outcome
        self._record(ToolResultMessage(tool_call_id=call.id, content=outcome.content))
        self._emit(ToolFinished(index=index, outcome=outcome))

    # --- compaction ---------------------------------------------------------

    async def _maybe_compact(self, policy: CompactionPolicy) -> bool:
        """Compact when the context is over the threshold; False after a failure."""
        tokens = estimate_tokens(self.request_messages, self._tools)
        if tokens <= policy.threshold_tokens:
            return True
        return await self._compact(policy, tokens)

    async def _compact(self, policy: CompactionPolicy, tokens_before: int) -> bool:
        cut = choose_cut(self._history, keep_tokens=policy.keep_recent_tokens)
        if cut is None:
            return False
        request = build_summary_request(
            system_prompt=self._system_prompt,
            older=self._history[:cut],
            tools=self._tools,
            routing_hint=self._routing_hint,
            max_tokens=self._max_tokens,
        )
        try:
            summary = await summarize(self._client, request)
        except ChatFailedError as exc:
            self._emit(
                AgentNotice(
                    level="warning",
                    text=f"could not compact the conversation ({exc.error.message});"
                    " continuing with the full history",
                )
            )
            return False
        kept = tuple(self._history[cut:])
        self._history = [summary_message(summary), *kept]
        if self._recorder is not None:
            self._persist(lambda recorder: recorder.record_compaction(summary, kept))
        self._emit(
            ContextCompacted(
                summarized_messages=cut,
                kept_messages=len(kept),
                tokens_before=tokens_before,
                tokens_after=estimate_tokens(self.request_messages, self._tools),
            )
        )
        return True

    # --- plumbing -----------------------------------------------------------

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        if self._busy:
            raise AgentBusyError("a turn is already running on this agent")
        self._busy = True
        try:
            yield
        finally:
            self._busy = False

    def _append(self, message: Message, *, usage: Usage | None = None) -> None:
        self._history.append(message)
        self._record(message, usage=usage)

    def _record(self, message: Message, *, usage: Usage | None = None) -> None:
        self._recorded_in_turn += 1
        if self._recorder is not None:
            self._persist(lambda recorder: recorder.record_message(message, usage))

    def _record_usage(self, usage: Usage) -> None:
        """Save what an empty completion cost: not in the history, but billed."""
        self._persist(lambda recorder: recorder.record_usage(usage))

    def _persist(self, write: _Write) -> None:
        """Run one recorder write; on failure warn once and stop recording.

        Later writes after a lost one would leave a log with a gap, which is
        worse than a log that simply stops; the conversation itself goes on.
        """
        assert self._recorder is not None
        try:
            write(self._recorder)
        except Exception as exc:  # persistence must never end a conversation
            self._recorder = None
            self._emit(
                AgentNotice(
                    level="error",
                    text=f"could not save the session ({exc}); the rest of this conversation"
                    " is not saved",
                )
            )

    def _emit(self, event: AgentEvent) -> None:
        self._sink(event)


class _Write(Protocol):
    def __call__(self, recorder: ConversationRecorder, /) -> None: ...
