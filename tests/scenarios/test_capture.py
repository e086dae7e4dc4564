"""What a capture keeps of a live conversation, and what the export makes of it, in process.

The conversation is `AgentSession` on the demo stack (simulated provider,
in-process gateway, nav-sim), wired as `nav agent` wires it: the capture's
transport in front of the gateway's upstream, its executor under the tool
runner, its sink, confirmation and steering around the agent's. Lines typed
mid-turn, a `/compact`, the y/N answers and a cancelled turn each end up in
the scenario (or in why it cannot be one), and the export replays it before
keeping it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import httpx
import pytest
import yaml

from navagent.cli.conversation import AgentSession, RecordTarget
from navagent.cli.demo import DemoStack
from navagent.core.agent import INTERRUPTED_MARK, Agent, ConversationRecorder
from navagent.core.agent_events import AgentEvent, ToolStarted
from navagent.core.chat_client import GrpcChatClient
from navagent.core.events import TextDelta
from navagent.core.messages import AssistantMessage, Message, ToolCall
from navagent.core.nav_cli import NavToolRunner
from navagent.core.prompts import default_system_prompt
from navagent.core.sessions import SessionStore
from navagent.core.tools import TOOLS
from navagent.fixtures.harness import (
    CassetteTransport,
    ExportError,
    ExportResult,
    SessionCapture,
    load_cassette,
    load_scenario,
    replay_scenario,
)
from navagent.fixtures.harness.record import _capture as capture_module
from navagent.gateway._network import upstream_transport


class Session:
    """A captured demo conversation, as `nav agent --demo` builds it."""

    def __init__(self, tmp_path: Path, demo: DemoStack, transport: CassetteTransport) -> None:
        self.answers: list[bool] = []
        self.on_event: Callable[[AgentEvent], None] = lambda _event: None
        """Sees every agent event (a test cancels the turn from here, as Ctrl-C would)."""
        self.turn: asyncio.Task[object] | None = None
        self.capture = SessionCapture(
            tmp_path / "recordings",
            kind="simulated",
            cluster="demo",
            routes=[demo.route],
            transport=transport,
            secrets=[],
            max_iterations=20,
            compaction=None,
            confirmation="ask",
        )

        async def ask(_call: ToolCall, _argv: tuple[str, ...]) -> bool:
            return self.answers.pop(0)

        runner = NavToolRunner(
            demo.nav_sim,
            cluster="demo",
            confirm=self.capture.confirm(ask),
            env=demo.tool_env,
            execute=self.capture.execute,
        )
        self.client = GrpcChatClient(demo.address)

        def make_agent(history: Sequence[Message], recorder: ConversationRecorder | None) -> Agent:
            return Agent(
                self.client,
                runner,
                system_prompt=default_system_prompt("demo"),
                tools=TOOLS,
                sink=self.capture.sink(lambda event: self.on_event(event)),
                history=history,
                recorder=recorder,
            )

        self.conversation = AgentSession(
            make_agent,
            store=SessionStore(tmp_path / "sessions.db"),
            cluster="demo",
            capture=self.capture,
            record_target=RecordTarget(tmp_path / "scenarios", tmp_path / "cassettes"),
        )


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async for made in _session(tmp_path, pacing_ms=0):
        yield made


@pytest.fixture
async def paced(tmp_path: Path) -> AsyncIterator[Session]:
    """The demo's model pacing its tokens, so a cancel lands between two of them."""
    async for made in _session(tmp_path, pacing_ms=20):
        yield made


async def _session(tmp_path: Path, *, pacing_ms: int) -> AsyncIterator[Session]:
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    async with DemoStack(pacing_ms=pacing_ms, transport=transport) as demo:
        made = Session(tmp_path, demo, transport)
        await made.conversation.start()
        yield made
        await made.capture.aclose()
        await made.client.aclose()


