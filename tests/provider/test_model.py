"""The deterministic model: reading requests, references, planning and answers from tool results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.fixtures.provider import (
    TOOL_NAMES,
    Conversation,
    Plan,
    PlannedCall,
    plan_reply,
    plugin_for,
)
from navagent.fixtures.provider.model._reply import SUMMARY_HEADING
from tests.provider import _helpers as h


def reply(text: str, *history: Message, tools: tuple[str, ...] = TOOL_NAMES, **kw: Any) -> Plan:
    return plan_reply(
        Conversation(messages=(*history, UserMessage(content=text)), tools=tools, **kw)
    )


def calls(plan: Plan) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call in plan.tool_calls]


def turn(request: str, *results: tuple[str, dict[str, Any], str]) -> list[Message]:
    """A past turn: the user's request, the calls made, their results."""
    tool_calls = tuple(
        ToolCall(id=f"call_{request[:6]}_{i}", name=name, arguments=json.dumps(args))
        for i, (name, args, _) in enumerate(results)
    )
    return [
        UserMessage(content=request),
        AssistantMessage(tool_calls=tool_calls),
        *(
            ToolResultMessage(tool_call_id=call.id, content=output)
            for call, (_, _, output) in zip(tool_calls, results, strict=True)
        ),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("list my sandboxes", [("sandbox_list", {})]),
        ("What sandboxes do I have?", [("sandbox_list", {})]),
        ("what's the status of the cluster?", [("cluster_status", {})]),
        ("is the cluster healthy", [("cluster_status", {})]),
        ("show sandbox dev-box", [("sandbox_get", {"name": "dev-box"})]),
        ("describe py-worker please", [("sandbox_get", {"name": "py-worker"})]),
        ("what's the phase of gpu-trainer", [("sandbox_get", {"name": "gpu-trainer"})]),
        (
            "create a sandbox named web with image nginx:1.27 running nginx -g daemon off",
            [
                (
                    "sandbox_create",
                    {"name": "web", "image": "nginx:1.27", "command": "nginx -g daemon off"},
                )
            ],
        ),
        ("make me a new sandbox", [("sandbox_create", {})]),
        (
            "create a sandbox named d-1 running python3 -c 'print(1)'",
            [("sandbox_create", {"name": "d-1", "command": "python3 -c 'print(1)'"})],
        ),
        (
            "create a sandbox named d-2 running `ls -l`",
            [("sandbox_create", {"name": "d-2", "command": "ls -l"})],
        ),
        (
            "create a sandbox called job-1 and run echo hi, there",
            [("sandbox_create", {"name": "job-1", "command": "echo hi, there"})],
        ),
        ("delete gpu-trainer", [("sandbox_delete", {"name": "gpu-trainer"})]),
        (
            "delete dev-box and py-worker",
            [("sandbox_delete", {"name": "dev-box"}), ("sandbox_delete", {"name": "py-worker"})],
        ),
        (
            "show me the logs of dev-box, last 20 lines",
            [("sandbox_logs", {"name": "dev-box", "lines": 20})],
        ),
        ("give me py-worker's logs", [("sandbox_logs", {"name": "py-worker"})]),
        ("list providers", [("provider_list", {})]),
        ("show provider anthropic", [("provider_get", {"name": "anthropic"})]),
        ("what type is the gh provider?", [("provider_get", {"name": "gh"})]),
        ("which inference routes are configured", [("inference_route_list", {})]),
        (
            "list my sandboxes and check the cluster health; also list providers",
            [("sandbox_list", {}), ("cluster_status", {}), ("provider_list", {})],
        ),
        (  # the logs depend on the create: they come in the next round
            "create a sandbox named tmp-1 and show its logs",
            [("sandbox_create", {"name": "tmp-1"})],
        ),
        (
            "show sandbox café-ß and its logs",
            [("sandbox_get", {"name": "café-ß"}), ("sandbox_logs", {"name": "café-ß"})],
        ),
        ("[sim-fault: http-500] list my sandboxes", [("sandbox_list", {})]),
        ("list my sandboxes and list my sandboxes", [("sandbox_list", {})]),
    ],
)
def test_requests_pick_the_calls(text, expected) -> None:
    assert calls(reply(text)) == expected


LISTED = turn("list my sandboxes", ("sandbox_list", {}, h.SANDBOX_LIST))


