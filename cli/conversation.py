"""One REPL conversation: an `Agent` plus its session in the `SessionStore`.

The REPL and the line modes talk to this, not to the agent directly, so that
`/clear` can swap in a fresh agent and session, `/resume` a saved one, `/retry`
take the last exchange back, and `/history` and `/export` can read the full log
(compacted turns included) from the store.

A new session is created lazily, on the first message, so starting `nav agent`
and leaving at once leaves no empty session behind - a named one
(`--session NAME`) too: its name is checked at start (a bad name fails
before any work) and the session is created, with that name, on the first
message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from navagent.core.agent import Agent, ConversationRecorder, Steering
from navagent.core.agent_events import TurnFinished
from navagent.core.events import Usage
from navagent.core.messages import Message
from navagent.core.sessions import (
    SessionError,
    SessionInfo,
    SessionRecorder,
    SessionStore,
    SessionSummary,
)
from navagent.fixtures.harness import (
    ExportError,
    ExportResult,
    RecordFilters,
    SessionCapture,
    check_export_target,
    export_capture,
)

__all__ = ["AgentFactory", "AgentSession", "RecordTarget"]

AgentFactory = Callable[[Sequence[Message], ConversationRecorder | None], Agent]
"""Builds an agent from a history to resume and the recorder to persist with."""


class _LazyRecorder:
    """A `ConversationRecorder` that creates its session on the first write."""

    def __init__(
        self, store: SessionStore, *, cluster: str, demo: bool, name: str | None = None
    ) -> None:
        self._store = store
        self._cluster = cluster
        self._demo = demo
        self.name = name
        self._recorder: SessionRecorder | None = None
        self.session: SessionInfo | None = None

    def _target(self) -> SessionRecorder:
        if self._recorder is None:
            if self.name is None:
                self.session = self._store.create(cluster=self._cluster, demo=self._demo)
            else:  # agents started together on one new name all join the session it becomes
                self.session = self._store.open_or_create(
                    self.name, cluster=self._cluster, demo=self._demo
                )
            self._recorder = self._store.recorder(self.session.id)
        return self._recorder

    @property
    def session_id(self) -> str:
        """The session's id once the first message created it."""
        return self.session.id if self.session is not None else ""

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        self._target().record_message(message, usage)

    def record_usage(self, usage: Usage) -> None:
        self._target().record_usage(usage)

    def record_compaction(self, summary: str, kept: tuple[Message, ...]) -> None:
        self._target().record_compaction(summary, kept)

    def record_rewind(self, messages: int) -> None:
        self._target().record_rewind(messages)


@dataclass(frozen=True)
class RecordTarget:
    """Where a recorded conversation is written, and what must not be."""

    scenario_dir: Path
    cassette_dir: Path
    filters: RecordFilters = field(default_factory=RecordFilters)
    """The project's recording filters, and the cluster's endpoint hidden."""
    secrets: tuple[str, ...] = ()
    """The cluster's certificate material: a file holding any of it is refused."""

    async def write(self, capture: Path, name: str) -> ExportResult | ExportError:
        """Write the capture in folder `capture` as scenario `name` here; why not, if not."""
        try:
            return await export_capture(
                capture,
                name=name,
                scenario_dir=self.scenario_dir,
                cassette_dir=self.cassette_dir,
                filters=self.filters,
                secrets=self.secrets,
            )
        except ExportError as exc:
            return exc


