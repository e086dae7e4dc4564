"""Find the `nav` binary and run the agent's tool calls through it.

    resolve_nav_cli   explicit path, else $NAV_AGENT_CLI, else this `nav`, else `nav` on PATH
    NavToolRunner     ToolCall -> validate -> confirm -> run `nav` -> ToolOutcome
    format_tool_result  ProcessResult -> the text the model sees

The result text follows the real agent (OpenShell `nav agent`): stdout; then,
if the trimmed stderr is non-empty, a newline and that stderr; then, on a
non-zero exit, a newline and `Command exited with code: N`; an empty result becomes
`Command completed successfully (no output).` Two deliberate differences:
ANSI escape sequences are stripped (the real `nav` writes colour codes even
into pipes; they cost tokens and confuse models), and each stream is capped
(`DEFAULT_OUTPUT_CAP_BYTES`), keeping its first and last halves around a
marker that counts the bytes cut: the head holds table headers, the tail the
latest log lines and the final phase or error.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from navagent.core._process import ProcessExecutor, ProcessResult, run_process
from navagent.core.errors import NavAgentError
from navagent.core.messages import ToolCall
from navagent.core.tools import InvalidToolCallError, ToolOutcome, cluster_args, prepare_call

__all__ = [
    "DEFAULT_CREATE_TIMEOUT_S",
    "DEFAULT_OUTPUT_CAP_BYTES",
    "DEFAULT_TIMEOUT_S",
    "NAV_AGENT_CLI_ENV",
    "Confirm",
    "NavCliNotFoundError",
    "NavToolRunner",
    "format_tool_result",
    "resolve_nav_cli",
    "strip_ansi",
]

NAV_AGENT_CLI_ENV = "NAV_AGENT_CLI"
DEFAULT_OUTPUT_CAP_BYTES = 32 * 1024
"""Per stream: about 8k tokens, enough for any normal table or policy."""
NO_OUTPUT = "Command completed successfully (no output)."
MAX_ARG_STRLEN = 32 * os.sysconf("SC_PAGE_SIZE")
"""Linux's limit on one argument, its closing NUL included (`MAX_ARG_STRLEN` in
linux/binfmts.h: 32 pages, 131,072 bytes with 4 KiB pages); exec fails with E2BIG past it."""
DEFAULT_TIMEOUT_S = 60.0
"""A tool call is killed after this long."""
DEFAULT_CREATE_TIMEOUT_S = 300.0
"""`sandbox_create` waits for the sandbox to be Ready (up to 120 s) and runs a command."""

Confirm = Callable[[ToolCall, tuple[str, ...]], Awaitable[bool]]
"""Asks the user whether to run a call; gets the call and the exact argv."""


class NavCliNotFoundError(NavAgentError):
    """No usable `nav` binary; the message says what was tried and how to fix it."""


def _executable(path: Path, origin: str) -> Path:
    if not path.exists():
        raise NavCliNotFoundError(f"{origin}: {path} does not exist")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise NavCliNotFoundError(f"{origin}: {path} is not an executable file")
    return path.absolute()


def _lookup(value: str, origin: str, search_path: str | None) -> Path:
    if os.sep in value or (os.altsep and os.altsep in value):
        return _executable(Path(value).expanduser(), origin)
    found = shutil.which(value, path=search_path)
    if found is None:
        raise NavCliNotFoundError(f"{origin}: no executable {value!r} on PATH")
    return Path(found).absolute()


def resolve_nav_cli(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    argv0: str | None = None,
) -> Path:
    """Find the `nav` binary the tools run.

    In order: `explicit` (a path, or a command name looked up on PATH); else
    `$NAV_AGENT_CLI` (same rules); else the running program itself when it is
    the `nav` console script (`argv0`, default `sys.argv[0]`); else `nav` on
    PATH. An explicit choice that does not work is an error rather than a
    reason to fall back: running some other binary silently would be worse.

    Raises:
        NavCliNotFoundError: the chosen binary is missing or not executable,
            or nothing was found; the message says to set NAV_AGENT_CLI.
    """
    env = os.environ if environ is None else environ
    search_path = env.get("PATH")
    if explicit is not None:
        return _lookup(os.fspath(explicit), "nav CLI", search_path)
    configured = env.get(NAV_AGENT_CLI_ENV, "").strip()
    if configured:
        return _lookup(configured, NAV_AGENT_CLI_ENV, search_path)
    program = sys.argv[0] if argv0 is None else argv0
    if Path(program).name == "nav":
        with contextlib.suppress(NavCliNotFoundError):
            return _lookup(program, "running nav", search_path)
    found = shutil.which("nav", path=search_path)
    if found is not None:
        return Path(found).absolute()
    raise NavCliNotFoundError(
        "cannot find the nav CLI: no `nav` on PATH. Set NAV_AGENT_CLI to the path or name "
        "of the binary (for the simulated cluster: NAV_AGENT_CLI=nav-sim)."
    )


_ANSI_ESCAPE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]              # CSI: colours (SGR), cursor moves, erase
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)  # OSC: titles, hyperlinks
    | \x1b[ -/]*[0-~]                    # other two-character escapes
    | \x1b                               # a lone ESC left by a cut
    """,
    re.VERBOSE,
)