async def test_answers_typed_lines_and_a_compaction_become_the_scenario(
    session: Session, tmp_path: Path
) -> None:
    conversation = session.conversation
    session.answers[:] = [True]
    await conversation.send("create a sandbox named scratch running echo hi")
    typed = iter([["and list my sandboxes too"]])
    await conversation.send("why is gpu-trainer failing?", steering=lambda: next(typed, []))
    assert await conversation.compact()
    await conversation.send("list my sandboxes")
    conversation.record_as("captured")
    result = await conversation.close()
    assert isinstance(result, ExportResult), result
    assert result.replay.passed and result.turns == 3

    data = yaml.safe_load(result.scenario.read_text("utf-8"))
    first, second, third = data["turns"]
    assert first["confirm"] == [True]
    assert first["expect"]["tools"][0] | {"arguments": None} == {
        "name": "sandbox_create",
        "arguments": None,
        "match": "exact",
        "status": "ok",
    }
    assert second["steer"] == [{"before_call": 2, "text": "and list my sandboxes too"}]
    assert third.get("compact") is True and "compact" not in second
    assert "confirmation" not in data["options"]  # ask, the default: the answers are listed

    # What the export replayed is what CI replays: a changed answer fails it.
    scenario = result.scenario.read_text("utf-8")
    result.scenario.write_text(scenario.replace("confirm:\n  - true", "confirm:\n  - false"))
    from navagent.fixtures.harness import load_scenario, replay_scenario

    replay = await replay_scenario(
        load_scenario(result.scenario), "openai", cassette_dir=tmp_path / "cassettes"
    )
    assert not replay.passed


def _cancel_on(session: Session, when: Callable[[AgentEvent], bool]) -> list[str]:
    """Ctrl-C at the first event `when` accepts; returns the answer text shown meanwhile."""
    shown: list[str] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            shown.append(event.text)
        if when(event) and session.turn is not None and not session.turn.cancelling():
            session.turn.cancel()

    session.on_event = on_event
    return shown


async def _send_cancelled(session: Session, text: str) -> None:
    session.turn = asyncio.create_task(session.conversation.send(text))
    with pytest.raises(asyncio.CancelledError):
        await session.turn
    session.on_event = lambda _event: None


async def test_a_turn_cancelled_while_its_tools_ran_is_kept_but_cannot_become_a_scenario(
    session: Session,
) -> None:
    conversation = session.conversation
    await conversation.send("list my sandboxes")
    _cancel_on(session, lambda event: isinstance(event, ToolStarted))
    await _send_cancelled(session, "why is gpu-trainer failing? show its logs")
    conversation.record_as("cancelled")
    result = await conversation.close()
    assert isinstance(result, ExportError)
    assert "was cancelled before any answer text was shown or while its tools ran" in str(result)
    assert session.capture.folder is None  # ended; the capture itself is kept on disk


async def test_a_turn_cancelled_mid_answer_becomes_a_cancel_step(paced: Session) -> None:
    """Ctrl-C after the second piece of the answer: `cancel: {after_chars: N}`, replayed."""
    session = paced
    conversation = session.conversation
    pieces = 0

    def second_piece(event: AgentEvent) -> bool:
        nonlocal pieces
        pieces += isinstance(event, TextDelta) and bool(event.text)
        return pieces >= 2

    shown = _cancel_on(session, second_piece)
    await _send_cancelled(session, "what can you do?")
    kept = conversation.agent.history[-1]  # the next request carries it: the replay checks
    assert kept == AssistantMessage(content="".join(shown) + INTERRUPTED_MARK)
    await conversation.send("list my sandboxes")
    conversation.record_as("cancelled")
    result = await conversation.close()
    assert isinstance(result, ExportResult), result
    assert result.replay.passed, result.replay.report
    first, second = yaml.safe_load(result.scenario.read_text("utf-8"))["turns"]
    assert first["cancel"] == {"after_chars": len("".join(shown))}
    assert first["expect"]["finish"] == "cancelled" and "cancel" not in second


async def test_a_retry_becomes_a_retry_step(session: Session) -> None:
    conversation = session.conversation
    await conversation.send("show me dev-box")
    assert conversation.undo_last_turn() == "show me dev-box"
    await conversation.send("show me dev-box")  # what the REPL sends after /retry
    conversation.record_as("retried")
    result = await conversation.close()
    assert isinstance(result, ExportResult), result
    assert result.replay.passed, result.replay.report
    first, second = yaml.safe_load(result.scenario.read_text("utf-8"))["turns"]
    assert first["user"] == second["user"] == "show me dev-box"
    assert second["retry"] is True and "retry" not in first


