"""The interactive `nav agent` REPL.

`run_repl` is an async function that gets everything it touches injected -
the prompt session (prompt_toolkit), the consoles and renderer (rich), the
conversation - so tests drive it through a pipe input and capture consoles,
with no terminal and no network (the clai / llm `_run_chat` pattern).

Keys: Enter sends; Ctrl-C or a lone Esc while a turn runs cancels that turn
(the agent keeps the partial answer, marked, and answers every tool call) and
returns to the prompt; Ctrl-C at the prompt clears the line; Ctrl-D on an
empty line, `exit`, `quit` or `/exit` leave with status 0; Ctrl-Z (or
SIGTSTP) suspends to the shell, at the prompt or mid-turn, and `fg` goes on
where it was (`navagent.cli.suspend`). Pasting several
lines inserts them as one message (bracketed paste). An error inside a turn is
printed in one red line and the loop goes on.

While a turn runs the user can keep typing (`TypeAhead`, with the prompt's
editing keys and line history): each line is queued, shown as queued, and
handed to the model before its next call in the same turn. Lines the turn did
not use come back: after a cancel they fill the next prompt (and are not
announced as queued for the model any more); after an answer they are sent as
the next message, shown as `nav> ...` as if typed at the prompt. A SIGINT
(Ctrl-C where the terminal is not in raw mode) also cancels the turn.

Slash commands that need more than the pure `handle_slash_command` are done
here: `/retry` takes the last exchange back before sending it again, `/model`
asks the gateway for its routing hints (`routing_hints`) and refuses one it
does not have, `/sessions`, `/resume` and `/export` read and switch the saved
sessions through the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from rich.console import Console
from rich.text import Text

from navagent.cli.new_file import NewFileError, write_new_file
from navagent.cli.prompt import SlashCompleter, erased_when_sent
from navagent.cli.recording import recording_report
from navagent.cli.render import TerminalRenderer, format_messages, plural
from navagent.cli.sessions_view import sessions_table, transcript_json, transcript_markdown
from navagent.cli.slash import SlashAction, SlashState, handle_slash_command
from navagent.cli.suspend import stop_on_sigtstp, suspend_process_group
from navagent.cli.type_ahead import ESCAPE_TIMEOUT_S, TypeAhead
from navagent.core.agent import Steering
from navagent.core.chat_client import RoutingHintsUnavailableError
from navagent.core.errors import ChatFailedError, NavAgentError
from navagent.core.history import InvalidHistoryError
from navagent.core.messages import Message, ToolCall
from navagent.core.sessions import SessionError, SessionInfo, SessionSummary
from navagent.core.visible import shell_line, visible

__all__ = [
    "EXIT_WORDS",
    "PROMPT",
    "HintLister",
    "PromptConfirm",
    "ReplConversation",
    "run_repl",
]

PROMPT = "nav> "
EXIT_WORDS = frozenset({"exit", "quit"})
REPLAY_MESSAGES = 8
"""How many messages of a resumed session are shown again at start."""
SESSIONS_SHOWN = 20
"""`/sessions` lists this many of the most recent sessions."""

HintLister = Callable[[], Awaitable[Sequence[str]]]
"""Asks the gateway for its routing hints (`GrpcChatClient.routing_hints`)."""


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

    def clear(self) -> Awaitable[object]:
        """Start a new conversation (a recorded one is written first: its result)."""
        ...

    def record_as(self, name: str) -> Path:
        """Write this conversation as the scenario `name` when it ends; the file it will be."""
        ...

    def compact(self) -> Awaitable[bool]:
        """Summarize older turns now; False when there was nothing to compact."""
        ...

    def undo_last_turn(self) -> str:
        """Take the last exchange back; returns its message (raises `NavAgentError`)."""
        ...

    @property
    def cluster(self) -> str:
        """The cluster the tools operate in this run."""
        ...

    def list_sessions(self, *, limit: int | None = None) -> list[SessionSummary]:
        """The saved sessions, most recent first; raises `SessionError`."""
        ...

    def resume(self, name_or_id: str) -> Awaitable[tuple[SessionInfo, object]]:
        """Continue a saved session, and what became of a recording of this one.

        Raises `SessionError` or `InvalidHistoryError`.
        """
        ...

    def transcript_source(self) -> tuple[SessionInfo, tuple[Message, ...]]:
        """The conversation's metadata and full log, for `/export`."""
        ...

    routing_hint: str
    """The gateway route of the next turns (`/model`)."""


