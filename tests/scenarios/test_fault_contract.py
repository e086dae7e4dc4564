"""The sweep's fault contract and the promises checked at every point (issue 42).

Each promise is shown failing on a planted defect of its class: a gateway
that stops retrying a 429, one that stops failing over, a stream slot never
given back, a session that saves less than the agent holds, text shown twice.
The first two passed the five invariants the sweep had before (shown here
with `BEFORE`): a clean error with a code was all they asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from navagent.core.agent_events import TurnFinished
from navagent.core.events import ChatError, MessageComplete, StreamError, TextDelta
from navagent.core.messages import AssistantMessage, UserMessage
from navagent.core.sessions import SessionRecorder
from navagent.fixtures.harness import load_scenario, plan_replays
from navagent.fixtures.harness.faults._fault_contract import (
    completion_numbers,
    error_event_name,
    promise,
)
from navagent.fixtures.harness.faults._invariants import (
    INVARIANTS,
    PointRun,
    StreamLog,
    fault_contract,
    released,
    session_drift,
    shown_once,
)
from navagent.fixtures.harness.faults._space import FaultPoint, parse_point
from navagent.fixtures.harness.faults._stream_lines import ServedBy
from navagent.fixtures.harness.scenarios._transcript import Transcript, TranscriptTurn, TurnError
from navagent.fixtures.harness.sweep._run import GridResult, SweepOptions, sweep_grid
from navagent.gateway import dispatch, upstream
from navagent.gateway._slots import WorkerSlots
from navagent.gateway.openai.stream import OpenAIStreamTranslator
from navagent.gateway.routes import RouteTable

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "create-confirmed-delete-declined.yaml"
BEFORE = (
    "one-outcome",
    "valid-history",
    "side-effects-once",
    "session-resumes",
    "usage-and-secrets",
)
"""The sweep's invariants before the fault contract."""


def _sweep(
    provider: str, *points: str, only: tuple[str, ...] = (), scenario: Path = SCENARIO
) -> GridResult:
    (job,) = plan_replays([load_scenario(scenario)], [provider])
    invariants = {name: check for name, check in INVARIANTS.items() if not only or name in only}
    options = SweepOptions(
        points=tuple(parse_point(point) for point in points), budget=100, invariants=invariants
    )
    return sweep_grid(job, options)


def _breaches(grid: GridResult) -> dict[str, str]:
    """Every breach of the grid (baseline included), joined by invariant name."""
    found: dict[str, str] = {}
    for result in grid.results:
        for name, text in result.breaches:
            found[name] = f"{found[name]}\n{text}" if name in found else text
    return found