@pytest.mark.parametrize(
    ("history", "text", "expected"),
    [
        (LISTED, "show me the first one", [("sandbox_get", {"name": "dev-box"})]),
        (LISTED, "delete the last one", [("sandbox_delete", {"name": "gpu-trainer"})]),
        (LISTED, "logs of the second sandbox", [("sandbox_logs", {"name": "py-worker"})]),
        (
            LISTED,
            "delete them",
            [("sandbox_delete", {"name": n}) for n in ("dev-box", "py-worker", "gpu-trainer")],
        ),
        (
            turn("show py-worker", ("sandbox_get", {"name": "py-worker"}, h.SANDBOX_GET)),
            "now show its logs",
            [("sandbox_logs", {"name": "py-worker"})],
        ),
        (
            turn("show py-worker", ("sandbox_get", {"name": "py-worker"}, h.SANDBOX_GET)),
            "delete that one",
            [("sandbox_delete", {"name": "py-worker"})],
        ),
        (
            turn("make a sandbox", ("sandbox_create", {}, h.SANDBOX_CREATE)),
            "show me the logs of the new one",
            [("sandbox_logs", {"name": "web"})],
        ),
        (LISTED, "describe gpu-trainer", [("sandbox_get", {"name": "gpu-trainer"})]),
        (
            LISTED,
            "delete all my sandboxes",
            [("sandbox_delete", {"name": n}) for n in ("dev-box", "py-worker", "gpu-trainer")],
        ),
    ],
)
def test_references_resolve_to_names_seen_earlier(history, text, expected) -> None:
    assert calls(reply(text, *history)) == expected


def test_unresolvable_reference_gets_a_question() -> None:
    plan = reply("delete it")
    assert not plan.tool_calls
    assert plan.text == "Which sandbox do you mean? Ask me to list your sandboxes first."
    assert "dev-box" in reply("delete it", *turn("x", ("provider_list", {}, "")), *LISTED).text


def test_only_offered_tools_are_called() -> None:
    plan = reply("delete dev-box and list providers", tools=("provider_list",))
    assert calls(plan) == [("provider_list", {})]
    refusal = reply("delete dev-box", tools=("sandbox_list", "sandbox_get"))
    assert not refusal.tool_calls
    assert "the sandbox_delete tool is not available" in refusal.text
    assert "I can list your sandboxes and show a sandbox." in refusal.text


def test_no_match_says_so_and_offers_three_examples_that_fit_the_cluster() -> None:
    plan = reply("tell me a joke")
    assert not plan.tool_calls
    assert plan.text == (
        'I did not understand that; try "list my sandboxes", "is the cluster up?" or '
        '"which inference routes are configured?".'
    )
    after_listing = reply("tell me a joke", *LISTED).text
    assert '"why is gpu-trainer failing?"' in after_listing
    assert "no tools" in reply("list my sandboxes", tools=()).text


def test_anthropic_style_prefaces_calls_and_openai_style_does_not() -> None:
    # The format's plug-in decides; the wire side passes it on in the conversation.
    assert plugin_for("anthropic").prefaces_tool_calls
    assert not plugin_for("openai").prefaces_tool_calls
    anthropic = reply("list my sandboxes and show provider gh", prefaces_tool_calls=True)
    assert anthropic.text == "I'll list your sandboxes and look up provider gh."
    assert reply("list my sandboxes", prefaces_tool_calls=False).text == ""


def test_thinking_comes_only_when_asked() -> None:
    assert reply("list my sandboxes", thinking=True).thinking.startswith(
        'The user asked: "list my sandboxes". I will call sandbox_list.'
    )
    assert reply("list my sandboxes").thinking == ""


def test_answer_uses_the_tool_results() -> None:
    history = turn(
        "show py-worker and the logs of ghost",
        ("sandbox_get", {"name": "py-worker"}, h.SANDBOX_GET),
        ("sandbox_logs", {"name": "ghost"}, h.NOT_FOUND),
    )
    plan = plan_reply(Conversation(messages=tuple(history), tools=TOOL_NAMES))
    assert not plan.tool_calls
    assert plan.text == (
        "Here is what I found:\n"
        "- Sandbox py-worker is Ready (namespace navigator, "
        "id 5b0c2f8e-3d1a-4c7e-9a51-0f2b7c9d1e44). "
        "Its policy allows network access for github, nvidia.\n"
        "- Reading the logs of ghost failed with exit code 1: "
        '`status: NotFound, message: "sandbox not found", details: [], metadata:`.'
    )


def test_answer_reports_a_declined_call() -> None:
    history = turn(
        "delete dev-box",
        ("sandbox_delete", {"name": "dev-box"}, "The user declined this tool call."),
    )
    plan = plan_reply(Conversation(messages=tuple(history), tools=TOOL_NAMES))
    assert plan.text == "You declined deleting sandbox dev-box, so I did not run it."


def test_compaction_request_gets_a_summary_of_requests_and_outcomes() -> None:
    history = [
        SystemMessage(content="You operate a cluster."),
        SystemMessage(content=f'{SUMMARY_HEADING}\n- The user asked: "hi".'),
        *LISTED,
        AssistantMessage(content="You have 3 sandboxes."),
        *turn(
            "[sim-fault: http-429] delete gpu-trainer",
            ("sandbox_delete", {"name": "gpu-trainer"}, "✓ Deleted sandbox gpu-trainer"),
        ),
    ]
    plan = reply("Summarize the conversation so far, briefly.", *history)
    assert not plan.tool_calls
    assert plan.text == "\n".join(
        [
            SUMMARY_HEADING,
            '- The user asked: "hi".',
            '- The user asked: "list my sandboxes".',
            "  - sandbox_list: You have 3 sandboxes: dev-box (Ready), py-worker (Provisioning), "
            "gpu-trainer (Error).",
            '- The user asked: "delete gpu-trainer".',
            "  - sandbox_delete: Deleted sandbox gpu-trainer.",
        ]
    )