class AgentSession:
    """The agent and session the user is talking to right now.

    Not the simulated model's `navagent.fixtures.provider.Conversation` (a
    request as that model reads it); issue 22 gave the two distinct names.
    """

    def __init__(
        self,
        make_agent: AgentFactory,
        *,
        store: SessionStore | None,
        cluster: str,
        session: SessionInfo | None = None,
        name: str | None = None,
        demo: bool = False,
        capture: SessionCapture | None = None,
        record_target: RecordTarget | None = None,
    ) -> None:
        """Resume `session`, or start a new conversation when it is None.

        Args:
            make_agent: Builds the agent (client, runner, prompt, sink are its business).
            store: Where sessions persist; None keeps nothing (the store could
                not be opened).
            cluster: Recorded with new sessions.
            session: An existing session to resume (`--session`, `--continue`).
            name: The name a new session gets on its first message (`--session
                NAME` that does not exist yet; checked by the caller).
            demo: New sessions are `--demo` sessions.
            capture: Keeps what the conversation did on the wire and in the
                tools, so it can become a scenario (the gateway runs in this
                process); call `start` before the first turn and `close` at the end.
            record_target: Where `record_as` writes the conversation.

        Raises:
            SessionError: the session's log cannot be read.
        """
        self._make_agent = make_agent
        self._store = store
        self._cluster = cluster
        self._demo = demo
        self._lazy: _LazyRecorder | None = None
        self._name = name
        self._session = session
        self._routing_hint: str | None = None
        self.capture = capture
        self.recording: str | None = None
        """The scenario this conversation is written as when it ends (`--record`, `/record`)."""
        self._target = record_target or RecordTarget(Path("scenarios"), Path("cassettes"))
        self._compact_next = False
        self._resume_next = False
        self._retry_next = False
        self.resumed: tuple[Message, ...] = ()
        """The history the conversation started from (empty when new)."""
        if session is not None and store is not None:
            self.resumed = store.load_history(session.id)
            self.agent = make_agent(self.resumed, store.recorder(session.id))
        else:
            self.agent = self._fresh_agent()

    def _fresh_agent(self) -> Agent:
        if self._store is None:
            return self._make_agent((), None)
        self._forget_used_name()
        self._lazy = _LazyRecorder(
            self._store, cluster=self._cluster, demo=self._demo, name=self._name
        )
        return self._make_agent((), self._lazy)

    def _forget_used_name(self) -> None:
        """The pending name went to a session: the next new one has none."""
        if self._lazy is not None and self._lazy.session is not None:
            self._name = None

    @property
    def session(self) -> SessionInfo | None:
        """The session being written to; None until a new one has its first message."""
        if self._lazy is not None and self._lazy.session is not None:
            return self._lazy.session
        return self._session

    @property
    def pending_name(self) -> str | None:
        """The name the new session gets on its first message (`--session NAME`), if any."""
        self._forget_used_name()
        return self._name

    @property
    def cluster(self) -> str:
        """The cluster the tools operate in this run."""
        return self._cluster

    @property
    def label(self) -> str:
        """How to name the session to the user (name, else short id, else "new")."""
        session = self.session
        return session.label if session is not None else "new"

    async def start(self) -> None:
        """Begin capturing (a resumed session continues its own capture when it can)."""
        if self.capture is None:
            return
        session = self.session
        self._resume_next = bool(self.resumed)
        await self.capture.begin(
            session_id=session.id if session is not None else "",
            messages=len(self.full_log()) if session is not None else 0,
        )

    async def send(self, text: str, *, steering: Steering | None = None) -> TurnFinished:
        """Run one turn (see `Agent.run_turn` for what it raises)."""
        capture = self.capture
        if capture is None:
            return await self.agent.run_turn(text, steering=steering)
        capture.start_turn(
            text, compact=self._compact_next, resume=self._resume_next, retry=self._retry_next
        )
        self._compact_next = self._resume_next = self._retry_next = False
        try:  # a cancel is kept as where it happened (the capture's `cancel_after_chars`)
            return await self.agent.run_turn(text, steering=capture.steering(steering))
        finally:
            session = self.session
            await capture.end_turn(
                session_id=session.id if session is not None else "",
                messages=len(self.full_log()),
            )

    def full_log(self) -> tuple[Message, ...]:
        """Every message of this conversation, compacted ones included."""
        session = self.session
        if self._store is None or session is None:
            return self.agent.history
        return self._store.full_log(session.id)

    async def clear(self) -> ExportResult | ExportError | None:
        """Start a new conversation; the current session stays saved.

        A conversation being recorded is written first (see `close`).
        """
        written = await self.close()
        self._session = None
        self.resumed = ()
        self.agent = self._fresh_agent()
        if self._routing_hint is not None:
            self.agent.routing_hint = self._routing_hint
        await self.start()
        return written

    def undo_last_turn(self) -> str:
        """Take the last exchange back, in memory and saved (see `Agent.undo_last_turn`)."""
        text = self.agent.undo_last_turn()
        self._retry_next = True  # the turn the REPL sends next is the retry (`retry: true`)
        return text

    def list_sessions(self, *, limit: int | None = None) -> list[SessionSummary]:
        """The saved sessions, most recently active first.

        Raises:
            SessionError: sessions are not saved in this run.
        """
        return self._saved().list_sessions(limit=limit)

    async def resume(
        self, name_or_id: str
    ) -> tuple[SessionInfo, ExportResult | ExportError | None]:
        """Continue a saved session from here on; the current one stays saved.

        A conversation being recorded is written first, as by `clear`.

        Returns:
            The session, and what the recording of the previous conversation became.

        Raises:
            SessionError: sessions are not saved in this run, no session
                matches, it is a `--demo` session and this run is not, or
                its log cannot be read.
            InvalidHistoryError: its history breaks the tool-call invariant.
        """
        store = self._saved()
        info = store.open(name_or_id)
        if info.demo and not self._demo:
            raise SessionError(
                f"session {info.label} was recorded by `nav agent --demo` (simulated model and"
                f" cluster); resume it with `nav agent --demo --session {info.label}`"
            )
        history = store.load_history(info.id)
        agent = self._make_agent(history, store.recorder(info.id))
        written = await self.close()
        self._forget_used_name()
        self._session, self._lazy, self.resumed, self.agent = info, None, history, agent
        if self._routing_hint is not None:
            self.agent.routing_hint = self._routing_hint
        await self.start()
        return info, written

    def transcript_source(self) -> tuple[SessionInfo, tuple[Message, ...]]:
        """The session's metadata and full log, for an export (unsaved: made-up metadata)."""
        session = self.session
        if session is not None:
            return session, self.full_log()
        now = datetime.now(UTC)
        unsaved = SessionInfo(
            id="unsaved", cluster=self._cluster, demo=self._demo, created_at=now, updated_at=now
        )
        return unsaved, self.full_log()

    def _saved(self) -> SessionStore:
        if self._store is None:
            raise SessionError("sessions are not saved in this run (the database could not open)")
        return self._store

    async def compact(self) -> bool:
        """Summarize older turns now (see `Agent.compact`)."""
        compacted = await self.agent.compact()
        self._compact_next = self._compact_next or compacted
        return compacted

    def record_as(self, name: str) -> Path:
        """Write this conversation as the scenario `name` when it ends.

        Returns:
            The scenario file it will be.

        Raises:
            ExportError: nothing is captured (the gateway is not in this
                process), or the name is unusable or taken.
        """
        if self.capture is None:
            raise ExportError(
                "recording needs the gateway in this process, to keep the provider's bytes:"
                " start nav agent with --routes FILE (or --demo), then /record NAME"
            )
        path = check_export_target(name, self._target.scenario_dir)
        self.recording = name
        return path

    async def close(self) -> ExportResult | ExportError | None:
        """End the capture; write the recording if one was asked for.

        Returns:
            What was written, why it was refused, or None (nothing asked).
        """
        capture, name = self.capture, self.recording
        if capture is None:
            return None
        folder = capture.folder
        await capture.end()
        self.recording = None
        if name is None or folder is None:
            return None
        return await self._target.write(folder, name)

    @property
    def routing_hint(self) -> str:
        """The gateway route the next turns ask for."""
        return self.agent.routing_hint

    @routing_hint.setter
    def routing_hint(self, hint: str) -> None:
        self._routing_hint = hint
        self.agent.routing_hint = hint