def strip_ansi(text: str) -> str:
    """Remove ECMA-48 escape sequences (colours, cursor control) from `text`.

    Written here rather than taken from rich: `Text.from_ansi` also rewrites
    carriage returns and builds styled text, and we only need the plain
    characters back.
    """
    return _ANSI_ESCAPE.sub("", text)


def _exit_note(result: ProcessResult, timeout_s: float) -> str:
    if result.timed_out:
        return f"\nCommand timed out after {timeout_s:g} s and was killed."
    code = result.returncode
    if code is None or code == 0:
        return ""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"\nCommand was terminated by {name}."
    return f"\nCommand exited with code: {code}"


def format_tool_result(result: ProcessResult, *, timeout_s: float) -> str:
    """Build the tool result text the model sees from a finished `nav` run."""
    text = strip_ansi(result.stdout.text())
    stderr = strip_ansi(result.stderr.text()).strip()
    if stderr:
        text += "\n" + stderr
    text += _exit_note(result, timeout_s)
    return text or NO_OUTPUT


def _start_failure(cli: str, argv: tuple[str, ...], error: OSError) -> str:
    """Why `argv` did not start, worded for the model (and the user reading along)."""
    if error.errno == errno.E2BIG:
        size = sum(len(arg.encode("utf-8", "surrogateescape")) + 1 for arg in argv)
        # the program's own path is left out: the model did not write it, and it
        # differs between installs (a replay's text would too)
        program = len(argv[0].encode("utf-8", "surrogateescape")) + 1 if argv else 0
        longest = max((len(arg.encode("utf-8", "surrogateescape")) for arg in argv[1:]), default=0)
        limits = (
            f"Linux refuses one argument of {MAX_ARG_STRLEN:,} bytes or more (MAX_ARG_STRLEN),"
            " and all arguments with the environment past ARG_MAX (a quarter of the stack"
            " size limit)"
            if sys.platform == "linux"
            else "The system refuses all arguments with the environment past ARG_MAX"
        )
        return (
            f"Not run: the command's arguments are too long for the operating system"
            f" ({size - program:,} bytes with their separators, the longest {longest:,})."
            f" {limits}. Nothing ran; use shorter argument values."
        )
    return (
        f"Could not start the nav CLI {cli!r}: {error.strerror or error}. "
        f"Nothing ran; set {NAV_AGENT_CLI_ENV} to a working nav binary."
    )