def _no_429_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plants a defect: a 429 is never retried (the gateway goes straight to the next route)."""
    original = dispatch.Dispatcher._retry_delay

    def no_retry(self: dispatch.Dispatcher, failure: Any, attempt: int) -> float | None:
        if failure.error.code == "rate_limited":
            return None
        return original(self, failure, attempt)

    monkeypatch.setattr(dispatch.Dispatcher, "_retry_delay", no_retry)


def test_the_sweep_fails_a_gateway_that_stops_retrying_a_429(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _breaches(_sweep("openai", "http-429@request1")) == {}
    _no_429_retry(monkeypatch)
    assert _breaches(_sweep("openai", "http-429@request1", only=BEFORE)) == {}  # passed before
    found = _breaches(_sweep("openai", "http-429@request1"))
    assert set(found) == {"fault-contract", "backoff"}  # and it did not wait the retry-after
    assert "HTTP 429 is not retried" not in found["backoff"]
    assert "retry 1 waits the retry-after: 1 s" in found["backoff"]
    assert "must retry it on scenario-0#1" in found["fault-contract"]
    assert "answered by scenario-0#2" in found["fault-contract"]


def test_a_request_fault_on_a_retry_the_recording_made_leaves_its_answer_for_the_next_attempt() -> (
    None
):
    """Turn 2 of provider-reset-mid-stream is recorded as two attempts with the same bytes (a
    reset, then the answer). A 503 planted on the second stands in for it: the gateway's third
    attempt must get the recorded answer, as a provider would answer it, not the reset again
    (which made a gateway that retried as promised break the contract)."""
    reset = ROOT / "scenarios" / "provider-reset-mid-stream.yaml"
    assert _breaches(_sweep("openai", "http-503@request4", scenario=reset)) == {}


def test_the_sweep_fails_a_gateway_that_stops_failing_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _breaches(_sweep("gemini", "http-401@request1")) == {}
    original = RouteTable.candidates
    monkeypatch.setattr(RouteTable, "candidates", lambda self, hint: original(self, hint)[:1])
    assert _breaches(_sweep("gemini", "http-401@request1", only=BEFORE)) == {}  # passed before
    found = _breaches(_sweep("gemini", "http-401@request1"))
    assert set(found) == {"fault-contract"}
    assert "fails over at once to the hint's healthy second route" in found["fault-contract"]
    assert "turn 1 ended error/auth (fault-free: answered)" in found["fault-contract"]


def test_the_sweep_fails_a_translator_that_answers_with_a_cut_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Plants a defect: a Chat Completions body that ends before its finish reason
    # is taken as complete (the answer cut short, shown as a success).
    def complete(self: OpenAIStreamTranslator) -> list[Any]:
        return [] if self._done else self._complete()

    monkeypatch.setattr(OpenAIStreamTranslator, "finish", complete)
    assert _breaches(_sweep("openai", "no-finish@request2+1", only=BEFORE)) == {}  # passed before
    found = _breaches(_sweep("openai", "no-finish@request2+1"))
    assert "never ends as answered" in found["fault-contract"]
    assert "completion 2 (turn 1) ended as answered" in found["fault-contract"]


def test_the_sweep_fails_a_gateway_that_shows_text_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    # Plants a defect: every text delta goes to the client twice.
    def doubled(batch: list[Any]) -> list[Any]:
        return [copy for event in batch for copy in [event] * (1 + isinstance(event, TextDelta))]

    monkeypatch.setattr(upstream, "coalesce_deltas", doubled)
    found = _breaches(_sweep("anthropic", "http-500@request1"))
    assert "completion 1 showed \"I'llI'll create create" in found["shown-once"]
    assert "but its final message is \"I'll create sandbox web-2." in found["shown-once"]


def test_a_stream_slot_never_given_back_is_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WorkerSlots, "release", lambda self, counter=0: None)
    found = _breaches(_sweep("anthropic", "reset@request2+1"))
    assert "stream slot(s) of the gateway still held" in found["released"]


def test_a_session_that_saves_less_than_the_agent_holds_is_a_violation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = SessionRecorder.record_message

    def forgetful(self: SessionRecorder, message: Any, usage: Any = None) -> None:
        if not isinstance(message, AssistantMessage) or message.tool_calls:
            original(self, message, usage)  # answers without calls are lost

    monkeypatch.setattr(SessionRecorder, "record_message", forgetful)
    found = _breaches(_sweep("anthropic", "http-500@request1"))
    assert "after turn 1 the saved session reloads to" in found["session-in-sync"]


def _turn(finish: str, answer: str = "", code: str = "") -> TranscriptTurn:
    error = TurnError(code=code, message="x") if code else None
    return TranscriptTurn(user="u", finish=finish, answer=answer, error=error)


def _transcript(*turns: TranscriptTurn) -> Transcript:
    return Transcript(scenario="s", provider="anthropic", turns=turns)


def _run(point: str, transcript: Transcript, streams: list[StreamLog]) -> PointRun:
    clean = _transcript(_turn("answered", "You have 3 sandboxes."))
    baseline = PointRun(scenario="s", provider="anthropic", point=None, transcript=clean)
    return PointRun(
        scenario="s",
        provider="anthropic",
        point=None,
        transcript=transcript,
        baseline=baseline,
        streams=streams,
        points=(parse_point(point),),
        request_turns=(1,),
        request_deltas=(3,),
        request_completions=(1,),
        first_token_s=5.0,
    )


def _answered(text: str) -> StreamLog:
    return StreamLog(
        events=[TextDelta(text=text), MessageComplete(message=AssistantMessage(content=text))]
    )


def _failed(code: str) -> StreamLog:
    error = ChatError(
        message="the connection to the provider broke mid-stream: peer closed", code=code
    )
    return StreamLog(events=[TextDelta(text="You have"), StreamError(error=error)])


def test_a_cut_stream_that_ends_as_answered_breaks_the_contract() -> None:
    cut = _transcript(_turn("answered", "You have"))
    found = fault_contract(_run("no-finish@request1+1", cut, [_answered("You have")]))
    assert found and "never ends as answered" in found[0] and "ended as answered" in found[0]
    failed = _transcript(_turn("error", code="upstream_unavailable"))
    assert fault_contract(_run("reset@request1+1", failed, [_failed("upstream_unavailable")])) == []


def test_a_surfaced_fault_must_say_what_the_readme_quotes() -> None:
    # A reset mid-stream worded as a truncated body: the right code, the wrong story.
    failed = _transcript(_turn("error", "You have", "upstream_unavailable"))
    error = ChatError(message="OpenAI stream ended before [DONE]", code="upstream_unavailable")
    cut = StreamLog(events=[TextDelta(text="You have"), StreamError(error=error)])
    found = fault_contract(_run("reset@request1+1", failed, [cut]))
    assert found and "its text saying 'mid-stream'" in found[0]
    assert "'OpenAI stream ended before [DONE]'" in found[0]


def test_a_surfaced_fault_must_end_in_its_documented_code() -> None:
    failed = _transcript(_turn("error", code="internal"))
    found = fault_contract(_run("stall@request1+2", failed, [_failed("upstream_unavailable")]))
    assert found and "ends in timeout" in found[0] and "ended in upstream_unavailable" in found[0]


def test_a_masked_fault_must_leave_the_answer_as_the_clean_replay() -> None:
    other = _transcript(_turn("answered", "You have 2 sandboxes."))
    found = fault_contract(_run("http-500@request1", other, [_answered("x")]))
    assert found and "turn 1 answered 'You have 2 sandboxes.'" in found[0]
    same = _transcript(_turn("answered", "You have 3 sandboxes."))
    assert fault_contract(_run("http-500@request1", same, [_answered("x")])) == []


def test_the_promises_by_fault_class_and_position() -> None:
    def of(text: str, budget: float = 5.0, deltas: int = 3) -> Any:
        return promise(parse_point(text), first_token_s=budget, deltas=deltas)

    assert of("http-429@request1").masked and of("http-429@request1").route == "same"
    assert of("http-401@request1").masked and of("http-401@request1").route == "next"
    assert of("refused@request2").masked
    late = of("http-429@request1", budget=0.5)  # a retry-after of 1 s cannot fit
    assert not late.masked and late.may_mask and late.codes == {"rate_limited"}
    assert of("no-first-byte@request1").codes == {"timeout"}
    assert not of("reset@request1+1").may_mask
    assert of("no-finish@request1+3").may_mask  # after the last delta the stream had ended
    assert promise(FaultPoint("tool", 1, "hang"), first_token_s=5.0, deltas=0) is None
    # Timing faults: finishing in another order or a slow change is masked (call order,
    # barriers); a call past its own timeout is killed and the model sees it.
    assert of("order=2,1@tool1").masked and of("order=2,1@tool1").route is None
    assert of("slow-change@tool1").masked
    assert of("overtime@tool1") is None


def test_a_timing_fault_that_changes_the_answer_breaks_the_contract() -> None:
    other = _transcript(_turn("answered", "You have 2 sandboxes."))
    found = fault_contract(_run("order=2,1@tool1", other, [_answered("x")]))
    assert found and "order only changes when the calls finish" in found[0]
    same = _transcript(_turn("answered", "You have 3 sandboxes."))
    assert fault_contract(_run("order=2,1@tool1", same, [_answered("x")])) == []


def test_retries_share_their_completion() -> None:
    assert completion_numbers(["a", "a", "b", "c", "c", "c", "a"]) == (1, 1, 2, 3, 3, 3, 4)


def test_a_failover_to_another_origin_shares_its_completion() -> None:
    # The second route is sent the same turn less the first route's reasoning (and,
    # on Anthropic, with thinking off); only after a failed attempt is it the same one.
    turn = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    first = {"model": "m", "messages": [*turn[:1], {**turn[1], "reasoning_content": "r"}]}
    failover = {"model": "m", "messages": turn, "thinking": {"type": "disabled"}}
    later = {"model": "m", "messages": [*turn, {"role": "user", "content": "v"}]}
    assert completion_numbers([first, failover, later], [401, 200, 200]) == (1, 1, 2)
    assert completion_numbers([first, failover, later], [200, 200, 200]) == (1, 2, 3)
    other_turn = {"model": "m", "messages": [turn[0], {**turn[1], "content": "b"}]}
    assert completion_numbers([first, other_turn], [401, 200]) == (1, 2)


def test_after_a_failover_reasoning_may_lack_pieces_never_change() -> None:
    from navagent.fixtures.harness.faults._invariants import _turn_differences
    from navagent.fixtures.harness.scenarios._transcript import ThinkingStep

    def turn(*thoughts: str) -> TranscriptTurn:
        steps = tuple(ThinkingStep(text=text) for text in thoughts)
        return TranscriptTurn(user="u", finish="answered", answer="a", steps=steps)

    clean = turn("plan", "report")
    assert _turn_differences(turn("plan"), clean, 1, failed_over=True) == []
    assert _turn_differences(turn("plan"), clean, 1)  # a retry on its route shows it all
    changed = _turn_differences(turn("plan", "other"), clean, 1, failed_over=True)
    assert changed == [
        "turn 1 showed the reasoning ['plan', 'other'] (fault-free: ['plan', 'report'])"
    ]
    assert _turn_differences(turn("report", "plan"), clean, 1, failed_over=True)  # reordered


def test_text_shown_twice_or_lost_is_a_violation() -> None:
    final = MessageComplete(message=AssistantMessage(content="Hello."))
    twice = StreamLog(events=[TextDelta(text="Hello."), TextDelta(text="Hello."), final])
    run = PointRun(scenario="s", provider="anthropic", point=None, transcript=None)
    run.streams = [twice]
    found = shown_once(run)
    assert found and "(shown twice)" in found[0]
    run.streams = [StreamLog(events=[TextDelta(text="Hel"), final])]
    assert "showed 'Hel'" in shown_once(run)[0]
    run.streams = [StreamLog(events=[TextDelta(text="Hel"), TextDelta(text="lo."), final])]
    assert shown_once(run) == []


def test_held_slots_and_open_responses_are_named() -> None:
    run = PointRun(scenario="s", provider="anthropic", point=None, transcript=None)
    run.held = ["1 provider response(s) still open"]
    assert released(run) == ["after the replay, 1 provider response(s) still open"]


def test_session_drift_names_the_first_differing_message() -> None:
    memory = (UserMessage(content="hi"), AssistantMessage(content="hello"))
    assert session_drift(1, memory, memory) == ""
    found = session_drift(2, memory, memory[:1])
    assert "reloads to 1 messages, the agent holds 2" in found
    assert "messages[1] is nothing saved" in found


def test_a_turn_finished_event_is_not_a_stream_ending() -> None:
    # The contract reads the client's completion, not the agent's turn: a compaction
    # summary cut mid-stream may end its completion in an error and the turn answer.
    run = _run(
        "reset@request1+1",
        _transcript(_turn("answered", "You have 3 sandboxes.")),
        [_failed("upstream_unavailable")],
    )
    run.events = [TurnFinished(reason="answered", message="")]
    assert fault_contract(run) == []


def test_a_retry_is_judged_against_the_route_the_fault_free_replay_took() -> None:
    # A recorded 429 past the retry cap already fails over in the clean replay
    # (retry-after-over-cap): the same route for a masked 429 means that route.
    same = _transcript(_turn("answered", "You have 3 sandboxes."))
    run = _run("http-429@request1", same, [_answered("x")])
    run.first_route = "hint#1"
    assert run.baseline is not None
    run.baseline.served = [ServedBy("hint#2", 2)]
    run.served = [ServedBy("hint#2", 3)]
    assert fault_contract(run) == []
    run.served = [ServedBy("hint#1", 2)]
    (found,) = fault_contract(run)
    assert "must retry it on hint#2" in found and "answered by hint#1" in found


def test_a_fault_on_every_attempt_must_surface_its_own_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With every attempt of every route refused, nothing masks the fault: the code the README
    documents for the status surfaces. An overload mapped as a rate limit still retried, and
    every masked point passed; on every attempt it ends in the wrong code."""
    for kind, code in (("http-529*6", "overloaded"), ("http-429*6", "rate_limited")):
        kept = promise(parse_point(f"{kind}@request1"), first_token_s=60, deltas=3)
        assert kept is not None and not kept.masked and not kept.may_mask
        assert code in kept.codes
    assert _breaches(_sweep("openai", "http-529*6@request1")) == {}
    assert _breaches(_sweep("openai", "http-401*2@request1")) == {}

    from navagent.gateway import errors

    monkeypatch.setitem(errors._BY_STATUS, 529, ("rate_limited", True))  # the planted defect
    assert _breaches(_sweep("openai", "http-529@request1")) == {}  # masked: passed before
    found = _breaches(_sweep("openai", "http-529*6@request1"))
    assert "ended in rate_limited" in found["fault-contract"]


