"""Tool order and steering: calls that change the cluster are barriers, and lines
the user queued mid-turn reach the model at the next completion of that turn."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from navagent.core.agent import BARRIER_TOOLS, Agent, call_batches
from navagent.core.agent_events import ToolFinished, ToolStarted
from navagent.core.history import validate_history
from navagent.core.messages import ToolCall, ToolResultMessage, UserMessage
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    EventLog,
    FakeToolRunner,
    ScriptedChatClient,
    call,
    text_completion,
    tool_completion,
)


def make_agent(client: ScriptedChatClient, runner: FakeToolRunner, sink: EventLog) -> Agent:
    return Agent(client, runner, system_prompt=SYSTEM_PROMPT, tools=TOOLS, sink=sink)


def test_barrier_tools_are_the_ones_that_change_the_cluster() -> None:
    assert BARRIER_TOOLS == {"sandbox_create", "sandbox_delete"}


async def test_create_then_logs_in_one_response_run_in_order() -> None:
    create = call("c", "sandbox_create", name="web-2", command="echo hi")
    logs = call("l", "sandbox_logs", name="web-2")
    client = ScriptedChatClient([tool_completion(create, logs), text_completion("done")])
    runner = FakeToolRunner(delays={"c": 0.05})
    sink = EventLog()

    await make_agent(client, runner, sink).run_turn("create web-2 and show its logs")

    assert runner.started == ["c", "l"] and runner.finished == ["c", "l"]
    assert runner.max_running == 1, "the logs call must wait for the create"
    events = [(e.kind, e.index) for e in sink if isinstance(e, ToolStarted | ToolFinished)]
    assert events == [
        ("tool_started", 0),
        ("tool_finished", 0),
        ("tool_started", 1),
        ("tool_finished", 1),
    ]


async def test_reads_around_a_barrier_stay_concurrent_but_never_overlap_it() -> None:
    calls = (
        call("r1", "sandbox_list"),
        call("r2", "sandbox_logs", name="a"),
        call("d", "sandbox_delete", name="a"),
        call("r3", "sandbox_list"),
        call("r4", "sandbox_logs", name="b"),
    )
    client = ScriptedChatClient([tool_completion(*calls), text_completion("ok")])
    runner = FakeToolRunner(delays={"r1": 0.03, "d": 0.03})
    sink = EventLog()
    agent = make_agent(client, runner, sink)

    await agent.run_turn("go")

    # r2 finished before r1 (concurrent); d started only after both; r3, r4 after d.
    assert runner.finished[:2] == ["r2", "r1"]
    assert runner.started.index("d") == 2 and runner.finished.index("d") == 2
    assert set(runner.started[3:]) == {"r3", "r4"}
    assert runner.max_running == 2
    results = [m.tool_call_id for m in agent.history if isinstance(m, ToolResultMessage)]
    assert results == ["r1", "r2", "d", "r3", "r4"]
    validate_history(agent.history)


async def test_cancel_during_a_barrier_answers_the_calls_not_yet_started() -> None:
    create = call("c", "sandbox_create", name="x")
    logs = call("l", "sandbox_logs", name="x")
    client = ScriptedChatClient([tool_completion(create, logs)])
    runner = FakeToolRunner(hang={"c"})
    sink = EventLog()
    agent = make_agent(client, runner, sink)

    turn = asyncio.create_task(agent.run_turn("go"))
    async with asyncio.timeout(2):
        while "c" not in runner.started:
            await asyncio.sleep(0.005)
    turn.cancel()
    try:
        await turn
    except asyncio.CancelledError:
        pass

    assert runner.started == ["c"], "the logs call never started"
    validate_history(agent.history)
    statuses = [e.outcome.status for e in sink if isinstance(e, ToolFinished)]
    assert statuses == ["cancelled", "cancelled"]


names = st.sampled_from(["sandbox_list", "sandbox_logs", "sandbox_create", "sandbox_delete"])


@given(st.lists(names, max_size=8))
def test_call_batches_keep_order_and_isolate_barriers(tools: list[str]) -> None:
    calls = [ToolCall(id=str(i), name=name, arguments="{}") for i, name in enumerate(tools)]
    batches = call_batches(calls)
    assert [i for batch in batches for i in batch] == list(range(len(calls)))
    for batch in batches:
        if any(calls[i].name in BARRIER_TOOLS for i in batch):
            assert len(batch) == 1
    for first, second in zip(batches, batches[1:], strict=False):
        # Two read batches in a row would have been one.
        assert calls[first[0]].name in BARRIER_TOOLS or calls[second[0]].name in BARRIER_TOOLS


async def test_steering_lines_join_the_turn_after_the_tool_round() -> None:
    client = ScriptedChatClient(
        [tool_completion(call("c1")), text_completion("ok, only web")],
    )
    runner = FakeToolRunner(delays={"c1": 0.02})
    queued: list[str] = []
    agent = make_agent(client, runner, EventLog())

    def steering() -> list[str]:
        taken = queued[:]
        queued.clear()
        return taken

    turn = asyncio.create_task(agent.run_turn("list sandboxes", steering=steering))
    async with asyncio.timeout(2):
        while not runner.started:  # typed while the tool runs
            await asyncio.sleep(0.001)
    queued.append("only the web ones please")
    await turn

    second = client.requests[1]
    assert second.messages[-2:] == (
        ToolResultMessage(tool_call_id="c1", content="sandbox_list {} -> ok (c1)"),
        UserMessage(content="only the web ones please"),
    )
    assert queued == []
    validate_history(agent.history)


async def test_steering_is_not_asked_before_the_first_completion() -> None:
    asked: list[int] = []
    client = ScriptedChatClient([text_completion("hi")])
    agent = make_agent(client, FakeToolRunner(), EventLog())

    def steering() -> list[str]:
        asked.append(1)
        return []

    await agent.run_turn("hello", steering=steering)

    assert asked == [], "a one-completion turn has no later model call to steer"
