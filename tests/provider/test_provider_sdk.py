"""Fidelity proof: the official SDKs parse every stream the simulator emits.

Each test drives `openai` / `anthropic` (over `httpx2`) against the running
simulator and checks the SDK's final message equals what the simulator's
model planned (re-derived with `simulate()` from the body the server logged),
and that each fault surfaces as the SDK's matching error. The other half of
the proof, the structure compared with real recordings, is in
test_sim_conformance.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from navagent.fixtures.provider import Reply, SimulatedProvider, simulate
from tests.provider import _helpers as h

CLOCK = 1_772_643_600


@pytest.fixture
def oai(sim: SimulatedProvider) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture
def claude(sim: SimulatedProvider) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=sim.base_url, api_key="sk-ant-test", max_retries=0) as client:
        yield client


def planned(sim: SimulatedProvider, provider: str) -> Reply:
    """What the simulator planned for its last request (same body, same occurrence)."""
    record = sim.requests[-1]
    assert record.body is not None and record.provider == provider
    return simulate(provider, record.body, created=CLOCK)


def openai_stream(client: openai.OpenAI, messages: list[dict[str, Any]], **extra: Any) -> Any:
    body = h.openai_body(messages, **extra)
    body.pop("stream")
    with client.chat.completions.stream(**body) as stream:
        for _ in stream:
            pass
        try:
            return stream.get_final_completion()
        except openai.LengthFinishReasonError:
            return stream.current_completion_snapshot


def anthropic_stream(
    client: anthropic.Anthropic, messages: list[dict[str, Any]], **extra: Any
) -> Any:
    body = h.anthropic_body(messages, **extra)
    body.pop("stream")
    with client.messages.stream(**body) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def assert_openai_matches(completion: Any, reply: Reply) -> None:
    script = reply.script
    choice = completion.choices[0]
    assert completion.id.startswith("chatcmpl-") and completion.created == CLOCK
    assert (choice.message.content or "") == script.text_content
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        (c.id, c.name, c.arguments) for c in script.calls
    ]
    assert (
        choice.finish_reason
        == {"end": "stop", "tool_use": "tool_calls", "length": "length"}[script.stop]
    )
    assert completion.usage.completion_tokens == script.output_tokens
    assert completion.usage.prompt_tokens == script.input_tokens


def assert_anthropic_matches(message: Any, reply: Reply) -> None:
    script = reply.script
    kinds = [block.type for block in message.content]
    expected_kinds = (["thinking"] if script.signature else []) + (["text"] if script.text else [])
    assert kinds == expected_kinds + ["tool_use"] * len(script.calls)
    texts = [block.text for block in message.content if block.type == "text"]
    assert "".join(texts) == script.text_content
    thinking = [block for block in message.content if block.type == "thinking"]
    assert [(b.thinking, b.signature) for b in thinking] == (
        [(script.thinking_text, script.signature)] if script.signature else []
    )
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [
        (c.id, c.name, json.loads(c.arguments)) for c in script.calls
    ]
    stop = {"end": "end_turn", "tool_use": "tool_use", "length": "max_tokens"}[script.stop]
    assert message.stop_reason == stop and message.id.startswith("msg_01")
    assert message.usage.output_tokens == script.output_tokens
    assert message.usage.input_tokens == script.input_tokens


# -- every kind of stream -------------------------------------------------------


def test_openai_sdk_parses_text_stream(sim, oai) -> None:
    completion = openai_stream(oai, [h.user("hello there")])
    reply = planned(sim, "openai")
    assert_openai_matches(completion, reply)
    assert "list my sandboxes" in completion.choices[0].message.content
    assert len(reply.script.text) > 5  # streamed word by word, not in one piece


def test_openai_sdk_parses_single_tool_call(sim, oai) -> None:
    completion = openai_stream(oai, [h.user("list my sandboxes")])
    assert_openai_matches(completion, planned(sim, "openai"))
    (call,) = completion.choices[0].message.tool_calls
    assert call.function.name == "sandbox_list" and call.id.startswith("call_")


def test_openai_sdk_parses_parallel_tool_calls(sim, oai) -> None:
    completion = openai_stream(oai, [h.user("delete dev-box and py-worker, then list providers")])
    assert_openai_matches(completion, planned(sim, "openai"))
    calls = completion.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("sandbox_delete", {"name": "dev-box"}),
        ("sandbox_delete", {"name": "py-worker"}),
        ("provider_list", {}),
    ]


def test_openai_sdk_parses_max_tokens_truncation(sim, oai) -> None:
    completion = openai_stream(oai, [h.user("hello")], max_tokens=4)
    reply = planned(sim, "openai")
    assert_openai_matches(completion, reply)
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 4
    assert reply.plan.text.startswith(completion.choices[0].message.content)


def test_openai_sdk_parses_stream_without_usage(sim, oai) -> None:
    completion = openai_stream(oai, [h.user("list my sandboxes")], stream_options=None)
    assert completion.usage is None
    assert completion.choices[0].message.tool_calls[0].function.name == "sandbox_list"


def test_openai_sdk_round_trip_answers_from_tool_results(sim, oai) -> None:
    first = openai_stream(oai, [h.user("list my sandboxes")])
    call = first.choices[0].message.tool_calls[0]
    history = [
        h.user("list my sandboxes"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": h.SANDBOX_LIST},
    ]
    second = openai_stream(oai, history)
    assert_openai_matches(second, planned(sim, "openai"))
    assert second.choices[0].message.content == (
        "You have 3 sandboxes: dev-box (Ready), py-worker (Provisioning), gpu-trainer (Error)."
    )


def test_openai_sdk_parses_non_streaming_completion(sim, oai) -> None:
    body = h.openai_body([h.user("show sandbox dev-box")], stream=None, stream_options=None)
    completion = oai.chat.completions.create(**body)
    assert_openai_matches(completion, planned(sim, "openai"))
    assert completion.object == "chat.completion"
    assert json.loads(completion.choices[0].message.tool_calls[0].function.arguments) == {
        "name": "dev-box"
    }


def test_anthropic_sdk_parses_text_stream(sim, claude) -> None:
    message = anthropic_stream(claude, [h.user("hello there")])
    assert_anthropic_matches(message, planned(sim, "anthropic"))
    assert "list my sandboxes" in message.content[0].text


def test_anthropic_sdk_parses_preface_and_parallel_tool_use(sim, claude) -> None:
    message = anthropic_stream(claude, [h.user("show sandbox dev-box and its logs, last 20 lines")])
    assert_anthropic_matches(message, planned(sim, "anthropic"))
    assert message.content[0].text == "I'll look up sandbox dev-box and fetch the logs of dev-box."
    assert [(u.name, u.input) for u in message.content[1:]] == [
        ("sandbox_get", {"name": "dev-box"}),
        ("sandbox_logs", {"name": "dev-box", "lines": 20}),
    ]


def test_anthropic_sdk_parses_tool_use_without_arguments(sim, claude) -> None:
    message = anthropic_stream(claude, [h.user("is the cluster healthy?")])
    assert_anthropic_matches(message, planned(sim, "anthropic"))
    assert (message.content[-1].name, message.content[-1].input) == ("cluster_status", {})


def test_anthropic_sdk_parses_thinking_then_tool_use_and_signature_round_trip(sim, claude) -> None:
    model = "claude-sonnet-4-6-thinking"
    first = anthropic_stream(claude, [h.user("list my sandboxes")], model=model)
    assert_anthropic_matches(first, planned(sim, "anthropic"))
    assert [block.type for block in first.content] == ["thinking", "text", "tool_use"]
    use = first.content[-1]
    history = [
        h.user("list my sandboxes"),
        {
            "role": "assistant",
            "content": [
                b.model_dump(
                    include={"type", "thinking", "signature", "text", "id", "name", "input"}
                )
                for b in first.content
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": h.SANDBOX_LIST}],
        },
    ]
    second = anthropic_stream(claude, history, model=model)
    assert_anthropic_matches(second, planned(sim, "anthropic"))
    assert second.content[-1].text.startswith("You have 3 sandboxes: dev-box (Ready)")

    history[1]["content"][0]["thinking"] += " (edited)"
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking` block"):
        anthropic_stream(claude, history, model=model)
    history[1]["content"] = history[1]["content"][1:]
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        anthropic_stream(claude, history, model=model)


def test_anthropic_sdk_parses_max_tokens_truncation(sim, claude) -> None:
    message = anthropic_stream(
        claude, [h.user("create a sandbox named trainer-7 with image pytorch:2")], max_tokens=12
    )
    reply = planned(sim, "anthropic")
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 12
    # The call was cut mid-arguments: the SDK keeps what arrived, like the real API's partial input.
    assert message.content[-1].type == "tool_use" and not reply.script.calls[-1].complete


def test_anthropic_sdk_parses_non_streaming_message(sim, claude) -> None:
    body = h.anthropic_body([h.user("list providers")], stream=None)
    message = claude.messages.create(**body)
    assert_anthropic_matches(message, planned(sim, "anthropic"))
    assert message.content[-1].name == "provider_list"


# -- faults surface as the SDKs' errors ----------------------------------------------

OPENAI_HTTP_FAULTS = [
    ("http-401", openai.AuthenticationError),
    ("http-429", openai.RateLimitError),
    ("http-500", openai.InternalServerError),
    ("http-529", openai.InternalServerError),
]
ANTHROPIC_HTTP_FAULTS = [
    ("http-401", anthropic.AuthenticationError),
    ("http-429", anthropic.RateLimitError),
    ("http-500", anthropic.InternalServerError),
    ("http-529", anthropic.OverloadedError),
]


@pytest.mark.parametrize(("fault", "error"), OPENAI_HTTP_FAULTS)
def test_openai_sdk_raises_on_http_fault(sim, oai, fault, error) -> None:
    sim.inject(fault)
    with pytest.raises(error) as caught:
        openai_stream(oai, [h.user("list my sandboxes")])
    assert caught.value.status_code == int(fault[-3:])
    assert set(caught.value.body) == {"message", "type", "param", "code"}  # the SDK unwraps "error"
    if fault == "http-429":
        assert caught.value.response.headers["retry-after"] == "1"
    assert (
        openai_stream(oai, [h.user("list my sandboxes")]).choices[0].finish_reason == "tool_calls"
    )


@pytest.mark.parametrize(("fault", "error"), ANTHROPIC_HTTP_FAULTS)
def test_anthropic_sdk_raises_on_http_fault(sim, claude, fault, error) -> None:
    sim.inject(fault)
    with pytest.raises(error) as caught:
        anthropic_stream(claude, [h.user("list my sandboxes")])
    assert caught.value.status_code == int(fault[-3:])
    assert caught.value.body["type"] == "error"
    assert caught.value.request_id == caught.value.body["request_id"]


def test_openai_sdk_raises_api_error_on_mid_stream_error(sim, oai) -> None:
    sim.inject("error-mid-stream after=3")
    with pytest.raises(openai.APIError, match="Sorry about that") as caught:
        openai_stream(oai, [h.user("hello")])
    assert caught.value.body == {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    # after=3 counts content deltas: the role chunk, three content chunks, the error payload
    assert sim.wait_idle()[-1].events_sent == 5


def test_anthropic_sdk_raises_on_overloaded_mid_stream(sim, claude) -> None:
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error") as caught:
        anthropic_stream(
            claude, [h.user("[sim-fault: overloaded-mid-stream after=4] list my sandboxes")]
        )
    body = caught.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdks_raise_connection_error_on_reset(sim, oai, claude, provider) -> None:
    sim.inject("reset after=2")
    if provider == "openai":
        with pytest.raises(openai.APIConnectionError):
            openai_stream(oai, [h.user("hello")])
    else:
        with pytest.raises(httpx2.TransportError):
            anthropic_stream(claude, [h.user("hello")])
    (*_, last) = sim.wait_idle()
    # after=2 counts content deltas: OpenAI's role chunk, Anthropic's three-event
    # preamble, then two content deltas each
    assert last.events_sent == {"openai": 3, "anthropic": 5}[provider]
    assert last.outcome == "fault"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdks_raise_on_invalid_json_event(sim, oai, claude, provider) -> None:
    sim.inject("invalid-json after=2")
    with pytest.raises(json.JSONDecodeError):
        if provider == "openai":
            openai_stream(oai, [h.user("hello")])
        else:
            anthropic_stream(claude, [h.user("hello")])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdks_time_out_on_stall_and_the_server_sees_the_client_leave(sim, provider) -> None:
    sim.inject("stall after=2")
    if provider == "openai":
        with openai.OpenAI(
            base_url=sim.openai_base_url, api_key="k", max_retries=0, timeout=0.3
        ) as client:
            with pytest.raises(openai.APITimeoutError):
                openai_stream(client, [h.user("hello")])
    else:
        with anthropic.Anthropic(
            base_url=sim.base_url, api_key="k", max_retries=0, timeout=0.3
        ) as client:
            with pytest.raises(httpx2.ReadTimeout):
                anthropic_stream(client, [h.user("hello")])
    (record,) = sim.wait_for(lambda records: bool(records) and records[-1].closed_by_client)
    assert record.events_sent == {"openai": 3, "anthropic": 5}[provider]  # as for reset
    assert record.outcome == "client_closed"


def responses_stream(client: openai.OpenAI, text: str, model: str, **extra: Any) -> Any:
    with client.responses.stream(
        model=model,
        input=[{"role": "user", "content": text}],
        tools=[
            {"type": "function", "name": name, "parameters": {"type": "object"}, "strict": False}
            for name in ("sandbox_list", "provider_list")
        ],
        store=False,
        **extra,
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def test_openai_sdk_parses_responses_reasoning_and_parallel_calls(sim, oai) -> None:
    response = responses_stream(
        oai,
        "list my sandboxes and list providers",
        "gpt-5-mini",
        include=["reasoning.encrypted_content"],
        reasoning={"summary": "auto"},
    )
    reply = planned(sim, "openai-responses")
    reasoning, *calls = response.output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content.startswith("gAAAA")
    assert [s.text for s in reasoning.summary] == [reply.script.thinking_text]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        (c.id, c.name, c.arguments or "{}") for c in reply.script.calls
    ]
    assert response.usage.output_tokens_details.reasoning_tokens == len(reply.script.thinking)


def test_openai_sdk_raises_api_error_on_responses_mid_stream_error(sim, oai) -> None:
    sim.inject("error-mid-stream after=3")
    with pytest.raises(openai.APIError, match="Sorry about that") as caught:
        responses_stream(oai, "hello", "gpt-4.1-mini")
    assert caught.value.body["code"] == "server_error"  # type: ignore[index]


def test_openai_sdk_sees_the_responses_validation_error(sim, oai) -> None:
    with pytest.raises(openai.BadRequestError, match="not supported with this model") as caught:
        responses_stream(oai, "hello", "gpt-5-mini", temperature=0.2)
    assert caught.value.body["param"] == "temperature"  # type: ignore[index]