class PromptConfirm:
    """Asks y/N before a tool that changes the cluster runs (llm's `_approve_tool_call`).

    The `confirm` callback of `NavToolRunner`. The answer defaults to No;
    Ctrl-D or a lone Esc means No (the model is told the user declined);
    Ctrl-C means No and cancels the whole turn (`interrupt_turn`, set by the REPL).
    """

    def __init__(
        self, session: PromptSession[str], *, err: Console, renderer: TerminalRenderer
    ) -> None:
        """Ask through `session` (its own, so answers stay out of the line history)."""
        self._session = session
        # A lone Esc answers within the escape timeout, not prompt_toolkit's 1.5 s.
        session.app.ttimeoutlen = ESCAPE_TIMEOUT_S
        session.app.timeoutlen = ESCAPE_TIMEOUT_S
        self._err = err
        self._renderer = renderer
        self.interrupt_turn: Callable[[], object] = lambda: None
        """Cancels the running turn; the REPL sets it."""
        self.pause_typing: Callable[[], contextlib.AbstractContextManager[None]] = (
            contextlib.nullcontext
        )
        """Stops the REPL's type-ahead while the question has the keyboard."""

    async def __call__(self, call: ToolCall, argv: tuple[str, ...]) -> bool:
        """Show the exact command and return True only for an explicit yes.

        The command is the argv as it will run, each argument shell-quoted and
        every control character visible (`shell_line`): the model cannot hide
        or overdraw any part of what the person approves.
        """
        self._renderer.pause()
        self._err.print(
            Text.assemble(
                (f"{visible(call.name)} wants to run: ", "bold yellow"),
                (shell_line(argv), "bold"),
            )
        )
        try:
            with self.pause_typing():
                answer = await self._session.prompt_async(
                    "Run it? [y/N] ",
                    handle_sigint=False,
                    key_bindings=_ESC_SAYS_NO,
                )
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
    routing_hints: HintLister | None = None,
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
        routing_hints: Lists the gateway's routing hints for `/model`; None
            when there is no gateway to ask (a hint is then taken unchecked).
    """
    repl = _Repl(
        conversation,
        session=session,
        console=console,
        renderer=renderer,
        routing_hints=routing_hints,
    )
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
        routing_hints: HintLister | None,
    ) -> None:
        self._conversation = conversation
        self._session = session
        self._console = console
        self._renderer = renderer
        self._routing_hints = routing_hints
        self._known_hints: tuple[str, ...] = ()
        """The gateway's hints as last listed (Tab completes `/model` with them)."""
        self._turn: asyncio.Task[object] | None = None
        self._prefill = ""
        self.sessions_kept = True
        self.type_ahead = TypeAhead(
            session.input,
            screen=session.output,
            history=session.history,
            on_cancel=self.interrupt,
            on_queued=renderer.queued,
            on_typing=renderer.typing,
        )
        if isinstance(session.completer, SlashCompleter):
            session.completer.set_argument_source("/resume", self._session_labels)
            session.completer.set_argument_source("/model", lambda: self._known_hints)
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
                if erased_when_sent(self._session):
                    self._echo(line)  # taller than the window: shown whole, start included
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

    def _replay(self) -> bool:
        """Show the end of a resumed conversation; False when there is nothing to show."""
        resumed = self._conversation.resumed
        if not resumed:
            return False
        shown = resumed[-REPLAY_MESSAGES:]
        skipped = f", the last {len(shown)} shown" if len(shown) < len(resumed) else ""
        self._console.print(
            Text(
                f"Resuming session {visible(self._conversation.label)}"
                f" ({plural(len(resumed), 'message')}{skipped}):",
                style="bold",
            )
        )
        self._console.print(format_messages(shown, markdown=self._renderer.markdown))
        self._console.print(Text("─" * 40, style="dim"))
        return True

    async def _slash(self, text: str, state: SlashState) -> tuple[int | None, SlashState]:
        try:
            state = replace(state, log=self._conversation.full_log())
        except Exception as exc:  # e.g. an unreadable session log: /history shows less
            self._renderer.error(f"cannot read the conversation log: {exc}")
        result, new_state = handle_slash_command(text, state)
        if new_state.conversation != state.conversation:
            self._report_recording(await self._conversation.clear())
        if result.output is not None:
            self._console.print(result.output)
        match result.action:
            case SlashAction(kind="retry"):
                await self._retry()
            case SlashAction(kind="compact"):
                await self._compact()
            case SlashAction(kind="model", argument=hint):
                new_state = await self._model(hint, new_state)
            case SlashAction(kind="sessions"):
                self._sessions()
            case SlashAction(kind="resume", argument=name):
                await self._resume(name)
            case SlashAction(kind="export", argument=path):
                self._export(path)
            case SlashAction(kind="record", argument=name):
                self._record(name)
            case None:
                pass
        return result.exit_code, new_state

    async def _retry(self) -> None:
        try:
            text = self._conversation.undo_last_turn()
        except NavAgentError as exc:  # nothing to take back, or a turn is running
            self._renderer.note(f"cannot retry: {exc}", style="yellow")
            return
        self._renderer.note("retrying: the new answer replaces the last exchange")
        self._echo(text)
        await self._run_turn(text)

    async def _model(self, hint: str, state: SlashState) -> SlashState:
        current = self._conversation.routing_hint
        hints, problem = await self._list_hints()
        listed = f"the gateway has: {', '.join(hints) or 'none'}" if hints is not None else problem
        if not hint:
            self._renderer.note(
                f"Routing hint: {current} · {listed} · /model HINT switches", whole_words=True
            )
            return state
        if hints is not None and hint not in hints:
            self._renderer.note(
                f"The gateway has no routing hint {hint!r} ({listed}); the next turns still"
                f" use {current!r}.",
                style="yellow",
                whole_words=True,
            )
            return state
        self._conversation.routing_hint = hint
        unchecked = f" (not checked: {problem})" if hints is None else ""
        self._renderer.note(
            f"The next turns use the routing hint {hint!r}.{unchecked}", whole_words=True
        )
        return replace(state, routing_hint=hint)

    async def _list_hints(self) -> tuple[tuple[str, ...] | None, str]:
        """The gateway's hints, or None and why not."""
        if self._routing_hints is None:
            return None, "no gateway to ask"
        try:
            hints = tuple(await self._routing_hints())
        except RoutingHintsUnavailableError as exc:
            return None, str(exc)
        self._known_hints = hints
        return hints, ""

    def _sessions(self) -> None:
        try:
            summaries = self._conversation.list_sessions(limit=SESSIONS_SHOWN)
        except SessionError as exc:
            self._renderer.error(str(exc))
            return
        if not summaries:
            self._renderer.note("No saved sessions yet.")
            return
        self._console.print(sessions_table(summaries, width=self._console.width), crop=False)
        here = self._conversation.label
        current = f"this conversation is session {here}; " if here != "new" else ""
        demo = " (* a --demo session)" if any(summary.demo for summary in summaries) else ""
        self._renderer.note(f"{current}/resume NAME continues one (Tab completes){demo}")

    def _session_labels(self) -> list[str]:
        try:
            return [summary.label for summary in self._conversation.list_sessions()]
        except SessionError:
            return []

    async def _resume(self, name: str) -> None:
        try:
            info, written = await self._conversation.resume(name)
        except (SessionError, InvalidHistoryError) as exc:
            self._renderer.error(f"cannot resume {name}: {exc}")
            return
        self._report_recording(written)
        cluster = self._conversation.cluster
        if info.cluster and info.cluster != cluster:
            self._renderer.note(
                f"session {info.label} was recorded on cluster {info.cluster};"
                f" it continues on {cluster}",
                style="yellow",
            )
        if not self._replay():
            self._renderer.note(f"Resumed session {info.label} (nothing said in it yet).")

    def _export(self, argument: str) -> None:
        info, log = self._conversation.transcript_source()
        if not log:
            self._renderer.note("Nothing to export yet: the conversation is empty.")
            return
        path = Path(argument) if argument else Path(f"nav-agent-{info.label}.md")
        with contextlib.suppress(ValueError):  # a NUL in `~user`: write_new_file says so
            path = path.expanduser()
        as_json = path.suffix.lower() == ".json"
        text = transcript_json(info, log) if as_json else transcript_markdown(info, log)
        try:
            write_new_file(path, text if text.endswith("\n") else text + "\n")
        except NewFileError as exc:
            self._renderer.error(str(exc))
            return
        what = "JSON" if as_json else "a markdown transcript"
        self._renderer.note(f"wrote {path}: {what} of {plural(len(log), 'message')}")

    def _echo(self, text: str) -> None:
        """Show a message sent without the prompt (queued mid-turn, /retry) as if typed there."""
        indent = "\n" + " " * len(PROMPT)
        self._console.print(Text(PROMPT + visible(text).replace("\n", indent)))

    def _record(self, name: str) -> None:
        try:
            path = self._conversation.record_as(name)
        except NavAgentError as exc:
            self._renderer.error(str(exc))
            return
        self._renderer.note(
            f"recording: this conversation, from its first message, will be written as {path}"
            " when it ends (/clear or leaving)"
        )

    def _report_recording(self, written: object) -> None:
        for line, style in recording_report(written):
            self._console.print(Text(visible(line), style=style))

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
            if text:
                self._echo(text)

    async def _one_turn(self, text: str) -> bool:
        """Run one turn; True when it was cancelled."""
        self._renderer.begin_turn()
        send = self._conversation.send(text, steering=self._steer)
        task: asyncio.Task[object] = asyncio.create_task(_await(send))
        self._turn = task
        try:
            with self.type_ahead.active(), stop_on_sigtstp(self._release, self._retake):
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

    def _steer(self) -> list[str]:
        """The lines typed mid-turn, handed to the model before its next call."""
        taken = self.type_ahead.take()
        self._renderer.taken(taken)
        return taken

    def _release(self) -> None:
        """Before a stop (Ctrl-Z, SIGTSTP): the terminal goes back to the shell as found."""
        self._renderer.release()
        self.type_ahead.release()

    def _retake(self) -> None:
        """After `fg`: read keys and draw the turn again."""
        self.type_ahead.retake()
        self._renderer.retake()

    def interrupt(self) -> bool:
        """Cancel the running turn; False when there is none."""
        turn = self._turn
        if turn is None or turn.done():
            return False
        self._renderer.unqueue()  # what the model did not get goes back to the prompt
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


def _esc_says_no() -> KeyBindings:
    """At `Run it? [y/N]`, a lone Esc answers No; Esc with another key (a Meta key) does nothing.

    Ctrl-Z suspends as it does mid-turn (the turn's SIGTSTP handler stops the
    process and asks again after `fg`); not prompt_toolkit's own suspend,
    whose redraw would ask the terminal for the cursor while the process stops.
    """
    bindings = KeyBindings()

    @bindings.add("c-z")
    def _suspend(_event: KeyPressEvent) -> None:
        suspend_process_group()

    @bindings.add("escape", Keys.Any)
    def _meta(_event: KeyPressEvent) -> None:
        pass

    @bindings.add("escape")
    def _no(event: KeyPressEvent) -> None:
        event.app.exit(result="")

    return bindings


_ESC_SAYS_NO = _esc_says_no()
