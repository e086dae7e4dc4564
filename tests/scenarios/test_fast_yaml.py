"""The cassette loader gives exactly what PyYAML's safe loader gives, errors included."""

from __future__ import annotations

import datetime

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.fixtures.harness.scenarios import _fast_yaml
from tests.scenarios.conftest import ROOT

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.sampled_from(["yes", "No", "on", "~", "1e3", "0x1F", "0o7", "12:30", "2026-03-04", "<<"])
    | st.dates()
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    ),
    max_leaves=25,
)


def _same(text: str) -> None:
    try:
        expected = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        with pytest.raises(type(exc)) as raised:
            _fast_yaml.load(text)
        assert str(raised.value) == str(exc)
        return
    loaded = _fast_yaml.load(text)
    assert loaded == expected
    assert repr(loaded) == repr(expected)  # types too: 1 is not 1.0 is not True


@settings(max_examples=120, deadline=None)
@given(data=_DATA, style=st.sampled_from([None, False, True]))
def test_dumped_data_loads_the_same(data: object, style: bool | None) -> None:
    _same(yaml.safe_dump(data, default_flow_style=style, allow_unicode=True))


@pytest.mark.parametrize(
    "text",
    [
        "a: &x [1, 2]\nb: *x\n",  # an alias: one object, twice
        "base: &b {k: 1}\nderived:\n  <<: *b\n  j: 2\n",  # a merge key
        "? [1, 2]\n: v\n",  # an unhashable key
        "!!python/object:os.system x\n",  # a tag the safe loader refuses
        "a: !!str 12\nb: !!int '7'\nc: !!binary aGk=\nd: !!set {x, y}\ne: 2001-12-14t21:59:43Z\n",
        "- !!omap [{a: 1}, {b: 2}]\n",
        "a: 1\na: 2\n",  # a duplicate key: the last wins
        "",
        "[unclosed\n",
    ],
)
def test_documents_beyond_plain_data_load_as_pyyaml_loads_them(text: str) -> None:
    _same(text)


def test_an_alias_is_the_same_object_as_its_anchor_even_inside_itself() -> None:
    loaded = _fast_yaml.load("a: &x [1, 2]\nb: *x\n")
    assert loaded["a"] is loaded["b"]
    recursive = _fast_yaml.load("&r [1, *r]\n")
    assert recursive[1] is recursive and recursive[0] == 1


@pytest.mark.slow
def test_every_committed_yaml_file_loads_the_same() -> None:
    files = sorted(ROOT.glob("cassettes/**/*.yaml")) + sorted(ROOT.glob("scenarios/*.yaml"))
    assert len(files) > 90
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert _fast_yaml.load(text) == yaml.load(text, Loader=_Loader), path
    assert isinstance(_fast_yaml.load("d: 2026-03-04")["d"], datetime.date)
