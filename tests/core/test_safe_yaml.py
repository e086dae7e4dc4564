"""`safe_yaml`: what a document's aliases may repeat is bounded, and nothing written has one.

Issue 27, section 4: a "billion laughs" document loads in microseconds with
PyYAML (each alias shares its anchor's value) and then grows past 1.5 GB in
whatever walks it. `load_yaml` measures the aliases first and refuses, at
the line of the alias that crosses the limit, in bounded memory.
"""

from __future__ import annotations

import tracemalloc

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.core.safe_yaml import (
    ALIAS_EXPANSION_LIMIT,
    FAST_SAFE_LOADER,
    AliasExpansionError,
    NoAliasDumper,
    NoAliasSafeDumper,
    load_yaml,
)


def laughs(levels: int, *, indent: str = "") -> str:
    """A billion-laughs document: level n is nine aliases of level n-1 (9**levels leaves)."""
    lines = [f'{indent}l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        aliases = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"{indent}l{level}: &l{level} [{aliases}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("loader", [FAST_SAFE_LOADER, yaml.SafeLoader])
def test_a_billion_laughs_is_refused_at_the_alias_that_crosses_the_limit_in_bounded_memory(
    loader: type[yaml.SafeLoader],
) -> None:
    text = "before: 1\n" + laughs(9)
    tracemalloc.start()
    try:
        with pytest.raises(AliasExpansionError) as info:
            load_yaml(text, loader=loader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20, f"refusing took {peak:,} bytes"
    error = info.value
    assert error.problem_mark is not None
    line = text.splitlines()[error.problem_mark.line]
    # l3 expands to 27,064 (nodes and characters): the third *l3 in l4 crosses 100,000.
    assert line.startswith("l4:"), line
    assert error.problem_mark.column == line.index("*l3, *l3, *l3") + len("*l3, *l3, ")
    assert f"past {ALIAS_EXPANSION_LIMIT:,}" in str(error.problem)


def test_a_large_scalar_repeated_counts_its_characters() -> None:
    big = "x" * 30_000
    text = f"a: &a {big}\nb: [*a, *a, *a]\nc: *a\n"
    with pytest.raises(AliasExpansionError) as info:
        load_yaml(text)
    assert info.value.problem_mark is not None and info.value.problem_mark.line == 2


def test_an_alias_inside_the_value_it_names_is_refused() -> None:
    with pytest.raises(AliasExpansionError, match=r"the alias \*me refers to a value it is inside"):
        load_yaml("top:\n  me: &me {child: *me}\n")


def test_small_anchors_and_merge_keys_still_load() -> None:
    text = (
        "defaults: &defaults {model: m, protocols: [openai_chat_completions]}\n"
        "routes:\n  - <<: *defaults\n    name: a\n  - <<: *defaults\n    name: b\n"
    )
    data = load_yaml(text)
    assert [route["name"] for route in data["routes"]] == ["a", "b"]
    assert data["routes"][1]["protocols"] == ["openai_chat_completions"]


def test_text_that_only_looks_like_anchors_loads_as_plain_text() -> None:
    text = "url: http://host/?a=1&b=2\nnote: R&D & more **bold** *not an alias\n"
    assert load_yaml(text) == {
        "url": "http://host/?a=1&b=2",
        "note": "R&D & more **bold** *not an alias",
    }


# Printable text: PyYAML's own round-trip quirks (a NEL in a plain scalar) are not the point here.
words = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)
shared_values = st.recursive(
    st.none() | st.booleans() | st.integers() | words,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(words, inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.parametrize("dumper", [NoAliasDumper, NoAliasSafeDumper])
@settings(max_examples=50, deadline=None)
@given(value=shared_values)
def test_what_the_package_writes_never_holds_an_alias(
    dumper: type[yaml.SafeDumper], value: object
) -> None:
    document = {"first": value, "again": value, "list": [value, value]}  # the same object
    text = yaml.dump(document, Dumper=dumper, allow_unicode=True)
    events = list(yaml.parse(text, Loader=yaml.SafeLoader))
    assert not any(isinstance(event, yaml.AliasEvent) for event in events)
    assert not any(getattr(event, "anchor", None) for event in events)
    assert load_yaml(text) == document


@pytest.mark.parametrize(
    "text",
    [
        "&a [1]\n",
        "a: &a 1\nb: *a\n",
        "- &a 1\n- *a\n",
        "{a: &a 1, b: *a}\n",
        "[&a 1, *a]\n",
        '{"a":&a 1, "b": *a}\n',
        "[1,\n  &a 2]\n",
        "? &a k\n: v\n",
        "--- &a [1, *a]\n",
        "!!seq &a [1]\n",
        "\ufeff&a [1]\n",
    ],
)
def test_every_place_an_anchor_can_stand_is_measured(text: str) -> None:
    from navagent.core.safe_yaml import _may_hold_anchor

    anchors = [
        getattr(event, "anchor", None)
        for event in yaml.parse(text, Loader=yaml.SafeLoader)
        if isinstance(event, yaml.NodeEvent) and not isinstance(event, yaml.AliasEvent)
    ]
    anchors = [anchor for anchor in anchors if anchor]
    assert anchors, "the example holds an anchor"
    assert _may_hold_anchor(text)
