"""Table tests at each boundary of the simulated model's stages.

lex (typos, trigger phrases, negation scope) -> names and references ->
frames (the named precedence rule that fires) -> context across turns ->
safety -> the catalog every table agrees with. Each table row is one item.
"""

from __future__ import annotations

import pytest

from navagent.core.tools import TOOLS_BY_NAME
from navagent.fixtures.provider._types import TOOL_NAMES
from navagent.fixtures.provider.model._catalog import CATALOG, say
from navagent.fixtures.provider.model._knowledge import _READERS
from navagent.fixtures.provider.model._language import (
    DESTRUCTIVE,
    correct,
    detect_intents,
    split_clauses,
)
from navagent.fixtures.provider.model._names import find_names, find_reference
from navagent.fixtures.provider.model._tool_output import _SUMMARISERS
from navagent.fixtures.provider.model._understand import (
    Context,
    choose_rule,
    read_context,
    understand,
)

SANDBOXES = ["dev-box", "gpu-trainer", "py-worker"]
PROVIDERS = ["anthropic", "gh", "nvidia"]


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("lsit", "list"),
        ("sandboxs", "sandboxes"),
        ("delte", "delete"),
        ("craete", "create"),
        ("clsuter", "cluster"),
        ("lgos", "logs"),
        ("provders", "providers"),
        ("than", "than"),  # ordinary English is never "corrected"
        ("named", "named"),  # an inflection, not a typo
        ("details", "details"),
        ("scratch", "scratch"),  # a plain name stays
        ("dev-bx", "dev-bx"),  # names with a dash are never touched
    ],
)
def test_lexer_corrects_one_slip_towards_the_vocabulary(typed: str, read: str) -> None:
    assert correct(typed) == read


@pytest.mark.parametrize(
    ("text", "asked", "negated"),
    [
        ("do not delete it", {}, ("delete",)),
        ("don't delete it", {}, ("delete",)),
        ("never remove dev-box", {}, ("delete",)),
        ("describe it without deleting it", {"get": 0}, ("delete",)),
        ("instead of creating one", {}, ("create",)),
        ("do not create anything", {}, ("create",)),
        ("I do not need py-worker so delete it", {"delete": 6}, ()),
        ("why is gpu-trainer not working", {"diagnose": 0}, ()),
        ("don't list them", {}, ("list",)),
        ("delete the one that is not ready", {"delete": 0}, ("get",)),
    ],
)
def test_negation_scope(text: str, asked: dict[str, int], negated: tuple[str, ...]) -> None:
    (clause,) = split_clauses(text)
    assert detect_intents(clause) == asked
    assert clause.negated == negated


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("don't delete it, just describe it", 2),
        ("do not create anything. what providers exist?", 2),
        ("create a sandbox called job-1 and run echo hi", 2),
        ("run 'echo a, b' in it", 1),
    ],
)
def test_clauses(text: str, clauses: int) -> None:
    assert len(split_clauses(text)) == clauses


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("what providers exist", []),
        ("show the config of dev-box", ["dev-box"]),
        ("sandbox lsit", []),
        ("delete scratch", ["scratch"]),
        ("logs of scratch", ["scratch"]),
        ("is the status ok", []),
        ("my training job on gpu-trainer never starts", ["gpu-trainer"]),
        ("create a sandbox named list", ["list"]),
    ],
)
def test_names_are_never_ordinary_or_intent_words(text: str, names: list[str]) -> None:
    (clause,) = split_clauses(text)
    assert find_names(clause, SANDBOXES) == names


@pytest.mark.parametrize(
    ("text", "kind", "index"),
    [
        ("delete the first one I made", "created", 0),
        ("show the one I created", "created", None),
        ("the last sandbox you created", "created", -1),
        ("the failing one", "failing", 0),
        ("the second one", "ordinal", 1),
        ("list them again", "all", 0),
        ("the newest one", "newest", 0),
    ],
)
def test_references(text: str, kind: str, index: int | None) -> None:
    (clause,) = split_clauses(text)
    reference = find_reference(clause)
    assert reference is not None and (reference.kind, reference.index) == (kind, index)


@pytest.mark.parametrize(
    ("text", "rule", "action"),
    [
        ("create a sandbox named x-1", "create-needs-an-object", "create"),
        ("make sure it is ready", "show-a-named-sandbox", "get"),
        ("erase dev-box", "delete-verb", "delete"),
        ("which sandbox was created first", "order-of-creation", "list"),
        ("list them again", "list-of-sandboxes", "list"),
        ("status of dev-box", "status-of-a-named-sandbox", "get"),
        ("cluster status", "cluster-word", "cluster"),
        ("status", "cluster-word", "cluster"),
        ("why is gpu-trainer failing", "diagnose-word", "diagnose"),
    ],
)
def test_the_named_rule_that_fires(text: str, rule: str, action: str) -> None:
    (clause,) = split_clauses(text)
    targeted = bool(find_names(clause, SANDBOXES)) or find_reference(clause) is not None
    fired = choose_rule(clause, detect_intents(clause), targeted)
    assert fired is not None and (fired.name, fired.action) == (rule, action)


@pytest.mark.parametrize(
    ("earlier", "follow_up", "previous"),
    [
        (["show the logs of dev-box", "and py-worker?"], "logs", "and py-worker?"),
        (["delete py-worker"], "delete", "delete py-worker"),
        (["show me dev-box", "again", "again"], "get", "show me dev-box"),
        (["thanks"], "get", ""),
    ],
)
def test_context_across_turns(earlier: list[str], follow_up: str, previous: str) -> None:
    context = read_context(earlier, SANDBOXES, PROVIDERS)
    assert (context.follow_up, context.previous_request) == (follow_up, previous)


