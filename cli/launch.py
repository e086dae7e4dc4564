"""Starting `nav agent`: options in, a running REPL or line session out.

`run_agent(options)` does, in order: check the options that need no I/O,
start the demo stack (`--demo`), open the session store, pick the session and
the cluster, find the tool binary, connect to the gateway (failing fast with
one sentence when it cannot be reached), build the agent, and hand over to
the interactive REPL (stdin and stdout are terminals) or to the line modes
(`-p`, piped stdin, `--json`). Every resource is closed on the way out, in
reverse order, whatever happens.

A problem found before the conversation starts is a `StartupError`: one
sentence on stderr and a non-zero status (2 for bad options, 1 for an
unreachable gateway), never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from rich.console import Console
from rich.text import Text

from navagent.cli.batch import read_lines, run_lines, single_line
from navagent.cli.cluster import NoClusterError, explicit_cluster, resolve_cluster
from navagent.cli.consoles import Hanging, make_console
from navagent.cli.conversation import AgentSession, RecordTarget
from navagent.cli.demo import DEMO_CLUSTER, DemoStack, demo_banner
from navagent.cli.embedded import (
    EmbeddedGateway,
    EmbeddedGatewayError,
    captured_routes,
    read_routes,
)
from navagent.cli.prompt import make_prompt_session, terminal_as_declared
from navagent.cli.recording import record_target, recording_report, scenario_folder
from navagent.cli.render import JsonLinesSink, TerminalRenderer, plural
from navagent.cli.repl import PromptConfirm, run_repl
from navagent.cli.slash import SlashState
from navagent.core._process import run_process
from navagent.core.agent import DEFAULT_MAX_ITERATIONS, Agent, ConversationRecorder
from navagent.core.agent_config import AgentConfig
from navagent.core.agent_events import EventSink
from navagent.core.chat_client import (
    GatewayConfigError,
    GatewayUnreachableError,
    GrpcChatClient,
    TlsConfig,
)
from navagent.core.compaction import CompactionPolicy
from navagent.core.errors import NavAgentError
from navagent.core.history import InvalidHistoryError
from navagent.core.messages import Message
from navagent.core.nav_cli import (
    NAV_AGENT_CLI_ENV,
    Confirm,
    NavCliNotFoundError,
    NavToolRunner,
    resolve_nav_cli,
)
from navagent.core.private_files import private_dir, private_file
from navagent.core.sessions import (
    InvalidSessionNameError,
    SessionError,
    SessionInfo,
    SessionNotFoundError,
    SessionStore,
    check_session_name,
    default_db_path,
)
from navagent.core.tools import TOOLS, TOOLS_BY_NAME
from navagent.core.visible import visible
from navagent.core.wire_formats import FORMAT_IDS, WireFormatId
from navagent.fixtures.harness import (
    RECORDINGS_FOLDER,
    CapturedRoute,
    CassetteTransport,
    ExportError,
    FilterError,
    SessionCapture,
    check_export_target,
    project_settings,
)
from navagent.gateway._network import upstream_transport
from navagent.gateway.routes import RoutesError, RouteTable

__all__ = ["DEFAULT_GATEWAY", "GATEWAY_ENV", "AgentOptions", "StartupError", "run_agent"]

DEFAULT_GATEWAY = "127.0.0.1:50051"
GATEWAY_ENV = "NAV_AGENT_GATEWAY"
PROMPT_HISTORY_FILE = "prompt_history"
DEMO_PACING_MS = 15.0
"""Slow enough to watch the answer stream in the interactive demo."""
DEMO_BATCH_PACING_MS = 0.0
"""Nobody watches `-p` or piped output arrive; answer as fast as possible."""
_CONFIRM_TOOLS = frozenset(name for name, spec in TOOLS_BY_NAME.items() if spec.needs_confirmation)


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    """Everything `nav agent` can be told (see `nav agent --help`)."""

    cluster: str | None = None
    gateway: str | None = None
    """A remote gateway (`--gateway`); None: `$NAV_AGENT_GATEWAY`, else `DEFAULT_GATEWAY`."""
    routes: Path | None = None
    """Run the gateway in this process with this routes file (`--routes`)."""
    record: str | None = None
    """Write the conversation as this scenario when it ends (`--record`)."""
    scenario_dir: Path | None = None
    """Where `--record` and `/record` write scenarios (default: the project's)."""
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    auth_token_env: str | None = None
    routing_hint: str = "agent"
    system_prompt: Path | None = None
    assume_yes: bool = False
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    session: str | None = None
    continue_last: bool = False
    prompt: str | None = None
    json_output: bool = False
    markdown: bool = True
    """Render answers as markdown on a terminal (`--no-markdown` turns it off)."""
    demo: bool = False
    demo_provider: WireFormatId = FORMAT_IDS[0]
    """The wire format the simulated model speaks (`--demo-provider`)."""
    connect_timeout_s: float = 5.0


class StartupError(NavAgentError):
    """`nav agent` cannot start; the message is one sentence for the user."""

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def run_agent(options: AgentOptions) -> int:
    """Run `nav agent` to completion and return its exit status.

    0 when the user leaves normally (or every `-p`/piped turn answered), 1
    when a `-p`/piped turn failed or the gateway cannot be reached, 2 for
    unusable options, 130 when interrupted outside a turn.
    """
    err = make_console(stderr=True)
    interactive = (
        options.prompt is None
        and not options.json_output
        and sys.stdin.isatty()
        and sys.stdout.isatty()
    )
    try:
        with terminal_as_declared():
            return asyncio.run(_Launch(options, err, interactive=interactive).run())
    except KeyboardInterrupt:
        return 130


class _Launch:
    def __init__(self, options: AgentOptions, err: Console, *, interactive: bool) -> None:
        self.options = options
        self.err = err
        self.interactive = interactive
        self.notes: list[tuple[str, str]] = []
        """(text, style) lines shown just before the conversation starts."""

    async def run(self) -> int:
        with _ending_signals_cancel_me() as received:
            try:
                async with AsyncExitStack() as stack:
                    return await self._run(stack)
            except StartupError as exc:
                self.err.print(Text(f"nav agent: {visible(str(exc))}", style="red"))
                return exc.exit_code
            except asyncio.CancelledError:
                if not received:
                    raise
                name = signal.Signals(received[0]).name
                with contextlib.suppress(OSError, ValueError):  # the terminal may be gone
                    self.err.print(Text(f"nav agent: ended by {name}", style="yellow"))
                return 128 + received[0]

    async def _run(self, stack: AsyncExitStack) -> int:
        o = self.options
        self._check_options()
        custom_prompt = _read_text(o.system_prompt, "--system-prompt") if o.system_prompt else None
        agent_config = self._agent_config()
        local = _LocalGateway(o, interactive=self.interactive)
        if o.record is not None:
            self._check_record(local.embedded)
        if local.demo is not None:
            try:
                await stack.enter_async_context(local.demo)
            except EmbeddedGatewayError as exc:
                raise StartupError(str(exc)) from None
        store = self._open_store(stack, local.demo)
        session, cluster = self._session_and_cluster(store, local.demo)
        demo = local.demo
        cli, tool_env = (demo.nav_sim, demo.tool_env) if demo else (self._tool_binary(), None)
        client = await self._connect(stack, await local.address(stack), local.token)
        new_name = self._new_session_name(store) if session is None else None
        output, confirm = self._output()
        prompt = custom_prompt or (
            agent_config.prompt_for(cluster) if agent_config.system_prompt is not None else None
        )
        capture = self._capture(stack, local, store, cluster, confirm, prompt, agent_config)
        sink = capture.sink(output) if capture is not None else output
        try:
            runner = NavToolRunner(
                cli,
                cluster=cluster,
                confirm=capture.confirm(confirm) if capture and confirm else confirm,
                assume_yes=o.assume_yes,
                env=tool_env,
                execute=capture.execute if capture is not None else run_process,
            )
        except ValueError as exc:
            raise StartupError(f"invalid cluster name {cluster!r}: {exc}") from None
        system_prompt = custom_prompt or agent_config.prompt_for(cluster)

        def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
            return Agent(
                client,
                runner,
                system_prompt=system_prompt,
                tools=agent_config.tools,
                sink=sink,
                routing_hint=o.routing_hint,
                max_iterations=o.max_iterations,
                history=history,
                recorder=recorder,
                compaction=CompactionPolicy(),
            )

        try:
            conversation = AgentSession(
                make_agent,
                store=store,
                cluster=cluster,
                session=session,
                name=new_name,
                demo=demo is not None,
                capture=capture,
                record_target=self._record_target(cluster) if local.embedded else None,
            )
        except (SessionError, InvalidHistoryError) as exc:
            raise StartupError(f"cannot resume the session: {exc}") from None
        await conversation.start()
        if o.record is not None:
            try:
                conversation.record_as(o.record)
            except ExportError as exc:
                raise StartupError(str(exc)) from None
        shown = "in process" if local.embedded else client.target  # not its socket's path
        self._introduce(conversation, cluster=cluster, target=shown, demo=demo)
        kept = store is not None and (demo is None or o.session is not None or o.continue_last)
        try:
            return await self._converse(conversation, output, confirm, client=client, kept=kept)
        finally:
            await self._finish(conversation, demo=demo, kept=kept)

    async def _finish(
        self, conversation: AgentSession, *, demo: DemoStack | None, kept: bool
    ) -> None:
        """Write the recording, if one was asked for, and say how to come back (or that not)."""
        lines = recording_report(await conversation.close())
        session = conversation.session
        if self.interactive and session is not None:  # None: nothing was said
            if kept:
                demo_flag = "--demo " if demo is not None else ""
                lines.append(
                    (f"resume with: nav agent {demo_flag}--session {session.label}", "dim")
                )
            elif demo is not None:
                lines.append(
                    (
                        "this --demo conversation was not saved (a plain --demo keeps nothing);"
                        " start one with `nav agent --demo --session NAME` to keep it",
                        "dim",
                    )
                )
        for line, style in lines:
            with contextlib.suppress(OSError, ValueError):  # the terminal may be gone
                self.err.print(Text(visible(line), style=style))

    async def _converse(
        self,
        conversation: AgentSession,
        sink: EventSink,
        confirm: Confirm | None,
        *,
        client: GrpcChatClient,
        kept: bool,
    ) -> int:
        o = self.options
        if self.interactive:
            assert isinstance(sink, TerminalRenderer)
            return await run_repl(
                conversation,
                session=make_prompt_session(
                    history=_prompt_history(), tool_names=[tool.name for tool in TOOLS]
                ),
                console=sink.out,
                renderer=sink,
                slash_state=SlashState(
                    tools=self._agent_config().tools,
                    confirm_tools=_CONFIRM_TOOLS,
                    assume_yes=o.assume_yes,
                    routing_hint=o.routing_hint,
                    markdown=o.markdown,
                ),
                confirm=confirm if isinstance(confirm, PromptConfirm) else None,
                sessions_kept=kept,
                routing_hints=client.routing_hints,
            )
        lines = single_line(o.prompt) if o.prompt is not None else read_lines(sys.stdin)
        return await run_lines(conversation.send, lines, report=self._report)

    # --- steps --------------------------------------------------------------

    def _open_store(self, stack: AsyncExitStack, demo: DemoStack | None) -> SessionStore | None:
        keep = self.options.session is not None or self.options.continue_last
        path = demo.sessions_db if demo is not None and not keep else None
        try:
            store = SessionStore(path)
        except SessionError as exc:
            if keep:
                raise StartupError(str(exc)) from None
            self.notes.append((f"{exc}; this conversation will not be saved", "yellow"))
            return None
        stack.callback(store.close)
        return store

    def _session_and_cluster(
        self, store: SessionStore | None, demo: DemoStack | None
    ) -> tuple[SessionInfo | None, str]:
        o = self.options
        explicit = explicit_cluster(o.cluster, {} if demo else os.environ)
        session: SessionInfo | None = None
        if store is not None and o.session is not None:
            try:
                session = store.open(o.session)
            except SessionNotFoundError:
                session = None
        elif store is not None and o.continue_last:
            try:
                session = store.open_last(cluster=explicit, demo=demo is not None)
            except SessionNotFoundError as exc:
                raise StartupError(str(exc)) from None
        if session is not None and session.demo and demo is None:
            raise StartupError(_demo_only(session))
        recorded = session.cluster if session is not None else None
        if demo is not None:
            cluster = explicit or DEMO_CLUSTER
        else:
            try:
                cluster = resolve_cluster(o.cluster, session_cluster=recorded)
            except NoClusterError as exc:
                raise StartupError(str(exc)) from None
        if session is not None and recorded and recorded != cluster:
            self.notes.append(
                (
                    f"session {session.label} was recorded on cluster {recorded};"
                    f" it continues on {cluster}",
                    "yellow",
                )
            )
        return session, cluster

    def _new_session_name(self, store: SessionStore | None) -> str | None:
        """`--session NAME` that does not exist yet, checked now; created on the first message.

        Leaving before any message keeps nothing (an empty session would be
        listed, offered to Tab and named in the resume hint).
        """
        if store is None or self.options.session is None:
            return None
        try:
            check_session_name(self.options.session)
        except InvalidSessionNameError as exc:
            raise StartupError(str(exc)) from None
        return self.options.session

    def _tool_binary(self) -> Path:
        try:
            cli = resolve_nav_cli()
        except NavCliNotFoundError as exc:
            raise StartupError(str(exc)) from None
        if _is_own_nav(cli) and not os.environ.get(NAV_AGENT_CLI_ENV, "").strip():
            raise StartupError(
                f"the tools would run {cli}, which is nav-agent's own `nav` and has no"
                f" `sandbox` commands; set {NAV_AGENT_CLI_ENV} to the Navigator CLI, or try"
                " `nav agent --demo`"
            )
        return cli

    async def _connect(
        self, stack: AsyncExitStack, local: str | None, token: str | None
    ) -> GrpcChatClient:
        """A client to the gateway: `local` (in this process), else the remote one."""
        o = self.options
        tls = None
        if local is None and (o.tls_ca or o.tls_cert or o.tls_key):
            tls = TlsConfig(ca_file=o.tls_ca, cert_file=o.tls_cert, key_file=o.tls_key)
        target = local or o.gateway or os.environ.get(GATEWAY_ENV, "").strip() or DEFAULT_GATEWAY
        try:
            client = GrpcChatClient(target, tls=tls, bearer_token=token)
        except GatewayConfigError as exc:
            raise StartupError(str(exc)) from None
        stack.push_async_callback(client.aclose)
        try:
            await client.wait_ready(o.connect_timeout_s)
        except GatewayUnreachableError as exc:
            raise StartupError(
                f"{exc}; start one with `nav gateway serve`, point --gateway at yours,"
                " or try `nav agent --demo`",
                exit_code=1,
            ) from None
        return client

    def _check_options(self) -> None:
        o = self.options
        if o.session is not None and o.continue_last:
            raise StartupError("--session and --continue cannot be used together")
        if o.prompt is not None and not o.prompt.strip():
            raise StartupError("-p/--prompt needs a message")
        if o.routes is not None and o.gateway is not None:
            raise StartupError(
                "--gateway talks to a gateway running elsewhere and --routes runs one in this"
                " process: use one of them"
            )
        if o.routes is not None and o.demo:
            raise StartupError(
                "--demo runs its own simulated gateway: --routes cannot be used with it"
            )

    def _check_record(self, embedded: bool) -> None:
        """Refuse `--record` before the session when it could not be written."""
        o = self.options
        assert o.record is not None
        if not embedded:
            raise StartupError(
                "--record needs the gateway in this process, to keep what the provider sent:"
                " add --routes FILE (or --demo)"
            )
        try:
            check_export_target(o.record, scenario_folder(o.scenario_dir))
        except ExportError as exc:
            raise StartupError(f"--record: {exc}") from None
        except FilterError as exc:
            raise StartupError(f"pyproject.toml: {exc}") from None

    def _agent_config(self) -> AgentConfig:
        """The project's `nav_system_prompt` and `nav_tool_descriptions` (./pyproject.toml).

        The agent a team ships is the one its scenarios test: the harness reads the same.
        """
        try:
            return project_settings(Path.cwd()).agent
        except FilterError as exc:
            raise StartupError(f"pyproject.toml: {exc}") from None

    def _record_target(self, cluster: str) -> RecordTarget:
        try:
            return record_target(self.options.scenario_dir, cluster, simulated=self.options.demo)
        except FilterError as exc:
            raise StartupError(f"pyproject.toml: {exc}") from None

    def _capture(
        self,
        stack: AsyncExitStack,
        local: _LocalGateway,
        store: SessionStore | None,
        cluster: str,
        confirm: Confirm | None,
        system_prompt: str | None,
        agent_config: AgentConfig,
    ) -> SessionCapture | None:
        """Keep the session as it happens when the gateway runs here (for `/record`)."""
        if local.transport is None or store is None:
            return None
        o = self.options
        policy = CompactionPolicy()
        confirmation: Literal["ask", "assume-yes", "unavailable"] = "unavailable"
        if o.assume_yes:
            confirmation = "assume-yes"
        elif confirm is not None:
            confirmation = "ask"
        capture = SessionCapture(
            store.path.parent / RECORDINGS_FOLDER,
            kind="simulated" if local.demo is not None else "real",
            cluster=cluster,
            routes=local.captured_routes(),
            transport=local.transport,
            secrets=local.keys(),
            max_iterations=o.max_iterations,
            compaction=(policy.threshold_tokens, policy.keep_recent_tokens),
            confirmation=confirmation,
            system_prompt=system_prompt,
            tool_descriptions=dict(agent_config.tool_descriptions) or None,
        )
        stack.push_async_callback(capture.aclose)
        return capture

    def _output(self) -> tuple[EventSink, Confirm | None]:
        o = self.options
        if o.json_output:
            return JsonLinesSink(sys.stdout), None
        out = make_console(file=sys.stdout)
        renderer = TerminalRenderer(out, self.err, markdown=None if o.markdown else False)
        if not self.interactive and not o.assume_yes:
            renderer.decline_hint = (
                "no terminal to ask: {tool} was declined; pass --yes to allow it"
            )
        if not self.interactive or o.assume_yes:
            return renderer, None
        return renderer, PromptConfirm(PromptSession(), err=self.err, renderer=renderer)

    def _introduce(
        self, conversation: AgentSession, *, cluster: str, target: str, demo: DemoStack | None
    ) -> None:
        o = self.options
        if demo is not None:
            banner = demo_banner(provider=o.demo_provider)
            for line in banner.splitlines() if self.interactive else banner.splitlines()[:1]:
                self.err.print(Hanging.list_item(Text(line, "cyan")))
        if self.interactive:
            session = conversation.session
            pending = conversation.pending_name
            label = "new" if session is None else session.label
            if pending is not None:
                label = f"{pending} (new)"
            elif session is not None and session.name:
                label += f" ({session.id[:8]})"
            self.err.print(
                Text(
                    visible(
                        f"nav agent · cluster {cluster} · gateway {target} · session"
                        f" {label} · /help for commands"
                    ),
                    style="dim",
                )
            )
        elif conversation.resumed:
            self.notes.append(
                (
                    f"resumed session {conversation.label}"
                    f" ({plural(len(conversation.resumed), 'message')})",
                    "dim",
                )
            )
        tools = " and ".join(sorted(_CONFIRM_TOOLS))
        if o.assume_yes:
            self.notes.append((f"--yes: {tools} run without asking", "yellow"))
        for text, style in self.notes:
            self.err.print(Text(visible(text), style=style))

    def _report(self, message: str) -> None:
        self.err.print(Text(f"error: {visible(message)}", style="bold red"))


@contextlib.contextmanager
def _ending_signals_cancel_me() -> Iterator[list[int]]:
    """Turn SIGTERM and SIGHUP into a cancel of the running task, like Ctrl-C in a turn.

    Cancelling unwinds everything in order: the turn's tools are killed with
    their process groups, the cancelled calls get results in the session, the
    gateway connection and the session store close. The list gets the signal.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    received: list[int] = []

    def cancel(signum: int) -> None:
        if not received and task is not None:
            received.append(signum)
            task.cancel()

    installed = []
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(signum, cancel, signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            continue
        installed.append(signum)
    try:
        yield received
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        if received and task is not None:
            task.uncancel()


def _read_text(path: Path, option: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StartupError(f"cannot read the {option} file {path}: {reason}") from None
    if not text.strip():
        raise StartupError(f"the {option} file {path} is empty")
    return text


class _LocalGateway:
    """The gateway when it runs in this process: the demo's, or `--routes` (else neither)."""

    def __init__(self, options: AgentOptions, *, interactive: bool) -> None:
        """Read the routes file and plan the demo; nothing starts yet.

        Raises:
            StartupError: the routes file is unusable, or the token variable unset.
        """
        self.embedded = options.demo or options.routes is not None
        self.routes: RouteTable | None = None
        if options.routes is not None:
            try:
                self.routes = read_routes(options.routes)
            except RoutesError as exc:
                raise StartupError(f"--routes: {exc}") from None
        variable = options.auth_token_env
        self.token = _read_token(variable) if variable and not self.embedded else None
        self.transport = (
            CassetteTransport(upstream_transport(httpx.Limits())) if self.embedded else None
        )
        """The embedded gateway's upstream transport, which a capture records."""
        self.demo: DemoStack | None = None
        if options.demo:
            self.demo = DemoStack(
                provider=options.demo_provider,
                routing_hint=options.routing_hint,
                pacing_ms=DEMO_PACING_MS if interactive else DEMO_BATCH_PACING_MS,
                transport=self.transport,
            )

    async def address(self, stack: AsyncExitStack) -> str | None:
        """Start the `--routes` gateway; the local gateway's address (None: remote)."""
        if self.demo is not None:
            return self.demo.address
        if self.routes is None:
            return None
        gateway = EmbeddedGateway(self.routes, transport=self.transport)
        try:
            await stack.enter_async_context(gateway)
        except EmbeddedGatewayError as exc:
            raise StartupError(str(exc)) from None
        return gateway.address

    def captured_routes(self) -> list[CapturedRoute]:
        """The routes, as a capture keeps them."""
        if self.demo is not None:
            return [self.demo.route]
        return captured_routes(self.routes) if self.routes is not None else []

    def keys(self) -> list[str]:
        """The routes' keys, which a capture masks wherever they appear."""
        routes = self.routes.routes if self.routes is not None else ()
        return [route.api_key.get_secret_value() for route in routes]


def _read_token(variable: str) -> str:
    token = os.environ.get(variable, "").strip()
    if not token:
        raise StartupError(f"--auth-token-env names {variable}, but that variable is not set")
    return token


def _is_own_nav(path: Path) -> bool:
    """True when `path` is this package's `nav` console script (no cluster commands)."""
    try:
        with path.open("rb") as binary:
            head = binary.read(4096)  # console scripts are tiny; a real nav is a big binary
    except OSError:
        return False
    return b"navagent.cli.app" in head


def _prompt_history() -> History:
    """The REPL's line history, kept next to the session database."""
    path = default_db_path().parent / PROMPT_HISTORY_FILE
    try:
        private_file(private_dir(path.parent) / PROMPT_HISTORY_FILE)
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


def _demo_only(session: SessionInfo) -> str:
    """Why a `--demo` session cannot continue outside `--demo`."""
    return (
        f"session {session.label} was recorded by `nav agent --demo` (simulated model"
        f" and cluster); resume it with `nav agent --demo --session {session.label}`"
    )