def test_conversation_without_user_message_gets_help() -> None:
    plan = plan_reply(Conversation(messages=(SystemMessage(content="sys"),), tools=TOOL_NAMES))
    assert plan.text.startswith("I can help") and not plan.tool_calls


# -- properties -------------------------------------------------------------------

WORDS = st.sampled_from(
    "list show get describe create delete remove logs of the my it them first last one named "
    "called with image running sandbox sandboxes providers provider inference routes cluster "
    "status health and then , ; . dev-box py-worker gpu-trainer anthropic gh 20 lines café ß 😀 "
    "Summarize [sim-fault: reset]".split()
)
TEXT = st.lists(WORDS | st.text(max_size=8), max_size=14).map(" ".join)
OUTPUTS = st.sampled_from(
    [
        h.SANDBOX_LIST,
        h.SANDBOX_GET,
        h.SANDBOX_CREATE,
        h.SANDBOX_LOGS,
        h.PROVIDER_LIST,
        h.PROVIDER_GET,
        h.ROUTES,
        h.CLUSTER_STATUS,
        h.NOT_FOUND,
        "",
        "No sandboxes found.",
        "Command completed successfully (no output).",
    ]
) | st.text(max_size=40)


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(content=draw(TEXT)))
    for index in range(draw(st.integers(0, 3))):
        messages.append(UserMessage(content=draw(TEXT)))
        names = draw(st.lists(st.sampled_from(TOOL_NAMES), max_size=3))
        if names:
            tool_calls = tuple(
                ToolCall(
                    id=f"c{index}{i}",
                    name=n,
                    arguments=json.dumps(draw(st.fixed_dictionaries({}, optional={"name": TEXT}))),
                )
                for i, n in enumerate(names)
            )
            messages.append(AssistantMessage(tool_calls=tool_calls))
            messages.extend(
                ToolResultMessage(tool_call_id=c.id, content=draw(OUTPUTS)) for c in tool_calls
            )
        if draw(st.booleans()):
            messages.append(AssistantMessage(content=draw(TEXT) or "ok"))
    messages.append(UserMessage(content=draw(TEXT)))
    if draw(st.booleans()):  # sometimes end on tool results for a call we made
        messages.append(AssistantMessage(tool_calls=(ToolCall(id="last", name="sandbox_list"),)))
        messages.append(ToolResultMessage(tool_call_id="last", content=draw(OUTPUTS)))
    tools = tuple(draw(st.lists(st.sampled_from(TOOL_NAMES), unique=True)))
    return Conversation(
        messages=tuple(messages),
        tools=tools,
        provider=draw(st.sampled_from(["openai", "anthropic"])),
        thinking=draw(st.booleans()),
    )


NAMED = {"sandbox_get", "sandbox_delete", "sandbox_logs", "provider_get"}


@settings(max_examples=300, deadline=None)
@given(conversations())
def test_any_conversation_gets_a_well_formed_plan(conversation: Conversation) -> None:
    plan = plan_reply(conversation)
    assert plan.text or plan.tool_calls
    assert bool(plan.thinking) == conversation.thinking
    assert all(call.name in conversation.tools for call in plan.tool_calls)
    assert len(set(map(repr, plan.tool_calls))) == len(plan.tool_calls)
    for call in plan.tool_calls:
        assert isinstance(call, PlannedCall)
        assert json.loads(call.arguments_json()) == call.arguments
        if call.name in NAMED:
            assert isinstance(call.arguments["name"], str) and call.arguments["name"]
        assert set(call.arguments) <= {"name", "image", "command", "lines"}
    if isinstance(conversation.messages[-1], ToolResultMessage):
        last_user = max(
            i for i, m in enumerate(conversation.messages) if isinstance(m, UserMessage)
        )
        made = [
            (call.name, call.parsed_arguments())
            for message in conversation.messages[last_user:]
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        ]
        # planning over results: a new round never repeats a call already made
        assert not [(c.name, c.arguments) for c in plan.tool_calls if (c.name, c.arguments) in made]


@settings(max_examples=100, deadline=None)
@given(conversations())
def test_the_model_is_deterministic(conversation: Conversation) -> None:
    assert plan_reply(conversation) == plan_reply(conversation)


READS = {"sandbox_list", "sandbox_get", "sandbox_logs"}


@settings(max_examples=300, deadline=None)
@given(conversations())
def test_a_sandbox_read_never_goes_out_after_a_change_in_the_same_response(
    conversation: Conversation,
) -> None:
    names = [call.name for call in plan_reply(conversation).tool_calls]
    changes = [i for i, name in enumerate(names) if name in ("sandbox_create", "sandbox_delete")]
    if changes:
        assert not READS & set(names[changes[0] :]), names
