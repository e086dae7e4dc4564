"""Finding `nav`, running it, and turning what it did into the text the model sees.

The process mechanics (timeouts, process groups, caps, cancellation) run
against small fake executables: `nav-sim` cannot be made to misbehave in
all these ways at exact moments, and these tests must not depend on it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core._process import CappedBuffer, CapturedOutput, ProcessResult
from navagent.core.messages import ToolCall
from navagent.core.nav_cli import (
    MAX_ARG_STRLEN,
    NO_OUTPUT,
    NavCliNotFoundError,
    NavToolRunner,
    format_tool_result,
    resolve_nav_cli,
    strip_ansi,
)
from tests.core.fake_programs import SPAWN_GRANDCHILD, pid_gone, wait_until, write_program

ECHO_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"
RECORD_ARGV = """
    import json, os, sys
    with open(os.environ["CALL_LOG"], "a") as log:
        log.write(json.dumps(sys.argv[1:]) + "\\n")
    print("done")
"""


def call(name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id="call_1", name=name, arguments=json.dumps(arguments or {}))


def captured(data: bytes) -> CapturedOutput:
    return CapturedOutput(head=data)


def result(
    stdout: bytes = b"", stderr: bytes = b"", returncode: int | None = 0, *, timed_out=False
) -> ProcessResult:
    return ProcessResult(
        argv=("nav",),
        returncode=returncode,
        stdout=captured(stdout),
        stderr=captured(stderr),
        timed_out=timed_out,
        duration_s=0.1,
    )


# --- resolution ---------------------------------------------------------------------------


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    return tmp_path / "bin"


def test_resolve_nav_cli_explicit_path_wins_over_everything(bin_dir: Path) -> None:
    chosen = write_program(bin_dir, "", name="my-nav")
    other = write_program(bin_dir, "", name="nav")
    environ = {"NAV_AGENT_CLI": str(other), "PATH": str(bin_dir)}
    assert resolve_nav_cli(chosen, environ=environ, argv0=str(other)) == chosen


def test_resolve_nav_cli_relative_path_becomes_absolute(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_program(bin_dir, "", name="nav-x")
    monkeypatch.chdir(bin_dir.parent)
    resolved = resolve_nav_cli("bin/nav-x", environ={"PATH": ""})
    assert resolved == bin_dir / "nav-x"
    assert resolved.is_absolute()


def test_resolve_nav_cli_env_path_wins_over_running_nav(bin_dir: Path) -> None:
    configured = write_program(bin_dir, "", name="nav-sim")
    running = write_program(bin_dir, "", name="nav")
    environ = {"NAV_AGENT_CLI": str(configured), "PATH": str(bin_dir)}
    assert resolve_nav_cli(environ=environ, argv0=str(running)) == configured


def test_resolve_nav_cli_env_command_name_is_looked_up_on_path(bin_dir: Path) -> None:
    sim = write_program(bin_dir, "", name="nav-sim")
    environ = {"NAV_AGENT_CLI": "nav-sim", "PATH": f"/nonexistent:{bin_dir}"}
    assert resolve_nav_cli(environ=environ, argv0="pytest") == sim


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{bin}/absent", "{bin}/absent does not exist"),
        ("{bin}/plain-file", "{bin}/plain-file is not an executable file"),
        ("{bin}", "{bin} is not an executable file"),
        ("nav-absent", "no executable 'nav-absent' on PATH"),
    ],
    ids=["missing-path", "not-executable", "directory", "name-not-on-path"],
)
def test_resolve_nav_cli_bad_env_is_an_error_not_a_fallback(
    bin_dir: Path, value: str, problem: str
) -> None:
    write_program(bin_dir, "", name="plain-file", mode=0o644)
    write_program(bin_dir, "", name="nav")  # would be found if resolution fell back
    environ = {"NAV_AGENT_CLI": value.format(bin=bin_dir), "PATH": str(bin_dir)}
    with pytest.raises(NavCliNotFoundError) as caught:
        resolve_nav_cli(environ=environ, argv0=str(bin_dir / "nav"))
    assert str(caught.value) == f"NAV_AGENT_CLI: {problem.format(bin=bin_dir)}"


def test_resolve_nav_cli_blank_env_counts_as_unset(bin_dir: Path) -> None:
    nav = write_program(bin_dir, "", name="nav")
    assert resolve_nav_cli(environ={"NAV_AGENT_CLI": "  ", "PATH": str(bin_dir)}) == nav


def test_resolve_nav_cli_uses_the_running_nav_console_script(bin_dir: Path, tmp_path: Path) -> None:
    running = write_program(tmp_path / "venv" / "bin", "", name="nav")
    write_program(bin_dir, "", name="nav")  # another nav on PATH loses
    assert resolve_nav_cli(environ={"PATH": str(bin_dir)}, argv0=str(running)) == running


@pytest.mark.parametrize("argv0", ["/usr/bin/pytest", "/gone/nav"], ids=["not-nav", "nav-gone"])
def test_resolve_nav_cli_falls_back_to_nav_on_path(bin_dir: Path, argv0: str) -> None:
    on_path = write_program(bin_dir, "", name="nav")
    assert resolve_nav_cli(environ={"PATH": str(bin_dir)}, argv0=argv0) == on_path


def test_resolve_nav_cli_nothing_found_says_to_set_the_variable(bin_dir: Path) -> None:
    write_program(bin_dir, "", name="not-nav")
    with pytest.raises(NavCliNotFoundError, match="Set NAV_AGENT_CLI to the path"):
        resolve_nav_cli(environ={"PATH": str(bin_dir)}, argv0="/usr/bin/pytest")


def test_resolve_nav_cli_explicit_missing_is_an_error(bin_dir: Path) -> None:
    with pytest.raises(NavCliNotFoundError, match=r"nav CLI: .*/absent does not exist"):
        resolve_nav_cli(bin_dir / "absent", environ={})


# --- the result text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("process", "text"),
    [
        (result(b"NAME\ndev-box\n"), "NAME\ndev-box\n"),
        (result(b"out\n", b"\n  warning: x  \n\n"), "out\n\nwarning: x"),
        (result(b"out\n", b" \n\t\n"), "out\n"),
        (result(b"", b"Error:   x nope\n\n", 1), "\nError:   x nope\nCommand exited with code: 1"),
        (result(b"partial\n", b"", 2), "partial\n\nCommand exited with code: 2"),
        (result(b""), NO_OUTPUT),
        (result(b"", b"  \n"), NO_OUTPUT),
        (result(b"x", b"", -9), "x\nCommand was terminated by SIGKILL."),
        (
            result(b"x", b"", None, timed_out=True),
            "x\nCommand timed out after 2.5 s and was killed.",
        ),
    ],
    ids=[
        "stdout",
        "stderr-trimmed",
        "blank-stderr-dropped",
        "error-exit",
        "exit-code",
        "empty",
        "empty-blank-stderr",
        "signal",
        "timeout",
    ],
)
def test_format_tool_result_follows_the_real_agent(process: ProcessResult, text: str) -> None:
    assert format_tool_result(process, timeout_s=2.5) == text


def test_format_tool_result_strips_colour_from_both_streams() -> None:
    process = result(b"\x1b[1mNAME   \x1b[0m\n\x1b[32mReady\x1b[39m\n", b"\x1b[31mbad\x1b[0m\n", 1)
    assert (
        format_tool_result(process, timeout_s=1)
        == "NAME   \nReady\n\nbad\nCommand exited with code: 1"
    )


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("\x1b[1m\x1b[36mServer Status\x1b[39m\x1b[0m", "Server Status"),
        ("  \x1b[2mPhase:\x1b[0m Ready", "  Phase: Ready"),
        ("\x1b[1m\x1b[32m✓\x1b[39m\x1b[0m Deleted", "✓ Deleted"),
        ("\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("a\x1b[2Kb\x1b[1;31mc", "abc"),
        ("cut\x1b", "cut"),
        ("[not an escape] 100%", "[not an escape] 100%"),
    ],
    ids=["sgr", "dimmed-label", "check-mark", "osc-hyperlink", "csi-params", "lone-esc", "plain"],
)
def test_strip_ansi(raw: str, plain: str) -> None:
    assert strip_ansi(raw) == plain


# --- the output cap -----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=3000),
    cap=st.integers(min_value=0, max_value=600),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=12),
)
def test_capped_buffer_keeps_both_ends_and_never_more_than_the_cap(
    data: bytes, cap: int, cuts: list[int]
) -> None:
    buffer = CappedBuffer(cap)
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    for start, end in zip(bounds, bounds[1:], strict=False):
        buffer.feed(data[start:end])
        assert len(buffer._head) + len(buffer._tail) <= cap
    out = buffer.finish()
    assert out.total == len(data)
    assert data.startswith(out.head)
    assert data.endswith(out.tail)
    assert len(out.head) + len(out.tail) == min(cap, len(data))
    if not out.omitted:
        assert out.head + out.tail == data


def _shown_and_omitted(text: str) -> tuple[int, int]:
    match = re.search(r"\[\.\.\. ([\d,]+) more bytes of output omitted \.\.\.\]\n", text)
    assert match is not None, text
    shown = text[: match.start()] + text[match.end() :]
    return len(shown.encode()), int(match.group(1).replace(",", ""))


@pytest.mark.parametrize("line", ["x" * 99 + "\n", "é" * 7 + "\n", "€", "a€"], ids=repr)
def test_captured_output_counts_every_byte_not_shown(line: str) -> None:
    data = (line * 5000).encode()
    buffer = CappedBuffer(1001)
    buffer.feed(data)
    text = buffer.finish().text()
    assert "\ufffd" not in text  # cuts never split a character
    shown, omitted = _shown_and_omitted(text)
    # The marker line adds a newline only when the head was not cut at one.
    assert shown + omitted in {len(data), len(data) + 1}
    assert shown <= 1001 + 1


def test_captured_output_cuts_at_line_boundaries() -> None:
    lines = [f"line {n:05d}\n".encode() for n in range(10_000)]
    buffer = CappedBuffer(4096)
    buffer.feed(b"".join(lines))
    head, marker, tail = buffer.finish().text().partition("[... ")
    assert marker and head.endswith("\n") and tail.endswith("line 09999\n")
    rows = [*head.splitlines(), *tail.splitlines()[1:]]
    assert all(re.fullmatch(r"line \d{5}", row) for row in rows), rows


def test_captured_output_under_the_cap_is_untouched() -> None:
    buffer = CappedBuffer(100)
    buffer.feed(b"ok \xff\n")
    out = buffer.finish()
    assert out.omitted == 0
    assert out.text() == "ok \ufffd\n"


def test_capped_buffer_refuses_a_negative_cap() -> None:
    with pytest.raises(ValueError, match="cap must be >= 0"):
        CappedBuffer(-1)


# --- running ------------------------------------------------------------------------------


def runner(cli: Path, **options: Any) -> NavToolRunner:
    options.setdefault("timeout_s", 20)
    options.setdefault("kill_grace_s", 0.3)
    return NavToolRunner(cli, cluster="demo", **options)


async def test_runner_runs_the_exact_argv(tmp_path: Path) -> None:
    nav = write_program(tmp_path, ECHO_ARGV)
    outcome = await runner(nav).run(call("sandbox_logs", {"name": "dev-box", "lines": 5}))
    expected = ["--cluster", "demo", "sandbox", "logs", "dev-box", "-n", "5"]
    assert outcome.status == "ok"
    assert json.loads(outcome.content) == expected
    assert outcome.argv == (str(nav), *expected)
    assert outcome.exit_code == 0
    assert 0 < outcome.duration_s < 20


async def test_runner_gives_the_process_no_stdin(tmp_path: Path) -> None:
    nav = write_program(tmp_path, "import sys; print(repr(sys.stdin.read()))")
    outcome = await runner(nav, timeout_s=10).run(call("cluster_status"))
    assert outcome.content == "''\n"


async def test_runner_passes_env_and_cwd(tmp_path: Path) -> None:
    nav = write_program(tmp_path / "bin", "import os; print(os.environ['MARK'], os.getcwd())")
    work = tmp_path / "work"
    work.mkdir()
    outcome = await runner(nav, env={"MARK": "sim-7"}, cwd=work).run(call("sandbox_list"))
    assert outcome.content == f"sim-7 {work}\n"


async def test_runner_reports_stderr_and_exit_code(tmp_path: Path) -> None:
    body = """
        import sys
        print("\\x1b[1mServer Status\\x1b[0m")
        sys.stderr.write("Error:   \\u00d7 client error (Connect)\\n\\n")
        sys.exit(1)
    """
    outcome = await runner(write_program(tmp_path, body)).run(call("cluster_status"))
    assert outcome.status == "failed"
    assert outcome.exit_code == 1
    assert outcome.content == (
        "Server Status\n\nError:   × client error (Connect)\nCommand exited with code: 1"
    )


async def test_runner_empty_output_says_so(tmp_path: Path) -> None:
    outcome = await runner(write_program(tmp_path, "pass")).run(call("sandbox_logs", {"name": "x"}))
    assert (outcome.status, outcome.content) == ("ok", NO_OUTPUT)


async def test_runner_non_utf8_output_survives_as_replacement_characters(tmp_path: Path) -> None:
    body = r"""
        import sys
        sys.stdout.buffer.write(b"ok \xff\xfe end\n\xc3")
    """
    outcome = await runner(write_program(tmp_path, body)).run(call("sandbox_list"))
    assert outcome.content == "ok \ufffd\ufffd end\n\ufffd"


async def test_runner_caps_huge_output_and_says_how_much_was_cut(tmp_path: Path) -> None:
    body = """
        import sys
        line = b"x" * 99 + b"\\n"
        for _ in range(20_000):
            sys.stdout.buffer.write(line)
        sys.stderr.buffer.write(b"e" * 50_000)
    """
    outcome = await runner(write_program(tmp_path, body), output_cap_bytes=4096).run(
        call("sandbox_list")
    )
    stdout, _, stderr = outcome.content.partition("\ne")
    shown, omitted = _shown_and_omitted(stdout)
    assert shown + omitted == 2_000_000
    assert 4000 <= shown <= 4096
    assert len(outcome.content) < 2 * 4096 + 200
    assert "more bytes of output omitted" in stderr


async def test_runner_missing_binary_is_a_failed_outcome(tmp_path: Path) -> None:
    outcome = await runner(tmp_path / "absent").run(call("sandbox_list"))
    assert outcome.status == "failed"
    assert outcome.exit_code is None
    assert "Could not start the nav CLI" in outcome.content
    assert "No such file or directory" in outcome.content
    assert "NAV_AGENT_CLI" in outcome.content


async def test_runner_unexecutable_binary_is_a_failed_outcome(tmp_path: Path) -> None:
    nav = write_program(tmp_path, "print('never')", mode=0o644)
    outcome = await runner(nav).run(call("sandbox_list"))
    assert outcome.status == "failed"
    assert "Permission denied" in outcome.content


async def test_runner_turns_an_unexpected_error_into_an_outcome(tmp_path: Path) -> None:
    async def broken(*args: Any, **kwargs: Any) -> ProcessResult:
        raise RuntimeError("boom")

    broken_runner = NavToolRunner(tmp_path / "nav", cluster="demo", execute=broken)
    outcome = await broken_runner.run(call("sandbox_list"))
    assert outcome.status == "failed"
    assert "RuntimeError('boom')" in outcome.content


def _pids(pidfile: Path) -> list[int]:
    return [int(pid) for pid in pidfile.read_text(encoding="utf-8").split()]


@pytest.mark.parametrize("ignore_term", [False, True], ids=["leader-obeys-term", "ignores-term"])
async def test_runner_timeout_kills_the_whole_process_group(
    tmp_path: Path, ignore_term: bool
) -> None:
    pidfile = tmp_path / "pids"
    env = {**os.environ, "PIDFILE": str(pidfile)}
    if ignore_term:
        env["IGNORE_TERM"] = "1"
    nav = write_program(tmp_path / "bin", SPAWN_GRANDCHILD)
    outcome = await runner(nav, timeout_s=2, env=env).run(call("sandbox_list"))
    assert outcome.status == "timeout"
    assert outcome.exit_code is None
    assert outcome.content == "working\n\nCommand timed out after 2 s and was killed."
    assert 2 <= outcome.duration_s < 10
    pids = _pids(pidfile)
    assert await wait_until(lambda: all(pid_gone(pid) for pid in pids)), pids


async def test_runner_timeout_covers_a_child_left_holding_the_output(tmp_path: Path) -> None:
    body = """
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        print("leader done", flush=True)
    """
    outcome = await runner(write_program(tmp_path, body), timeout_s=1.5).run(call("sandbox_list"))
    assert outcome.status == "timeout"
    assert outcome.content.startswith("leader done\n")


async def test_runner_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    nav = write_program(tmp_path / "bin", SPAWN_GRANDCHILD)
    env = {**os.environ, "PIDFILE": str(pidfile)}
    task = asyncio.create_task(runner(nav, env=env).run(call("sandbox_list")))
    assert await wait_until(pidfile.exists)
    task.cancel()
    # Promptly: the runner kills the group instead of waiting for it to finish.
    await asyncio.wait([task], timeout=5)
    assert task.cancelled()
    pids = _pids(pidfile)
    assert await wait_until(lambda: all(pid_gone(pid) for pid in pids)), pids


async def test_runner_sandbox_create_gets_its_own_timeout(tmp_path: Path) -> None:
    nav = write_program(tmp_path, "import time; time.sleep(1); print('Ready')")
    tools = runner(nav, timeout_s=0.5, create_timeout_s=20, assume_yes=True)
    created, listed = await asyncio.gather(
        tools.run(call("sandbox_create", {"name": "a"})), tools.run(call("sandbox_list"))
    )
    assert (created.status, created.content) == ("ok", "Ready\n")
    assert listed.status == "timeout"
    assert "timed out after 0.5 s" in listed.content


# --- validation and confirmation ----------------------------------------------------------


@pytest.fixture
def recording_nav(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "calls.jsonl"
    return write_program(tmp_path / "bin", RECORD_ARGV), log


def calls_made(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_runner_refuses_an_unusable_cluster(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid cluster name"):
        NavToolRunner(tmp_path / "nav", cluster="--all")


@pytest.mark.parametrize(
    "option",
    [
        {"timeout_s": 0},
        {"create_timeout_s": -1},
        {"kill_grace_s": -0.1},
        {"output_cap_bytes": -1},
    ],
    ids=["timeout", "create-timeout", "grace", "cap"],
)
def test_runner_refuses_limits_out_of_range(tmp_path: Path, option: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=f"{next(iter(option))}="):
        NavToolRunner(tmp_path / "nav", cluster="demo", **option)


@pytest.mark.parametrize(
    ("tool", "arguments", "status"),
    [
        ("sandbox_get", "{}", "invalid"),
        ("sandbox_delete", '{"name": "-rf"}', "invalid"),
        ("sandbox_list", "[", "invalid"),
        ("sandbox_nuke", "{}", "unknown_tool"),
    ],
    ids=["missing-name", "option-like-name", "bad-json", "unknown-tool"],
)
async def test_runner_bad_calls_run_nothing(
    recording_nav: tuple[Path, Path], tool: str, arguments: str, status: str
) -> None:
    nav, log = recording_nav
    asked: list[ToolCall] = []

    async def confirm(call: ToolCall, argv: tuple[str, ...]) -> bool:
        asked.append(call)
        return True

    bad = ToolCall(id="c", name=tool, arguments=arguments)
    outcome = await runner(nav, confirm=confirm, env={"CALL_LOG": str(log)}).run(bad)
    assert outcome.status == status
    assert "nothing was run" in outcome.content
    assert outcome.argv == ()
    assert calls_made(log) == [] and asked == []


@pytest.mark.parametrize("tool", ["sandbox_create", "sandbox_delete"])
async def test_runner_asks_before_changing_tools_and_runs_when_approved(
    recording_nav: tuple[Path, Path], tool: str
) -> None:
    nav, log = recording_nav
    asked: list[tuple[ToolCall, tuple[str, ...]]] = []

    async def confirm(call: ToolCall, argv: tuple[str, ...]) -> bool:
        assert calls_made(log) == []  # asked before anything runs
        asked.append((call, argv))
        return True

    request = call(tool, {"name": "py-worker"})
    outcome = await runner(nav, confirm=confirm, env={"CALL_LOG": str(log)}).run(request)
    assert outcome.status == "ok"
    assert asked == [(request, outcome.argv)]
    assert calls_made(log) == [list(outcome.argv[1:])]


async def test_runner_declined_runs_nothing_and_tells_the_model(
    recording_nav: tuple[Path, Path],
) -> None:
    nav, log = recording_nav

    async def refuse(call: ToolCall, argv: tuple[str, ...]) -> bool:
        return False

    tools = runner(nav, confirm=refuse, env={"CALL_LOG": str(log)})
    outcome = await tools.run(call("sandbox_delete", {"name": "dev-box"}))
    assert outcome.status == "declined"
    assert outcome.argv == ()
    assert "The user declined to run sandbox_delete" in outcome.content
    assert "nav --cluster demo sandbox delete dev-box" in outcome.content
    assert calls_made(log) == []


@pytest.mark.parametrize(
    "confirm_error", [EOFError(), RuntimeError("terminal gone")], ids=["eof", "runtime"]
)
async def test_runner_failed_confirmation_counts_as_declined(
    recording_nav: tuple[Path, Path], confirm_error: Exception
) -> None:
    nav, log = recording_nav

    async def broken(call: ToolCall, argv: tuple[str, ...]) -> bool:
        raise confirm_error

    outcome = await runner(nav, confirm=broken, env={"CALL_LOG": str(log)}).run(
        call("sandbox_create")
    )
    assert outcome.status == "declined"
    assert "asking the user to confirm sandbox_create failed" in outcome.content
    assert calls_made(log) == []


async def test_runner_without_a_way_to_ask_declines(recording_nav: tuple[Path, Path]) -> None:
    nav, log = recording_nav
    outcome = await runner(nav, env={"CALL_LOG": str(log)}).run(
        call("sandbox_delete", {"name": "x"})
    )
    assert outcome.status == "declined"
    assert "--yes" in outcome.content
    assert calls_made(log) == []


async def test_runner_assume_yes_skips_the_question(recording_nav: tuple[Path, Path]) -> None:
    nav, log = recording_nav

    async def never(call: ToolCall, argv: tuple[str, ...]) -> bool:
        raise AssertionError("asked despite assume_yes")

    tools = runner(nav, confirm=never, assume_yes=True, env={"CALL_LOG": str(log)})
    outcome = await tools.run(call("sandbox_delete", {"name": "x"}))
    assert outcome.status == "ok"
    assert calls_made(log) == [["--cluster", "demo", "sandbox", "delete", "x"]]


@pytest.mark.parametrize("tool", ["cluster_status", "sandbox_list", "provider_list"])
async def test_runner_read_only_tools_never_ask(
    recording_nav: tuple[Path, Path], tool: str
) -> None:
    nav, log = recording_nav

    async def never(call: ToolCall, argv: tuple[str, ...]) -> bool:
        raise AssertionError("asked for a read-only tool")

    outcome = await runner(nav, confirm=never, env={"CALL_LOG": str(log)}).run(call(tool))
    assert outcome.status == "ok"


async def test_runner_asks_one_question_at_a_time(recording_nav: tuple[Path, Path]) -> None:
    nav, log = recording_nav
    open_questions = 0
    most = 0

    async def slow_yes(call: ToolCall, argv: tuple[str, ...]) -> bool:
        nonlocal open_questions, most
        open_questions += 1
        most = max(most, open_questions)
        await asyncio.sleep(0.05)
        open_questions -= 1
        return True

    tools = runner(nav, confirm=slow_yes, env={"CALL_LOG": str(log)})
    names = ["a", "b", "c"]
    outcomes = await asyncio.gather(
        *(tools.run(call("sandbox_delete", {"name": n})) for n in names)
    )
    assert [o.status for o in outcomes] == ["ok"] * 3
    assert most == 1
    assert sorted(c[-1] for c in calls_made(log)) == names


async def test_runner_argument_list_too_long_is_reported_as_that(tmp_path: Path) -> None:
    nav = write_program(tmp_path, "print('never')")
    outcome = await runner(nav).run(call("sandbox_logs", {"name": "a" * 200_000}))
    assert outcome.status == "failed"
    assert "arguments are too long for the operating system" in outcome.content
    assert "NAV_AGENT_CLI" not in outcome.content


LINUX_LIMITS = (
    "Linux refuses one argument of {:,} bytes or more (MAX_ARG_STRLEN), and all arguments"
    " with the environment past ARG_MAX (a quarter of the stack size limit). Nothing ran;"
    " use shorter argument values."
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's exec limits")
async def test_the_per_argument_limit_named_is_the_one_linux_enforces(tmp_path: Path) -> None:
    """One byte under MAX_ARG_STRLEN (its NUL makes the limit) runs; the limit itself does not."""
    nav = write_program(tmp_path, "print('ran')")
    fits = await runner(nav).run(call("sandbox_logs", {"name": "a" * (MAX_ARG_STRLEN - 1)}))
    assert (fits.status, fits.content.strip()) == ("ok", "ran")

    name = "a" * MAX_ARG_STRLEN
    refused = await runner(nav).run(call("sandbox_logs", {"name": name}))
    written = ["--cluster", "demo", "sandbox", "logs", name]  # what the model made, not the path
    size = sum(len(arg) + 1 for arg in written)
    assert refused.status == "failed"
    assert refused.content == (
        "Not run: the command's arguments are too long for the operating system"
        f" ({size:,} bytes with their separators, the longest {MAX_ARG_STRLEN:,}). "
        + LINUX_LIMITS.format(MAX_ARG_STRLEN)
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's exec limits")
async def test_arguments_each_short_but_past_arg_max_together_are_refused_naming_it(
    tmp_path: Path,
) -> None:
    arg_max = os.sysconf("SC_ARG_MAX")
    if arg_max > 16 * 1024 * 1024:
        pytest.skip(f"ARG_MAX is {arg_max:,} bytes here: too much to build in a test")
    nav = write_program(tmp_path, "print('ran')")
    word = "w" * (MAX_ARG_STRLEN // 2)  # each far under the per-argument limit
    words = [word] * (arg_max // len(word) + 2)
    refused = await runner(nav, assume_yes=True).run(
        call("sandbox_create", {"command": " ".join(words)})
    )
    written = ["--cluster", "demo", "sandbox", "create", "--keep", "--", *words]
    assert refused.status == "failed"
    assert refused.content == (
        "Not run: the command's arguments are too long for the operating system"
        f" ({sum(len(arg) + 1 for arg in written):,} bytes with their separators, the longest"
        f" {len(word):,}). " + LINUX_LIMITS.format(MAX_ARG_STRLEN)
    )
