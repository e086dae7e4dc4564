"""The tool-calling loop, driven by a scripted chat client and a fake tool runner.

These are unit tests rather than replay tests because they pin failure paths
(cancels mid-stream and mid-tool, errors, the iteration limit) that a recorded
provider conversation cannot produce on demand.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from navagent.core.agent import (
    CANCELLED_RESULT,
    CUT_AT_LIMIT_NOTE,
    FILTERED_NOTE,
    INTERRUPTED_MARK,
    PAUSED_NOTE,
    REFUSED_NOTE,
    Agent,
    AgentBusyError,
)
from navagent.core.agent_events import (
    AgentNotice,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from navagent.core.errors import ChatFailedError
from navagent.core.events import (
    FinishReason,
    MessageComplete,
    RefusalDelta,
    StreamError,
    TextDelta,
    ToolCallStart,
    TurnEnd,
    Usage,
)
from navagent.core.history import InvalidHistoryError, validate_history
from navagent.core.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.redaction import REDACTED
from tests.core.fakes import (
    SYSTEM_PROMPT,
    TOOLS,
    EventLog,
    FakeToolRunner,
    ScriptedChatClient,
    ScriptItem,
    Stall,
    call,
    error_completion,
    text_completion,
    tool_completion,
)


def make_agent(
    client: ScriptedChatClient,
    runner: FakeToolRunner | None = None,
    sink: EventLog | None = None,
    **options: Any,
) -> Agent:
    return Agent(
        client,
        runner or FakeToolRunner(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        sink=sink if sink is not None else EventLog(),
        **options,
    )


def assert_request_valid(request: ChatRequest) -> None:
    """What providers need: our system prompt first, a valid tool-call history."""
    assert request.messages[0] == SystemMessage(content=SYSTEM_PROMPT)
    validate_history(request.messages)
    assert request.tools == TOOLS


async def wait_for(predicate: Any, timeout: float = 2.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


async def test_agent_text_only_turn() -> None:
    client = ScriptedChatClient([text_completion("There are 2 sandboxes.")])
    sink = EventLog()
    agent = make_agent(client, sink=sink, routing_hint="ops", max_tokens=512)

    finished = await agent.run_turn("how many sandboxes?")

    assert finished == TurnFinished(reason="answered", iterations=1)
    assert agent.history == (
        UserMessage(content="how many sandboxes?"),
        AssistantMessage(content="There are 2 sandboxes."),
    )
    (request,) = client.requests
    assert request.messages == (
        SystemMessage(content=SYSTEM_PROMPT),
        UserMessage(content="how many sandboxes?"),
    )
    assert (request.routing_hint, request.max_tokens, request.tools) == ("ops", 512, TOOLS)
    # Every stream event reaches the sink as it arrived, then the turn's end.
    assert sink.kinds() == [
        "turn_started",
        "text_delta",
        "text_delta",
        "turn_end",
        "message",
        "turn_finished",
    ]
    assert sink[0] == TurnStarted(text="how many sandboxes?")
    assert "".join(e.text for e in sink if isinstance(e, TextDelta)) == "There are 2 sandboxes."


async def test_agent_tool_round_trip() -> None:
    list_call = call("c1", "sandbox_list")
    client = ScriptedChatClient(
        [tool_completion(list_call, text="Let me look."), text_completion("You have one.")]
    )
    sink = EventLog()
    runner = FakeToolRunner()
    agent = make_agent(client, runner, sink)

    finished = await agent.run_turn("list my sandboxes")

    assert finished.reason == "answered" and finished.iterations == 2
    result = ToolResultMessage(tool_call_id="c1", content="sandbox_list {} -> ok (c1)")
    assert agent.history == (
        UserMessage(content="list my sandboxes"),
        AssistantMessage(content="Let me look.", tool_calls=(list_call,)),
        result,
        AssistantMessage(content="You have one."),
    )
    second = client.requests[1]
    assert second.messages[-1] == result
    assert_request_valid(second)
    started = sink.index(ToolStarted(index=0, call=list_call))
    (done,) = sink.of("tool_finished")
    assert isinstance(done, ToolFinished) and done.outcome.status == "ok"
    assert sink.index(client_message(sink, 0)) < started < sink.index(done)


def client_message(sink: EventLog, n: int) -> MessageComplete:
    messages = [event for event in sink if isinstance(event, MessageComplete)]
    return messages[n]


async def test_agent_parallel_calls_finish_out_of_order_results_in_call_order() -> None:
    slow, fast = call("slow", "sandbox_logs", name="a"), call("fast", "sandbox_list")
    client = ScriptedChatClient([tool_completion(slow, fast), text_completion("done")])
    runner = FakeToolRunner(delays={"slow": 0.05})
    sink = EventLog()
    agent = make_agent(client, runner, sink)

    await agent.run_turn("go")

    assert runner.finished == ["fast", "slow"]
    assert runner.max_running == 2, "the calls must run concurrently"
    results = [m for m in agent.history if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["slow", "fast"]
    # Started in call order before anything finished; finished as they ended.
    tool_events = [e for e in sink if isinstance(e, ToolStarted | ToolFinished)]
    assert [(e.kind, e.index) for e in tool_events] == [
        ("tool_started", 0),
        ("tool_started", 1),
        ("tool_finished", 1),
        ("tool_finished", 0),
    ]
    assert_request_valid(client.requests[1])


async def test_agent_iteration_limit_ends_turn_with_valid_history() -> None:
    client = ScriptedChatClient([tool_completion(call(f"c{i}")) for i in range(3)])
    sink = EventLog()
    agent = make_agent(client, sink=sink, max_iterations=3)

    finished = await agent.run_turn("loop forever")

    assert finished.reason == "iteration_limit"
    assert "stopped after 3 model calls" in finished.message
    assert sink[-1] == finished
    assert len(client.requests) == 3
    validate_history(agent.history)
    assert isinstance(agent.history[-1], ToolResultMessage)

    client.add(text_completion("ok, stopping"))
    await agent.run_turn("stop")
    assert_request_valid(client.requests[-1])
    assert client.requests[-1].messages[-1] == UserMessage(content="stop")


async def test_agent_empty_completion_is_not_appended() -> None:
    empty = [MessageComplete(message=AssistantMessage())]
    client = ScriptedChatClient([tool_completion(call("c1")), empty])
    agent = make_agent(client)

    finished = await agent.run_turn("hi")

    assert finished.reason == "answered"
    assert finished.message == "the model returned an empty answer"
    assert [m.role for m in agent.history] == ["user", "assistant", "tool"]
    assert not any(isinstance(m, AssistantMessage) and m.is_empty for m in agent.history)


async def test_agent_stream_error_ends_turn_and_next_turn_is_valid() -> None:
    client = ScriptedChatClient(
        [error_completion("the provider is overloaded", text="half an ans")]
    )
    sink = EventLog()
    agent = make_agent(client, sink=sink)

    with pytest.raises(ChatFailedError) as failure:
        await agent.run_turn("first")

    assert failure.value.error.message == "the provider is overloaded"
    assert sink.kinds()[-2:] == ["error", "turn_finished"]
    assert sink[-1] == TurnFinished(
        reason="error",
        message="the provider is overloaded",
        iterations=1,
        error=failure.value.error,
        partial=True,  # "half an ans" was shown: the turn's end says it is not kept
    )
    # Nothing half-done is kept: the partial text is gone, the user message stays.
    assert agent.history == (UserMessage(content="first"),)

    client.add(error_completion("the provider is overloaded"))
    with pytest.raises(ChatFailedError):
        await agent.run_turn("again")
    last = sink[-1]
    assert isinstance(last, TurnFinished)
    assert last.partial is False  # nothing was shown
    agent.undo_last_turn()

    client.add(text_completion("hello"))
    await agent.run_turn("second")
    assert client.requests[-1].messages == (
        SystemMessage(content=SYSTEM_PROMPT),
        UserMessage(content="first"),
        UserMessage(content="second"),
    )
    assert_request_valid(client.requests[-1])


async def test_agent_stream_error_after_tools_keeps_answered_calls() -> None:
    client = ScriptedChatClient([tool_completion(call("c1")), error_completion()])
    agent = make_agent(client)

    with pytest.raises(ChatFailedError):
        await agent.run_turn("go")

    assert [m.role for m in agent.history] == ["user", "assistant", "tool"]
    client.add(text_completion("recovered"))
    await agent.run_turn("again")
    assert_request_valid(client.requests[-1])


async def test_agent_timeout_ends_turn_with_clear_message() -> None:
    message = "the gateway at 127.0.0.1:1 sent nothing for 60 s while waiting for the first event"
    client = ScriptedChatClient([error_completion(message, "timeout")])
    sink = EventLog()
    agent = make_agent(client, sink=sink)

    with pytest.raises(ChatFailedError):
        await agent.run_turn("hi")

    finished = sink[-1]
    assert isinstance(finished, TurnFinished)
    assert (finished.reason, finished.message) == ("timeout", message)
    assert agent.history == (UserMessage(content="hi"),)


async def test_agent_stream_without_terminal_event_is_an_error() -> None:
    client = ScriptedChatClient([[TextDelta(text="and then")]])
    agent = make_agent(client)

    with pytest.raises(ChatFailedError, match="ended without a final message"):
        await agent.run_turn("hi")
    assert agent.history == (UserMessage(content="hi"),)


async def test_agent_cancel_inside_a_credential_keeps_none_of_it() -> None:
    """Cut mid-key, the first half is masked: once saved, no redaction could tell it is one."""
    half_key = "ghp_" + "AbCd1234EfGh"
    client = ScriptedChatClient(
        [[TextDelta(text="Your token is "), TextDelta(text=half_key), Stall()]]
    )
    sink = EventLog()
    agent = make_agent(client, sink=sink)

    turn = asyncio.create_task(agent.run_turn("what is my token?"))
    await wait_for(lambda: len(sink.of("text_delta")) == 2)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    assert agent.history[-1] == AssistantMessage(
        content="Your token is " + REDACTED + INTERRUPTED_MARK
    )


async def test_agent_cancel_while_streaming_keeps_partial_text_marked() -> None:
    client = ScriptedChatClient(
        [[TextDelta(text="Checking the "), TextDelta(text="cluster"), Stall()]]
    )
    sink = EventLog()
    agent = make_agent(client, sink=sink)

    turn = asyncio.create_task(agent.run_turn("status?"))
    await wait_for(lambda: len(sink.of("text_delta")) == 2)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    assert client.interrupted == 1, "the stream must be closed when the turn is cancelled"
    assert agent.history == (
        UserMessage(content="status?"),
        AssistantMessage(content="Checking the cluster" + INTERRUPTED_MARK),
    )
    assert sink[-1] == TurnFinished(reason="cancelled", message="turn cancelled", iterations=1)

    client.add(text_completion("fine"))
    await agent.run_turn("go on")
    assert_request_valid(client.requests[-1])


async def test_agent_cancel_while_streaming_drops_partial_tool_calls() -> None:
    client = ScriptedChatClient([[ToolCallStart(index=0, id="c1", name="sandbox_list"), Stall()]])
    sink = EventLog()
    agent = make_agent(client, sink=sink)

    turn = asyncio.create_task(agent.run_turn("list"))
    await wait_for(lambda: sink.of("tool_call_start"))
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    # No text streamed, so there is nothing worth keeping; no call survives.
    assert agent.history == (UserMessage(content="list"),)


async def test_agent_cancel_while_tools_run_answers_every_call() -> None:
    fast, stuck = call("fast"), call("stuck", "sandbox_logs", name="web")
    client = ScriptedChatClient([tool_completion(fast, stuck)])
    runner = FakeToolRunner(hang={"stuck"})
    sink = EventLog()
    agent = make_agent(client, runner, sink)

    turn = asyncio.create_task(agent.run_turn("logs please"))
    await wait_for(lambda: runner.finished == ["fast"] and "stuck" in runner.started)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    assert runner.cancelled == ["stuck"], "the running tool task must be cancelled"
    assert runner.running == 0
    assert agent.history[-2:] == (
        ToolResultMessage(tool_call_id="fast", content="sandbox_list {} -> ok (fast)"),
        ToolResultMessage(tool_call_id="stuck", content=CANCELLED_RESULT),
    )
    validate_history(agent.history)
    finished = [e for e in sink if isinstance(e, ToolFinished)]
    assert [(e.index, e.outcome.status) for e in finished] == [(0, "ok"), (1, "cancelled")]
    assert sink[-1].kind == "turn_finished"

    client.add(text_completion("cancelled, as you asked"))
    await agent.run_turn("never mind")
    assert_request_valid(client.requests[-1])


async def test_agent_runner_exception_becomes_a_failed_result() -> None:
    client = ScriptedChatClient(
        [tool_completion(call("bad"), call("good")), text_completion("one failed")]
    )
    runner = FakeToolRunner(explode={"bad"}, delays={"good": 0.01})
    agent = make_agent(client, runner)

    await agent.run_turn("go")

    assert runner.finished == ["good"], "a failing call must not cancel its siblings"
    bad_result = agent.history[2]
    assert isinstance(bad_result, ToolResultMessage)
    assert bad_result.content == "the tool runner failed: RuntimeError: runner bug on bad"
    assert_request_valid(client.requests[1])


async def test_agent_refuses_a_second_concurrent_turn() -> None:
    client = ScriptedChatClient([[Stall()]])
    agent = make_agent(client)
    turn = asyncio.create_task(agent.run_turn("one"))
    await wait_for(lambda: client.requests)

    with pytest.raises(AgentBusyError):
        await agent.run_turn("two")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert agent.history == (UserMessage(content="one"),)


def test_agent_rejects_an_invalid_history() -> None:
    broken: list[Message] = [
        UserMessage(content="x"),
        ToolResultMessage(tool_call_id="c", content=""),
    ]
    with pytest.raises(InvalidHistoryError):
        make_agent(ScriptedChatClient(), history=broken)


def test_agent_history_is_read_only() -> None:
    agent = make_agent(ScriptedChatClient(), history=[UserMessage(content="x")])
    assert isinstance(agent.history, tuple)
    with pytest.raises(AttributeError):
        agent.history = ()  # type: ignore[misc]


class ListRecorder:
    def __init__(self, client: ScriptedChatClient, fail_after: int | None = None) -> None:
        self.client = client
        self.messages: list[Message] = []
        self.usages: list[Usage | None] = []
        self.requests_seen: list[int] = []
        self.fail_after = fail_after

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        if self.fail_after is not None and len(self.messages) >= self.fail_after:
            raise OSError("disk full")
        self.messages.append(message)
        self.usages.append(usage)
        self.requests_seen.append(len(self.client.requests))

    def record_compaction(self, summary: str, kept: tuple[Message, ...]) -> None:
        raise AssertionError("not expected")

    def record_rewind(self, messages: int) -> None:
        raise AssertionError("not expected")


async def test_agent_records_each_message_as_it_happens() -> None:
    slow, fast = call("slow"), call("fast")
    client = ScriptedChatClient([tool_completion(slow, fast), text_completion("done")])
    recorder = ListRecorder(client)
    agent = make_agent(client, FakeToolRunner(delays={"slow": 0.03}), recorder=recorder)

    await agent.run_turn("go")

    # The user message is saved before the completion is requested; results as
    # each tool ends (fast first), while the history keeps call order.
    assert recorder.requests_seen[0] == 0
    assert [getattr(m, "tool_call_id", m.role) for m in recorder.messages] == [
        "user",
        "assistant",
        "fast",
        "slow",
        "assistant",
    ]
    assert sorted(recorder.messages, key=repr) == sorted(agent.history, key=repr)


async def test_agent_recorder_failure_is_reported_and_turn_goes_on() -> None:
    client = ScriptedChatClient([text_completion("still here")])
    sink = EventLog()
    recorder = ListRecorder(client, fail_after=1)
    agent = make_agent(client, sink=sink, recorder=recorder)

    finished = await agent.run_turn("hi")

    assert finished.reason == "answered"
    (notice,) = sink.of("notice")
    assert isinstance(notice, AgentNotice) and notice.level == "error"
    assert "disk full" in notice.text
    assert len(agent.history) == 2 and len(recorder.messages) == 1


async def test_agent_sink_sees_stream_error_event() -> None:
    client = ScriptedChatClient([error_completion("nope", "auth")])
    sink = EventLog()
    with pytest.raises(ChatFailedError):
        await make_agent(client, sink=sink).run_turn("hi")
    errors = [e for e in sink if isinstance(e, StreamError)]
    assert [e.error.code for e in errors] == ["auth"]


async def test_agent_records_each_completions_usage_with_its_message() -> None:
    spent = Usage(input_tokens=1200, cache_read_tokens=1024, output_tokens=9)
    script: list[ScriptItem] = [
        TextDelta(text="ok"),
        TurnEnd(finish_reason="stop", usage=spent),
        MessageComplete(message=AssistantMessage(content="ok")),
    ]
    client = ScriptedChatClient([script])
    recorder = ListRecorder(client)
    agent = make_agent(client, recorder=recorder)

    await agent.run_turn("go")

    assert [m.role for m in recorder.messages] == ["user", "assistant"]
    assert recorder.usages == [None, spent]


async def test_agent_refusal_ends_the_turn_as_refused_and_keeps_it_apart() -> None:
    refusal = "I can't help with that."
    script: list[ScriptItem] = [
        RefusalDelta(text=refusal),
        TurnEnd(finish_reason="refusal", provider_finish_reason="stop"),
        MessageComplete(message=AssistantMessage(refusal=refusal)),
    ]
    client = ScriptedChatClient([script, text_completion("Sure.")])
    sink = EventLog()
    agent = make_agent(client, sink=sink)

    finished = await agent.run_turn("do something bad")

    assert finished == TurnFinished(reason="refused", message=REFUSED_NOTE, iterations=1)
    assert agent.history[-1] == AssistantMessage(refusal=refusal)
    assert "refusal_delta" in sink.kinds()
    # The refusal is part of the history the next request sends.
    await agent.run_turn("something else then")
    assert client.requests[1].messages[-2] == AssistantMessage(refusal=refusal)


async def test_agent_anthropic_style_refusal_without_text_is_refused() -> None:
    script: list[ScriptItem] = [
        TextDelta(text="Let me"),
        TurnEnd(finish_reason="refusal", provider_finish_reason="refusal"),
        MessageComplete(message=AssistantMessage(content="Let me")),
    ]
    agent = make_agent(ScriptedChatClient([script]))

    finished = await agent.run_turn("go")

    assert finished.reason == "refused"
    assert agent.history[-1] == AssistantMessage(content="Let me")


async def test_agent_pause_turn_ends_the_turn_with_a_notice() -> None:
    script: list[ScriptItem] = [
        TextDelta(text="Searching"),
        TurnEnd(finish_reason="pause_turn", provider_finish_reason="pause_turn"),
        MessageComplete(message=AssistantMessage(content="Searching")),
    ]
    agent = make_agent(ScriptedChatClient([script]))

    finished = await agent.run_turn("go")

    assert finished == TurnFinished(reason="paused", message=PAUSED_NOTE, iterations=1)
    assert "pause_turn" in finished.message
    validate_history(agent.history)


@pytest.mark.parametrize(
    ("finish", "note"),
    [("length", CUT_AT_LIMIT_NOTE), ("content_filter", FILTERED_NOTE), ("stop", "")],
)
async def test_agent_says_when_an_answer_was_cut_at_the_limit_or_filtered(
    finish: FinishReason, note: str
) -> None:
    script: list[ScriptItem] = [
        TextDelta(text="The sandboxes are"),
        TurnEnd(finish_reason=finish, provider_finish_reason=finish),
        MessageComplete(message=AssistantMessage(content="The sandboxes are")),
    ]
    agent = make_agent(ScriptedChatClient([script]))

    finished = await agent.run_turn("list them")

    # The text that came is kept and the turn is answered; the note says why it may be short.
    assert finished == TurnFinished(reason="answered", message=note, iterations=1)
    assert agent.history[-1] == AssistantMessage(content="The sandboxes are")
