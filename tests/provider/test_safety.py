"""No create or delete unless the current message asks for it (issue 24, most urgent).

A property over generated phrasings: after any history, including
destructive turns, a last message that negates a destructive verb, repeats
("again"), or follows up without a destructive verb of its own never leads to
a `sandbox_create` or `sandbox_delete` call; nor does a question about one
("should I delete it?"). What a delete is told to leave out is never deleted.
Each example runs the whole conversation against a fresh nav-sim cluster
(talk.py). The controls prove the check can fail: the same verbs, not
negated, do act.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.provider.talk import talk

MUTATING = ("sandbox_create", "sandbox_delete")

HISTORIES = (
    (),
    ("list my sandboxes",),
    ("show me dev-box",),
    ("delete the newest one",),
    ("list my sandboxes", "delete the last one"),
    ("create a sandbox named a-1", "create a sandbox named a-2"),
    ("create a sandbox named a-1", "delete it"),
    ("delete py-worker", "show me gpu-trainer"),
    ("which sandbox is failing?",),
)
NEGATORS = (
    "don't",
    "do not",
    "please don't",
    "never",
    "you must not",
    "I said do not",
    "dont",
    "we should not",
)
VERBS = (
    "delete",
    "remove",
    "destroy",
    "kill",
    "nuke",
    "wipe",
    "erase",
    "create",
    "make",
    "spin up",
    "need",
    "want another",
)
GERUNDS = ("deleting", "removing", "destroying", "killing", "wiping", "erasing", "creating")
TARGETS = (
    "it",
    "dev-box",
    "them",
    "anything",
    "the newest one",
    "the first one I made",
    "all of them",
    "a sandbox",
    "a new sandbox named z-9",
)
TAILS = (
    "",
    ", just describe it",
    ". list my sandboxes",
    ", show its logs instead",
    " please",
    ", what providers exist?",
    " until I say so",
)
FOLLOW_UPS = (
    "again",
    "list them again",
    "show them again",
    "and now?",
    "same again please",
    "and py-worker?",
    "what about the first one?",
    "and gpu-trainer",
    "them",
    "all of them",
    "the one I created",
    "the first one I made",
    "and the other one?",
    "ok",
    "now the logs",
    "what was the first sandbox I asked about?",
    "the last one I deleted?",
    "which was the second one you created?",
    "the second provider we looked at",
    "just tell me the last one you removed",
)


def _negated() -> st.SearchStrategy[str]:
    plain = st.builds(
        lambda n, v, t, tail: f"{n} {v} {t}{tail}",
        st.sampled_from(NEGATORS),
        st.sampled_from(VERBS),
        st.sampled_from(TARGETS),
        st.sampled_from(TAILS),
    )
    gerund = st.builds(
        lambda lead, g, t, rest: f"{lead} {g} {t}, {rest}",
        st.sampled_from(("without", "instead of", "rather than", "never mind")),
        st.sampled_from(GERUNDS),
        st.sampled_from(TARGETS),
        st.sampled_from(("describe it", "show me dev-box", "list them", "show its logs")),
    )
    return st.one_of(plain, gerund)


def _asked_about() -> st.SearchStrategy[str]:
    return st.builds(
        lambda lead, v, t: f"{lead} {v} {t}?",
        st.sampled_from(
            (
                "should I",
                "what happens if I",
                "what would happen if I",
                "can I",
                "do I need to",
                "do we need",
                "what if I",
                "I wonder whether to",
            )
        ),
        st.sampled_from(VERBS),
        st.sampled_from(TARGETS),
    )


LAST = st.one_of(_negated(), _asked_about(), st.sampled_from(FOLLOW_UPS))


def _mutations(history: tuple[str, ...], last: str) -> list[str]:
    turn = talk([*history, last])[-1]
    return [f"{name} {args}" for r in turn.rounds for name, args in r if name in MUTATING]


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(history=st.sampled_from(HISTORIES), last=LAST)
def test_no_create_or_delete_unless_this_message_asks(history: tuple[str, ...], last: str) -> None:
    assert _mutations(history, last) == []


@pytest.mark.parametrize(
    ("history", "last", "call"),
    [
        ((), "delete dev-box", "sandbox_delete"),
        (("show me dev-box",), "erase it", "sandbox_delete"),
        (("create a sandbox named a-1",), "remove the first one I made", "sandbox_delete"),
        ((), "spin up a sandbox called z-9", "sandbox_create"),
        ((), "don't list them, delete py-worker", "sandbox_delete"),
        ((), "I need a fresh sandbox, call it z-9", "sandbox_create"),
        (("list my sandboxes",), "delete the one that crashed", "sandbox_delete"),
    ],
)
def test_the_same_verbs_not_negated_do_act(history: tuple[str, ...], last: str, call: str) -> None:
    assert [m.split()[0] for m in _mutations(history, last)] == [call]


SANDBOXES = ("dev-box", "gpu-trainer", "py-worker")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    kept=st.lists(st.sampled_from(SANDBOXES), min_size=1, max_size=2, unique=True),
    form=st.sampled_from(
        (
            "delete everything except {kept}",
            "delete all but {kept}",
            "keep {kept}, delete the rest",
            "delete all my sandboxes except {kept}",
            "remove every sandbox besides {kept}",
            "wipe them all, but keep {kept}",
        )
    ),
    listed=st.booleans(),
)
def test_what_a_delete_leaves_out_is_never_deleted(
    kept: list[str], form: str, listed: bool
) -> None:
    history = ("list my sandboxes",) if listed else ()
    deleted = {m.split('"')[3] for m in _mutations(history, form.format(kept=" and ".join(kept)))}
    assert deleted == set(SANDBOXES) - set(kept)