async def test_recording_without_the_gateway_in_process_is_refused(tmp_path: Path) -> None:
    conversation = AgentSession(lambda _h, _r: None, store=None, cluster="demo")  # type: ignore[arg-type,return-value]
    with pytest.raises(ExportError, match="needs the gateway in this process"):
        conversation.record_as("x")


def on_disk(folder: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in folder.iterdir() if path.is_file()}


# Issue 27, section 4: every byte of every file counts, and the provider file is appended to.
async def test_a_capture_stops_at_its_limit_on_disk_and_says_so(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 250_000
    monkeypatch.setattr(capture_module, "CAPTURE_LIMIT_BYTES", limit)
    conversation = session.conversation
    await conversation.send("list my sandboxes")
    folder = session.capture.folder
    assert folder is not None
    provider = folder / "provider.yaml"
    first, inode = provider.read_text("utf-8"), provider.stat().st_ino
    await conversation.send("why is gpu-trainer failing? show its logs")
    assert provider.read_text("utf-8").startswith(first), "earlier turns are not rewritten"
    assert provider.stat().st_ino == inode
    problem = "grew past 250,000 bytes of provider and tool output"
    for _ in range(30):  # each request carries the whole conversation: it fills up fast
        meta, _turns = capture_module.read_capture(folder)
        if any(problem in p for p in meta.problems):
            break
        await conversation.send("show the logs of gpu-trainer and of dev-box")
    else:
        pytest.fail(f"the capture never filled: {on_disk(folder)}")
    full = on_disk(folder)
    data = sum(size for name, size in full.items() if name != "meta.json")
    assert data <= limit, full
    assert data + full["meta.json"] <= limit + 1_024, full  # meta.json says why it stopped
    _meta, kept_turns = capture_module.read_capture(folder)
    assert len(kept_turns) >= 2, "a turn that fits is kept"
    assert meta.bytes <= sum(full.values()) and sum(full.values()) - meta.bytes < 1_024
    await conversation.send("list my sandboxes")
    assert {k: v for k, v in on_disk(folder).items() if k != "meta.json"} == {
        k: v for k, v in full.items() if k != "meta.json"
    }, "nothing more is kept"
    conversation.record_as("too-big")
    result = await conversation.close()
    assert isinstance(result, ExportError)
    assert problem in str(result)


async def test_a_tool_output_that_does_not_fit_is_not_written_and_stops_the_capture(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from navagent.core._process import CapturedOutput, ProcessResult

    monkeypatch.setattr(capture_module, "CAPTURE_LIMIT_BYTES", 200_000)
    real = session.capture._execute

    async def loud(argv, **options) -> ProcessResult:
        result = await real(argv, **options)
        return dataclasses.replace(result, stdout=CapturedOutput(head=b"log line\n" * 25_000))

    session.capture._execute = loud  # the wrapped executor: every command prints 250 kB
    await session.conversation.send("show the logs of gpu-trainer")
    folder = session.capture.folder
    assert folder is not None
    await session.capture.end()
    sizes = on_disk(folder)
    assert sum(size for name, size in sizes.items() if name != "meta.json") <= 200_000, sizes
    assert not (folder / "tools.jsonl").exists(), "the 250 kB command was not kept"
    meta, _turns = capture_module.read_capture(folder)
    assert any("grew past 200,000 bytes" in problem for problem in meta.problems)


async def test_an_appended_provider_file_holds_every_interaction_of_every_turn(
    session: Session,
) -> None:
    from navagent.fixtures.harness.cassettes import _serializer

    conversation = session.conversation
    said = ["list my sandboxes", "why is gpu-trainer failing?", "what runs on dev-box?"]
    for message in said:
        await conversation.send(message)
    folder = session.capture.folder
    assert folder is not None
    await session.capture.end()
    text = (folder / "provider.yaml").read_text("utf-8")
    assert text.count("\ninteractions:") == 1 and "\n...\n" not in text
    users = []
    for interaction in _serializer.deserialize(text)["interactions"]:
        body = json.loads(interaction["request"]["body"])
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if last not in users:
            users.append(last)
    assert users == said


# Issue 27, section 4: `twin.yml` and `twin.yaml` are one scenario id.
@pytest.mark.parametrize("taken", ["twin.yml", "twin.yaml", "dangling-link"])
def test_a_name_taken_by_any_scenario_file_of_that_id_is_refused(
    tmp_path: Path, taken: str
) -> None:
    from navagent.fixtures.harness import check_export_target

    folder = tmp_path / "scenarios"
    folder.mkdir()
    if taken == "dangling-link":
        (folder / "twin.yml").symlink_to(tmp_path / "nowhere.yaml")
    else:
        (folder / taken).write_text("id: twin\n", "utf-8")
    with pytest.raises(ExportError, match=r"twin\.ya?ml already exists \(scenario 'twin'\)"):
        check_export_target("twin", folder)
    assert check_export_target("other", folder) == folder / "other.yaml"


async def test_a_scenario_of_the_same_id_written_meanwhile_stops_the_export(
    session: Session, tmp_path: Path
) -> None:
    conversation = session.conversation
    conversation.record_as("twin")
    await conversation.send("list my sandboxes")
    (tmp_path / "scenarios").mkdir(exist_ok=True)
    (tmp_path / "scenarios" / "twin.yml").write_text("id: twin\n", "utf-8")
    result = await conversation.close()
    assert isinstance(result, ExportError)
    assert "twin.yml already exists (scenario 'twin')" in str(result)
    assert sorted(p.name for p in (tmp_path / "scenarios").iterdir()) == ["twin.yml"]
    assert not list(tmp_path.glob("cassettes/**/twin.*"))


async def test_a_capture_counts_the_requests_it_keeps(session: Session) -> None:
    # Issue 32: each request holds the whole conversation; a limit that counted
    # only responses let a long session's capture grow with the square of its turns.
    conversation = session.conversation
    await conversation.send("list my sandboxes")
    await conversation.send("why is gpu-trainer failing? show its logs")
    folder = session.capture.folder
    assert folder is not None
    kept = yaml.safe_load((folder / "provider.yaml").read_text(encoding="utf-8"))
    requests = sum(  # at least this many bytes: the bodies as sent were not more compact
        len(
            json.dumps(
                item["request"]["parsed_body"], separators=(",", ":"), ensure_ascii=False
            ).encode()
        )
        for item in kept["interactions"]
    )
    responses = sum(
        len((item["response"]["body"]["string"] or "").encode()) for item in kept["interactions"]
    )
    meta = yaml.safe_load((folder / "meta.json").read_text(encoding="utf-8"))
    assert requests > 0 and meta["bytes"] >= requests + responses


async def test_an_exported_cassette_keeps_what_the_agent_reported_at_each_turn(
    session: Session, tmp_path: Path
) -> None:
    conversation = session.conversation
    await conversation.send("show the last 3 lines of the logs of dev-box and py-worker")
    await conversation.send("list my sandboxes")
    conversation.record_as("exported-turns")
    result = await conversation.close()
    assert isinstance(result, ExportResult), result
    assert result.replay.transcript is not None

    turns = load_cassette(result.provider_cassette).turns

    # The usage and the tool order replays are held to (issue 42), as the live agent saw them.
    assert turns is not None and len(turns) == 2
    assert turns[0].ran == (
        (
            'sandbox_logs {"lines": 3, "name": "dev-box"}',
            'sandbox_logs {"lines": 3, "name": "py-worker"}',
        ),
    )
    assert turns[1].ran == (("sandbox_list",),)
    assert [turn.usage for turn in turns] == [turn.usage for turn in result.replay.transcript.turns]
    assert turns[0].usage.input_tokens > 0
    again = await replay_scenario(
        load_scenario(result.scenario), "openai", cassette_dir=tmp_path / "cassettes"
    )
    assert again.passed, again.report