@pytest.mark.parametrize(
    ("request_", "context"),
    [
        ("and gpu-trainer", Context("delete py-worker", "delete")),
        ("again", Context("delete py-worker", "delete")),
        ("list them again", Context("delete the newest one", "delete")),
        ("don't delete it, just describe it", Context()),
        ("never create a sandbox named z-1", Context()),
    ],
)
def test_no_mutation_goal_unless_asked(request_: str, context: Context) -> None:
    if request_ == "again":
        context = read_context([context.previous_request], SANDBOXES, PROVIDERS)
    goals = understand(request_, SANDBOXES, PROVIDERS, context).goals
    assert [g.action for g in goals if g.action in ("create", "delete")] == []


def test_the_catalog_is_the_tools_of_core() -> None:
    assert [row.tool for row in CATALOG] == list(TOOLS_BY_NAME) == list(TOOL_NAMES)
    assert set(_SUMMARISERS) == set(TOOL_NAMES)
    assert set(_READERS) <= set(TOOL_NAMES)
    assert {row.intent for row in CATALOG if row.changes_cluster} == DESTRUCTIVE
    assert say("sandbox_create", "preface") == "create a new sandbox"
    assert say("sandbox_delete", "doing", "x") == "deleting sandbox x"


def test_every_plan_carries_its_trace_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    from navagent.core.messages import UserMessage
    from navagent.fixtures.provider import Conversation, plan_reply

    conversation = Conversation(
        messages=(UserMessage(content="don't delete dev-box, just show its logs"),),
        tools=TOOL_NAMES,
    )
    with caplog.at_level("DEBUG", logger="navagent.fixtures.provider.model"):
        plan = plan_reply(conversation)
    assert [call.name for call in plan.tool_calls] == ["sandbox_logs"]
    assert any(line.startswith("negated: 'delete'") for line in plan.trace)
    assert "rule logs-word -> logs for 'just show its logs'" in plan.trace
    assert plan.trace[-1] == "next round: sandbox_logs"
    assert "rule logs-word" in caplog.text


CREATED_BUT_FAILED = (
    "\nCreated sandbox:\n\n  Id: 0c35\n  Name: train-2\n  Namespace: navigator\n"
    "  Phase: Provisioning\n  Phase: Ready\n\n\nbash: line 1: python: command not found\n"
    "Error:   × ssh exited with status exit status: 127\nCommand exited with code: 1"
)


def test_a_create_whose_command_failed_says_the_sandbox_was_made() -> None:
    from navagent.fixtures.provider.model._knowledge import Knowledge
    from navagent.fixtures.provider.model._tool_output import summarise_outcome

    arguments = {"name": "train-2", "command": "python train.py"}
    sentence = summarise_outcome("sandbox_create", arguments, CREATED_BUT_FAILED)
    assert sentence == (
        "Created sandbox train-2; it is Ready. But its command `python train.py` failed "
        '(exit code 1): "bash: line 1: python: command not found".'
    )
    knowledge = Knowledge()
    knowledge.learn("sandbox_create", arguments, CREATED_BUT_FAILED)
    assert knowledge.created == ["train-2"] and knowledge.phases["train-2"] == "Ready"
    assert knowledge.command_failures == {"train-2": "bash: line 1: python: command not found"}


def test_providers_and_routes_can_be_named_by_description() -> None:
    from navagent.fixtures.provider.model._knowledge import Knowledge

    knowledge = Knowledge(
        kinds={"github": "gh", "claude": "anthropic"},
        routes={"vllm-local": {"HINT": "local"}, "claude-route": {"HINT": "claude"}},
    )
    described = knowledge.descriptions
    assert described["github"] == ("provider", "gh")
    assert described["vllm"] == described["local"] == ("route", "vllm-local")
    assert described["claude"] == ("provider", "anthropic")  # a provider wins a tie
    assert "route" not in described  # ordinary words never describe


@pytest.mark.parametrize(
    ("request_text", "rule"),
    [
        # issue 31's classes: the trace names the rule that decided
        ("provider-wise, what have we got?", "rule domain-qualifier: 'provider-wise' -> providers"),
        ("on the sandbox front, what's up?", "rule domain-qualifier -> list for 'what is up'"),
        ("show dev-box but don't delete py-worker", "rule negated-clause-continues-nothing"),
        ("what's left?", "rule list-of-sandboxes -> list"),
        ("remind me which one we looked at", "rule chat-recall"),
        ("spin one up from python:3.12 named t-1", "rule create-needs-an-object -> create"),
    ],
)
def test_the_trace_names_the_rule_that_decided(request_text: str, rule: str) -> None:
    trace = understand(request_text, SANDBOXES, PROVIDERS).trace
    assert any(line.startswith(rule) for line in trace), trace


@pytest.mark.parametrize(
    ("request_text", "kind", "phase"),
    [
        ("show the logs of whichever one is failing", "failing", ""),
        ("the sandbox that is currently erroring", "failing", ""),
        ("describe the one still provisioning", "phase", "Provisioning"),
        ("inspect whatever box is in provisioning", "phase", "Provisioning"),
        ("get whichever sandbox is ready", "phase", "Ready"),
        ("is the sandbox ready?", "focus", ""),  # a question about the sandbox in focus
        ("is the newest one ready?", "newest", ""),
    ],
)
def test_a_target_named_by_a_property_after_its_noun(
    request_text: str, kind: str, phase: str
) -> None:
    reference = find_reference(split_clauses(request_text)[0])
    assert reference is not None and (reference.kind, reference.phase) == (kind, phase)
