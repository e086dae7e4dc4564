"""`nav agent` as scripts use it: real processes, `-p`, piped stdin, `--json`, sessions.

Every run uses `--demo` (no keys, no network) unless the point is the
gateway connection, and a private state dir so sessions never leak between
tests or into the user's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from navagent.core.agent_events import AgentEvent, TurnFinished, TurnStarted
from navagent.core.events import TextDelta
from navagent.core.history import validate_history
from navagent.core.messages import UserMessage
from navagent.core.sessions import SessionStore
from navagent.core.wire_formats import FORMAT_IDS
from tests.cli.harness import NAV, NAV_SIM, run_nav

pytestmark = pytest.mark.slow  # each test starts `nav` (or a gateway) as a process

SEEDED = ("dev-box", "gpu-trainer", "py-worker")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A clean environment: private state and config, no cluster or gateway preset."""
    base = {
        key: value
        for key, value in os.environ.items()
        if key not in {"NAVIGATOR_CLUSTER", "NAV_AGENT_GATEWAY", "NAV_AGENT_CLI", "NAV_SIM_FAULT"}
        and not key.startswith("NAV_GATEWAY_")
    }
    return {
        **base,
        "NAV_AGENT_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }


def test_prompt_prints_only_the_answer_on_stdout(env) -> None:
    result = run_nav("agent", "--demo", "-p", "list my sandboxes", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1
    assert all(name in result.stdout for name in SEEDED)
    assert "→ sandbox_list" in result.stderr and "✓ sandbox_list" in result.stderr
    assert "simulation" in result.stderr
    assert "Traceback" not in result.stderr


def test_piped_lines_are_one_message_each_and_deletes_are_declined(env) -> None:
    result = run_nav(
        "agent",
        "--demo",
        stdin="list my sandboxes\n\ndelete py-worker\nlist my sandboxes\n",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    answers = result.stdout.splitlines()
    assert len(answers) == 3
    assert "py-worker (Provisioning)" in answers[0]
    assert "declined" in result.stderr and "pass --yes" in result.stderr
    assert "was declined, not run" in answers[1] and "Deleted" not in answers[1]
    assert "py-worker (Provisioning)" in answers[2]  # nothing was deleted
    assert "nav> " not in result.stdout + result.stderr


def test_piped_with_yes_runs_the_delete(env) -> None:
    result = run_nav(
        "agent", "--demo", "--yes", stdin="delete py-worker\nlist my sandboxes\n", env=env
    )
    assert result.returncode == 0, result.stderr
    assert "--yes" in result.stderr
    deleted, listing = result.stdout.splitlines()
    assert "py-worker" in deleted
    assert "py-worker (Deleting)" in listing


def test_json_prints_parseable_events_and_nothing_else(env) -> None:
    result = run_nav("agent", "--demo", "--json", "-p", "list my sandboxes", env=env)
    assert result.returncode == 0, result.stderr
    adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
    events = [adapter.validate_json(line) for line in result.stdout.splitlines()]
    kinds = [event.kind for event in events]
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "answered"
    assert kinds.index("tool_started") < kinds.index("tool_finished") < kinds.index("text_delta")
    text = "".join(event.text for event in events if isinstance(event, TextDelta))
    assert all(name in text for name in SEEDED)


def test_json_marks_each_turn_with_its_text_and_session(env) -> None:
    result = run_nav(
        "agent", "--demo", "--json", "--session", "script",
        stdin="list my sandboxes\nhello\n", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
    events = [adapter.validate_json(line) for line in result.stdout.splitlines()]
    (session,) = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    started = [e for e in events if isinstance(e, TurnStarted)]
    finished = [e for e in events if isinstance(e, TurnFinished)]
    assert [(e.text, e.session_id) for e in started] == [
        ("list my sandboxes", session["id"]),
        ("hello", session["id"]),
    ]
    assert [e.session_id for e in finished] == [session["id"]] * 2
    # Each turn's events sit between its turn_started and its turn_finished.
    kinds = [e.kind for e in events]
    assert kinds[0] == "turn_started" and kinds.count("turn_started") == 2
    assert kinds.index("turn_finished") < kinds.index("turn_started", 1)


def test_no_terminal_notice_only_when_a_call_is_declined(env) -> None:
    quiet = run_nav("agent", "--demo", "-p", "list my sandboxes", env=env)
    assert "no terminal to ask" not in quiet.stderr
    declined = run_nav("agent", "--demo", "-p", "delete py-worker", env=env)
    assert declined.stderr.count("no terminal to ask") == 1
    assert "pass --yes" in declined.stderr


def test_failed_turn_exits_1_with_one_red_line(env) -> None:
    result = run_nav(
        "agent", "--demo", "-p", "hello [sim-fault: error-mid-stream after=3]", env=env
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr


def test_unreachable_gateway_is_one_sentence_and_exit_1(env, unused_tcp_port) -> None:
    result = run_nav(
        "agent",
        "--cluster",
        "demo",
        "--gateway",
        f"127.0.0.1:{unused_tcp_port}",
        "--connect-timeout",
        "0.5",
        "-p",
        "hi",
        env={**env, "NAV_AGENT_CLI": NAV_SIM},
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"cannot reach the gateway at 127.0.0.1:{unused_tcp_port}" in result.stderr


def test_gateway_comes_from_the_environment_variable(env, unused_tcp_port) -> None:
    result = run_nav(
        "agent",
        "--cluster",
        "demo",
        "--connect-timeout",
        "0.3",
        "-p",
        "hi",
        env={**env, "NAV_AGENT_GATEWAY": f"127.0.0.1:{unused_tcp_port}", "NAV_AGENT_CLI": NAV_SIM},
    )
    assert result.returncode == 1
    assert f"127.0.0.1:{unused_tcp_port}" in result.stderr


def test_no_cluster_anywhere_is_one_sentence_and_exit_2(env) -> None:
    result = run_nav("agent", "-p", "hi", env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "no cluster selected" in result.stderr and "--demo" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--session", "a", "--continue"), "cannot be used together"),
        (("--system-prompt", "/nonexistent/prompt.txt"), "cannot read the --system-prompt file"),
        (("--auth-token-env", "NAV_TEST_UNSET_TOKEN", "--cluster", "x"), "is not set"),
        (("--session", "bad name!"), "invalid session name"),
        (("--continue",), "no saved session"),
    ],
)
def test_bad_options_are_one_sentence_and_exit_2(env, args, message) -> None:
    extra = () if "--cluster" in args else ("--demo",)
    result = run_nav("agent", *extra, *args, "-p", "hi", env=env)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_session_resume_by_name_continues_the_conversation(env) -> None:
    first = run_nav("agent", "--demo", "--session", "work", "-p", "list my sandboxes", env=env)
    assert first.returncode == 0, first.stderr
    # "the first one" only makes sense with the earlier listing in the history.
    second = run_nav("agent", "--demo", "--session", "work", "-p", "show the first one", env=env)
    assert second.returncode == 0, second.stderr
    assert "resumed session work (4 messages)" in second.stderr
    assert "→ sandbox_get name=dev-box" in second.stderr
    assert "dev-box" in second.stdout


def test_continue_resumes_the_latest_session(env) -> None:
    run_nav("agent", "--demo", "--session", "older", "-p", "list my sandboxes", env=env)
    run_nav("agent", "--demo", "--session", "newer", "-p", "show the logs of gpu-trainer", env=env)
    result = run_nav("agent", "--demo", "--continue", "-p", "show it", env=env)
    assert result.returncode == 0, result.stderr
    assert "resumed session newer" in result.stderr
    assert "→ sandbox_get name=gpu-trainer" in result.stderr


def test_sessions_lists_saved_conversations_as_table_and_json(env) -> None:
    run_nav("agent", "--demo", "--session", "work", "-p", "list my sandboxes", env=env)
    table = run_nav("agent", "sessions", env=env)
    assert table.returncode == 0
    row = next(line for line in table.stdout.splitlines() if line.strip().startswith("work"))
    assert "demo" in row and "list my sandboxes" in row and " 4 " in row
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    assert [(s["name"], s["cluster"], s["message_count"]) for s in listed] == [("work", "demo", 4)]
    # The two completions' usage is saved with them and summed per session.
    usage = listed[0]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert "%)" in row  # e.g. 2.8k (45%): the share read from the cache
    assert "read from the provider's cache" in table.stderr
    # Issue 20, item 12: a --demo session resumes only with --demo, and the footer says so.
    assert "work *" in row
    assert "`nav agent --demo --session NAME`" in " ".join(table.stderr.split())


def test_sessions_export_rename_and_rm(env, tmp_path: Path) -> None:
    run_nav("agent", "--demo", "--session", "work", "-p", "list my sandboxes", env=env)

    transcript = run_nav("agent", "sessions", "export", "work", env=env)
    assert transcript.returncode == 0, transcript.stderr
    text = transcript.stdout
    assert text.startswith("# nav agent session work")
    assert text.index("## You\n\nlist my sandboxes") < text.index("**Tool** `sandbox_list`")
    assert "dev-box" in text and text.rstrip().endswith("py-worker (Provisioning).")

    out = tmp_path / "work.json"
    written = run_nav("agent", "sessions", "export", "work", "--json", "-o", str(out), env=env)
    assert written.returncode == 0, written.stderr
    exported = json.loads(out.read_text())
    assert exported["session"]["name"] == "work"
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant", "tool", "assistant"]
    # As /export and --record: what is there is kept, a link is not written through.
    (tmp_path / "link.json").symlink_to(tmp_path / "elsewhere.json")
    for taken in (out, tmp_path / "link.json"):
        again = run_nav("agent", "sessions", "export", "work", "-o", str(taken), env=env)
        assert again.returncode == 1 and "already exists" in " ".join(again.stderr.split())
        assert "Traceback" not in again.stderr
    assert json.loads(out.read_text()) == exported
    assert not (tmp_path / "elsewhere.json").exists()

    renamed = run_nav("agent", "sessions", "rename", "work", "ops", env=env)
    assert renamed.returncode == 0, renamed.stderr
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    assert [s["name"] for s in listed] == ["ops"]

    assert run_nav("agent", "sessions", "rm", "ops", env=env).returncode == 0
    assert json.loads(run_nav("agent", "sessions", "--json", env=env).stdout) == []
    missing = run_nav("agent", "sessions", "rm", "ops", env=env)
    assert missing.returncode == 1 and "no saved session" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_demo_without_session_keeps_nothing(env) -> None:
    run_nav("agent", "--demo", "-p", "list my sandboxes", env=env)
    listed = json.loads(run_nav("agent", "sessions", "--json", env=env).stdout)
    assert listed == []


def test_own_nav_as_tool_binary_fails_at_start(env) -> None:
    # No NAV_AGENT_CLI: the tools would run this package's `nav`, which has no
    # `sandbox` commands. It fails before connecting (nothing listens there).
    result = run_nav(
        "agent", "--cluster", "demo", "--gateway", "127.0.0.1:9", "-p", "list", env=env
    )
    assert result.returncode == 2, result.stderr
    assert "nav-agent's own `nav`" in result.stderr
    assert "set NAV_AGENT_CLI" in result.stderr and "--demo" in result.stderr
    assert "cannot reach the gateway" not in result.stderr
    assert result.stdout == ""


def test_demo_on_responses_carries_reasoning_across_the_tool_loop(env) -> None:
    result = run_nav(
        "agent",
        "--demo",
        "--demo-provider",
        "openai-responses",
        "-p",
        "list my sandboxes, then show the logs of the second one",
        env=env,
    )
    # Three model calls; the second and third could only be accepted by the
    # simulator with the earlier encrypted reasoning items sent back intact.
    assert "3 model calls" in result.stderr, result.stderr
    assert "I will call sandbox_logs" in result.stderr  # a reasoning summary, shown as thinking
    assert "gpu-trainer" in result.stdout and "ImagePullBackOff" in result.stdout


@pytest.mark.parametrize("provider", FORMAT_IDS)
def test_usage_line_shows_prompt_cache_reads_on_both_providers(env, provider) -> None:
    # Two model calls on one history: the second repeats the first's prefix.
    result = run_nav(
        "agent", "--demo", "--demo-provider", provider, "-p", "list my sandboxes", env=env
    )
    assert result.returncode == 0, result.stderr
    usage = result.stderr.strip().splitlines()[-1]
    assert usage.startswith("2 model calls · ") and " cached" in usage, usage
    if provider == "anthropic":
        assert "written to cache" in usage, usage


def test_agents_started_at_once_on_a_new_session_name_all_join_it(env) -> None:
    """Find-or-create is one step: none of the racers is told the name is taken."""
    agents = 5
    for round_ in range(2):
        name = f"racy-{round_}"
        started = [
            subprocess.Popen(
                [NAV, "agent", "--demo", "--session", name, "-p", f"list my sandboxes ({i})"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(agents)
        ]
        outcomes = [process.communicate(timeout=120) for process in started]
        for process, (_out, err) in zip(started, outcomes, strict=True):
            assert process.returncode == 0, err
            assert "already exists" not in err
        with SessionStore(Path(env["NAV_AGENT_STATE_DIR"]) / "sessions.db") as store:
            sessions = [s for s in store.list_sessions() if s.name == name]
            assert len(sessions) == 1
            history = store.load_history(sessions[0].id)
        validate_history(history)
        asked = sorted(m.content for m in history if isinstance(m, UserMessage))
        assert asked == [f"list my sandboxes ({i})" for i in range(agents)]