@pytest.mark.parametrize(
    ("status", "planted", "breach"),
    [
        # A request error retried as if a retry could clear it: the same route gets
        # it again (after a back-off) instead of the next route at once.
        (400, ("invalid_request", True), "backoff"),
        # A refused permission reported as a bad request: the user is told to fix
        # a request that was fine, not the key.
        (403, ("invalid_request", False), "fault-contract"),
        # A gateway timeout taken for a request error: no retry, and the wrong code.
        (504, ("invalid_request", False), "fault-contract"),
    ],
)
def test_every_status_of_the_readme_table_is_held_to_its_row(
    monkeypatch: pytest.MonkeyPatch, status: int, planted: tuple[str, bool], breach: str
) -> None:
    """Each documented status, struck once and on every attempt, ends as its row says."""
    from navagent.gateway import errors

    times = 2 if status < 500 else 6
    points = (f"http-{status}@request1", f"http-{status}*{times}@request1")
    assert _breaches(_sweep("openai", *points)) == {}
    monkeypatch.setitem(errors._BY_STATUS, status, planted)
    assert _breaches(_sweep("openai", *points, only=BEFORE)) == {}  # passed before
    assert breach in _breaches(_sweep("openai", *points))


@pytest.mark.parametrize(
    ("provider", "point", "name"),
    [
        ("gemini", "error-event@request1+0", "UNAVAILABLE"),
        ("gemini", "error-event@request3+0", "DEADLINE_EXCEEDED"),
        ("anthropic", "error-event@request1+0", "overloaded_error"),
        ("anthropic", "error-event@request2+0", "api_error"),
        ("openai", "error-event@request1+0", "server_error"),
    ],
)
def test_an_error_event_that_opens_the_stream_is_retried_as_its_name_says(
    monkeypatch: pytest.MonkeyPatch, provider: str, point: str, name: str
) -> None:
    """Plants a defect: the error an API names in its opening event taken as not retryable."""
    from navagent.gateway import errors

    assert error_event_name(provider, parse_point(point)) == name
    assert _breaches(_sweep(provider, point)) == {}
    code, _ = errors._BY_NAME[name]
    monkeypatch.setitem(errors._BY_NAME, name, (code, False))
    assert _breaches(_sweep(provider, point, only=BEFORE)) == {}  # failed over: passed before
    assert "fault-contract" in _breaches(_sweep(provider, point))


