"""The interactive `nav agent` REPL.

`run_repl` is an async function that gets everything it touches injected -
the prompt session (prompt_toolkit), the consoles and renderer (rich), the
conversation - so tests drive it through a pipe input and capture consoles,
with no terminal and no network (the clai / llm `_run_chat` pattern).

Keys: Enter sends; Ctrl-C or Esc while a turn runs cancels that turn (the
agent keeps the partial answer, marked, and answers every tool call) and
returns to the prompt; Ctrl-C at the prompt clears the line; Ctrl-D on an
empty line, `exit`, `quit` or `/exit` leave with status 0. Pasting several
lines inserts them as one message (bracketed paste). An error inside a turn is
printed in one red line and the loop goes on.

While a turn runs the user can keep typing (`TypeAhead`): each line is queued,
shown as queued, and handed to the model before its next call in the same
turn. Lines the turn did not use come back: after a cancel they fill the next
prompt; after an answer they are sent as the next message. A SIGINT (Ctrl-C
where the terminal is not in raw mode) also cancels the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from typing import Protocol

from prompt_toolkit import PromptSession
from rich.console import Console
from rich.text import Text

from navagent.cli.render import TerminalRenderer, format_messages
from navagent.cli.slash import SlashAction, SlashState, handle_slash_command
from navagent.cli.type_ahead import TypeAhead
from navagent.core.agent import Steering
from navagent.core.errors import ChatFailedError
from navagent.core.messages import Message, ToolCall

__all__ = ["EXIT_WORDS", "PROMPT", "PromptConfirm", "ReplConversation", "run_repl"]

PROMPT = "nav> "
EXIT_WORDS = frozenset({"exit", "quit"})
REPLAY_MESSAGES = 8
"""How many messages of a resumed session are shown again at start."""


class ReplConversation(Protocol):
    """What the REPL needs from a conversation (`navagent.cli.conversation.AgentSession`)."""

    @property
    def label(self) -> str:
        """The session's name or short id."""
        ...

    @property
    def resumed(self) -> tuple[Message, ...]:
        """The history a resumed session starts from; empty for a new one."""
        ...

    def send(self, text: str, *, steering: Steering | None = None) -> Awaitable[object]:
        """Run one turn; raises `ChatFailedError` when it fails."""
        ...

    def full_log(self) -> tuple[Message, ...]:
        """Everything said so far, compacted turns included."""
        ...

    def clear(self) -> None:
        """Start a new conversation."""
        ...

    def compact(self) -> Awaitable[bool]:
        """Summarize older turns now; False when there was nothing to compact."""
        ...

    routing_hint: str
    """The gateway route of the next turns (`/model`)."""


class PromptConfirm:
    """Asks y/N before a tool that changes the cluster runs (llm's `_approve_tool_call`).

    The `confirm` callback of `NavToolRunner`. The answer defaults to No;
    Ctrl-D means No (the model is told the user declined); Ctrl-C means No and
    cancels the whole turn (`interrupt_turn`, set by the REPL).
    """

    def __init__(
        self, session: PromptSession[str], *, err: Console, renderer: TerminalRenderer
    ) -> None:
        """Ask through `session` (its own, so answers stay out of the line history)."""
        self._session = session
        self._err = err
        self._renderer = renderer
        self.interrupt_turn: Callable[[], object] = lambda: None
        """Cancels the running turn; the REPL sets it."""
        self.pause_typing: Callable[[], contextlib.AbstractContextManager[None]] = (
            contextlib.nullcontext
        )
        """Stops the REPL's type-ahead while the question has the keyboard."""

    async def __call__(self, call: ToolCall, argv: tuple[str, ...]) -> bool:
        """Show the exact command and return True only for an explicit yes."""
        self._renderer.pause()
        self._err.print(
            Text.assemble(
                (f"{call.name} wants to run: ", "bold yellow"), (shlex.join(argv), "bold")
            )
        )
        try:
            with self.pause_typing():
                answer = await self._session.prompt_async("Run it? [y/N] ", handle_sigint=False)
        except EOFError:
            answer = ""
        except KeyboardInterrupt:
            self.interrupt_turn()
            return False
        return answer.strip().lower() in {"y", "yes"}


async def run_repl(
    conversation: ReplConversation,
    *,
    session: PromptSession[str],
    console: Console,
    renderer: TerminalRenderer,
    slash_state: SlashState | None = None,
    confirm: PromptConfirm | None = None,
    sessions_kept: bool = True,
) -> int:
    """Read messages and answer them until the user leaves; returns the exit status.

    Args:
        conversation: Who answers (an agent with its session).
        session: Reads each line (history, editing, paste).
        console: Where slash-command output and the resumed history go.
        renderer: The agent's event sink; also prints errors and notes.
        slash_state: Tools and flags the slash commands show.
        confirm: The y/N question the tools ask, wired to pause type-ahead
            and to cancel the turn on Ctrl-C.
        sessions_kept: Sessions outlive this run (False for a plain `--demo`,
            whose database is temporary): only then say where one was saved.
    """
    repl = _Repl(conversation, session=session, console=console, renderer=renderer)
    repl.sessions_kept = sessions_kept
    if confirm is not None:
        confirm.interrupt_turn = repl.interrupt
        confirm.pause_typing = repl.type_ahead.paused
    return await repl.run(slash_state or SlashState())