class NavToolRunner:
    """Runs the agent's tool calls as `nav --cluster <cluster> ...` subprocesses.

    Implements `navagent.core.tools.ToolRunner`: every failure (bad arguments,
    unknown tool, declined, binary missing, non-zero exit, timeout) becomes a
    `ToolOutcome` the model can read; only `asyncio.CancelledError` escapes,
    after the process group is killed.
    """

    def __init__(
        self,
        cli: str | os.PathLike[str],
        *,
        cluster: str,
        confirm: Confirm | None = None,
        assume_yes: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        create_timeout_s: float = DEFAULT_CREATE_TIMEOUT_S,
        output_cap_bytes: int = DEFAULT_OUTPUT_CAP_BYTES,
        kill_grace_s: float = 1.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        execute: ProcessExecutor = run_process,
    ) -> None:
        """Set up a runner for one cluster.

        Args:
            cli: The `nav` binary, usually from `resolve_nav_cli()`.
            cluster: Passed as `--cluster` to every command.
            confirm: Asked before `sandbox_create` and `sandbox_delete`; with
                no callback (and no `assume_yes`) those calls are declined.
            assume_yes: Run changing tools without asking (`--yes`).
            timeout_s: Kill a command after this many seconds.
            create_timeout_s: The timeout for `sandbox_create`, which waits
                for the sandbox to be Ready (up to 120 s) and runs a command.
            output_cap_bytes: Bytes kept per stream (half head, half tail).
            kill_grace_s: Between SIGTERM and SIGKILL on timeout.
            env: Environment of the subprocess; None inherits ours.
            cwd: Working directory of the subprocess; None inherits ours.
            execute: What runs a command (a recording wraps it, a replay
                serves results from a tool cassette).

        Raises:
            ValueError: `cluster` is empty or looks like an option, or a
                timeout, grace or cap is out of range.
        """
        cluster_args(cluster)
        if min(timeout_s, create_timeout_s) <= 0 or kill_grace_s < 0 or output_cap_bytes < 0:
            raise ValueError(
                "timeouts must be > 0, kill_grace_s and output_cap_bytes >= 0; got "
                f"timeout_s={timeout_s}, create_timeout_s={create_timeout_s}, "
                f"kill_grace_s={kill_grace_s}, output_cap_bytes={output_cap_bytes}"
            )
        self.cli = os.fspath(cli)
        self.cluster = cluster
        self._confirm = confirm
        self._assume_yes = assume_yes
        self._timeout_s = timeout_s
        self._create_timeout_s = create_timeout_s
        self._output_cap_bytes = output_cap_bytes
        self._kill_grace_s = kill_grace_s
        self._env = env
        self._cwd = cwd
        self._execute = execute
        self._asking = asyncio.Lock()  # one question at a time when calls run concurrently

    async def run(self, call: ToolCall) -> ToolOutcome:
        """Validate, confirm if needed, run `nav`, and describe the outcome."""
        try:
            return await self._run(call)
        except Exception as error:  # the contract: a bug here must not end the turn
            return ToolOutcome(
                call=call,
                status="failed",
                content=f"Internal error while running {call.name}: {error!r}",
            )

    async def _run(self, call: ToolCall) -> ToolOutcome:
        try:
            prepared = prepare_call(call, cluster=self.cluster)
        except InvalidToolCallError as error:
            return ToolOutcome(call=call, status=error.status, content=str(error))
        argv = (self.cli, *prepared.args)
        if prepared.spec.needs_confirmation and not self._assume_yes:
            refusal = await self._ask(call, argv)
            if refusal is not None:
                return ToolOutcome(call=call, status="declined", content=refusal)
        timeout_s = self._create_timeout_s if call.name == "sandbox_create" else self._timeout_s
        try:
            result = await self._execute(
                argv,
                timeout_s=timeout_s,
                output_cap_bytes=self._output_cap_bytes,
                kill_grace_s=self._kill_grace_s,
                cwd=self._cwd,
                env=self._env,
            )
        except OSError as error:
            return ToolOutcome(
                call=call, status="failed", argv=argv, content=_start_failure(self.cli, argv, error)
            )
        status = "timeout" if result.timed_out else "ok" if result.returncode == 0 else "failed"
        return ToolOutcome(
            call=call,
            status=status,
            content=format_tool_result(result, timeout_s=timeout_s),
            argv=argv,
            exit_code=result.returncode,
            duration_s=result.duration_s,
        )

    async def _ask(self, call: ToolCall, argv: tuple[str, ...]) -> str | None:
        """Return None when the user agrees, else the text telling the model why not."""
        command = " ".join(["nav", *argv[1:]])
        if self._confirm is None:
            return (
                f"Not run: {call.name} changes the cluster and needs the user's confirmation, "
                f"but there is no one to ask (non-interactive session). Tell the user the "
                f"command ({command}) so they can run it or restart with --yes."
            )
        async with self._asking:
            try:
                approved = await self._confirm(call, argv)
            except Exception as error:  # the prompt itself failed, e.g. stdin closed
                return f"Not run: asking the user to confirm {call.name} failed ({error!r})."
        if approved:
            return None
        return (
            f"The user declined to run {call.name} ({command}); nothing was run. "
            f"Do not retry it; ask the user what they would like to do instead."
        )
