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
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import pytest
import yaml

from navagent.cli.conversation import AgentSession, RecordTarget
from navagent.cli.demo import DemoStack
from navagent.core.agent import Agent, ConversationRecorder
from navagent.core.chat_client import GrpcChatClient
from navagent.core.messages import Message, ToolCall
from navagent.core.nav_cli import NavToolRunner
from navagent.core.prompts import default_system_prompt
from navagent.core.sessions import SessionStore
from navagent.core.tools import TOOLS
from navagent.fixtures.harness import CassetteTransport, ExportError, ExportResult, SessionCapture
from navagent.fixtures.harness import _capture as capture_module
from navagent.gateway._network import upstream_transport


class Session:
    """A captured demo conversation, as `nav agent --demo` builds it."""

    def __init__(self, tmp_path: Path, demo: DemoStack, transport: CassetteTransport) -> None:
        self.answers: list[bool] = []
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
                sink=self.capture.sink(lambda _event: None),
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
    transport = CassetteTransport(upstream_transport(httpx.Limits()))
    async with DemoStack(pacing_ms=0, transport=transport) as demo:
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


async def test_a_cancelled_turn_is_kept_but_cannot_become_a_scenario(session: Session) -> None:
    conversation = session.conversation
    await conversation.send("list my sandboxes")
    turn = asyncio.create_task(conversation.send("why is gpu-trainer failing? show its logs"))
    await asyncio.sleep(0.05)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    conversation.record_as("cancelled")
    result = await conversation.close()
    assert isinstance(result, ExportError)
    assert "was cancelled mid-way, which a replay cannot repeat" in str(result)
    assert session.capture.folder is None  # ended; the capture itself is kept on disk


async def test_recording_without_the_gateway_in_process_is_refused(tmp_path: Path) -> None:
    conversation = AgentSession(lambda _h, _r: None, store=None, cluster="demo")  # type: ignore[arg-type,return-value]
    with pytest.raises(ExportError, match="needs the gateway in this process"):
        conversation.record_as("x")


async def test_a_capture_stops_growing_at_its_limit_and_says_so(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(capture_module, "CAPTURE_LIMIT_BYTES", 4_000)
    conversation = session.conversation
    await conversation.send("list my sandboxes")
    folder = session.capture.folder
    assert folder is not None
    size = (folder / "provider.yaml").stat().st_size
    await conversation.send("why is gpu-trainer failing? show its logs")
    assert (folder / "provider.yaml").stat().st_size == size, "nothing more is kept"
    conversation.record_as("too-big")
    result = await conversation.close()
    assert isinstance(result, ExportError)
    assert "grew past 4,000 bytes of provider traffic and tool output" in str(result)


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