class _Repl:
    def __init__(
        self,
        conversation: ReplConversation,
        *,
        session: PromptSession[str],
        console: Console,
        renderer: TerminalRenderer,
    ) -> None:
        self._conversation = conversation
        self._session = session
        self._console = console
        self._renderer = renderer
        self._turn: asyncio.Task[object] | None = None
        self._prefill = ""
        self.sessions_kept = True
        self.type_ahead = TypeAhead(
            session.input,
            screen=session.output,
            on_cancel=self.interrupt,
            on_queued=renderer.queued,
            on_typing=renderer.typing,
        )
        renderer.interrupt_hint = "esc to interrupt"
        renderer.leaving = lambda: self.type_ahead.leave_requested

    async def run(self, state: SlashState) -> int:
        self._replay()
        with self._sigint_cancels_turn():
            while True:
                prefill, self._prefill = self._prefill, ""
                try:
                    line = await self._session.prompt_async(
                        PROMPT, handle_sigint=False, default=prefill
                    )
                except KeyboardInterrupt:
                    if not self._session.default_buffer.text.strip():
                        self._renderer.note("(Ctrl-D or `exit` leaves)")
                    continue
                except EOFError:
                    return 0
                text = line.strip()
                if not text:
                    continue
                if text.lower() in EXIT_WORDS:
                    return 0
                if text.startswith("/"):
                    code, state = await self._slash(text, state)
                    if code is not None:
                        return code
                    if self.type_ahead.leave_requested:
                        return 0
                    continue
                await self._run_turn(text)
                if self.type_ahead.leave_requested:
                    return 0

    def _replay(self) -> None:
        resumed = self._conversation.resumed
        if not resumed:
            return
        shown = resumed[-REPLAY_MESSAGES:]
        skipped = f", the last {len(shown)} shown" if len(shown) < len(resumed) else ""
        self._console.print(
            Text(
                f"Resuming session {self._conversation.label} ({len(resumed)} messages{skipped}):",
                style="bold",
            )
        )
        self._console.print(format_messages(shown, markdown=self._renderer.markdown))
        self._console.print(Text("─" * 40, style="dim"))

    async def _slash(self, text: str, state: SlashState) -> tuple[int | None, SlashState]:
        try:
            state = replace(state, log=self._conversation.full_log())
        except Exception as exc:  # e.g. an unreadable session log: /history shows less
            self._renderer.error(f"cannot read the conversation log: {exc}")
        result, new_state = handle_slash_command(text, state)
        if new_state.conversation != state.conversation:
            self._conversation.clear()
        if result.output is not None:
            self._console.print(result.output)
        match result.action:
            case SlashAction(kind="retry", argument=last):
                await self._run_turn(last)
            case SlashAction(kind="compact"):
                await self._compact()
            case SlashAction(kind="model", argument=hint):
                self._conversation.routing_hint = hint
            case None:
                pass
        return result.exit_code, new_state

    async def _compact(self) -> None:
        self._renderer.begin_turn()
        try:
            compacted = await self._conversation.compact()
        except Exception as exc:  # e.g. AgentBusyError: say it, keep the REPL alive
            compacted = True
            self._renderer.error(f"cannot compact: {exc}")
        finally:
            self._renderer.end_turn()
        if not compacted:
            self._renderer.note("nothing to compact yet: the conversation is still short")

    async def _run_turn(self, text: str) -> None:
        before = self._conversation.label
        try:
            await self._run_turns(text)
        finally:
            after = self._conversation.label
            if self.sessions_kept and before == "new" and after != "new":
                self._renderer.note(f"saved as session {after}")

    async def _run_turns(self, text: str) -> None:
        while text:
            cancelled = await self._one_turn(text)
            # What was typed during the turn that the model did not get: after
            # a cancel all of it waits in the prompt; after an answer the lines
            # sent with Enter are the next message, an unfinished one waits.
            queued, unfinished = self.type_ahead.take(), self.type_ahead.take_unfinished()
            if cancelled:
                self._prefill = "\n".join([*queued, unfinished] if unfinished else queued)
                return
            self._prefill = unfinished
            text = "\n".join(queued)

    async def _one_turn(self, text: str) -> bool:
        """Run one turn; True when it was cancelled."""
        self._renderer.begin_turn()
        send = self._conversation.send(text, steering=self.type_ahead.take)
        task: asyncio.Task[object] = asyncio.create_task(_await(send))
        self._turn = task
        try:
            with self.type_ahead.active():
                await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()  # the REPL itself is being cancelled: take the turn down with it
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise
        finally:
            self._turn = None
            self._renderer.end_turn()
        if task.cancelled():
            return True  # the renderer showed the interrupted note
        error = task.exception()
        if error is None or isinstance(error, ChatFailedError):
            return False  # a failed completion was already shown by the renderer
        message = str(error).strip().splitlines()
        self._renderer.error(f"{type(error).__name__}: {message[0] if message else 'no details'}")
        return False

    def interrupt(self) -> bool:
        """Cancel the running turn; False when there is none."""
        turn = self._turn
        if turn is None or turn.done():
            return False
        turn.cancel()
        return True

    @contextlib.contextmanager
    def _sigint_cancels_turn(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self.interrupt)
        except (NotImplementedError, RuntimeError, ValueError):  # no signals here (not main thread)
            yield
            return
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)


async def _await(awaitable: Awaitable[object]) -> object:
    return await awaitable