@pytest.mark.parametrize(
    ("provider", "point", "name", "planted"),
    [
        ("anthropic", "error-event@request1+1", "api_error", "overloaded"),
        ("gemini", "error-event@request1+2", "DEADLINE_EXCEEDED", "upstream_unavailable"),
        ("gemini", "error-event@request1+3", "UNAVAILABLE", "upstream_unavailable"),
    ],
)
def test_an_error_event_mid_stream_ends_in_the_code_its_name_documents(
    monkeypatch: pytest.MonkeyPatch, provider: str, point: str, name: str, planted: str
) -> None:
    """Plants a defect: an API's error name mapped to another code (the user is told wrong)."""
    from navagent.gateway import errors

    assert error_event_name(provider, parse_point(point)) == name
    assert _breaches(_sweep(provider, point)) == {}
    monkeypatch.setitem(errors._BY_NAME, name, (planted, True))
    assert _breaches(_sweep(provider, point, only=BEFORE)) == {}  # a clean error: passed before
    assert "fault-contract" in _breaches(_sweep(provider, point))


def test_an_opening_error_on_a_response_the_recording_retried_keeps_every_promise() -> None:
    """Request 3 was recorded as a reset before any byte, then retried: striking it with an
    opening error event is one more failed attempt of the same kind, and the cut of a body
    without a content delta is its start (the sweep's transport raised IndexError here,
    which the gateway rightly answered INTERNAL)."""
    reset = ROOT / "scenarios" / "provider-reset-mid-stream.yaml"
    assert _breaches(_sweep("openai-responses", "error-event@request3+0", scenario=reset)) == {}
