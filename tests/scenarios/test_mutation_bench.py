"""bench/mutation.py's arithmetic and its choice of mutants (issue 42)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mutation() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "bench" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_mutation"] = module
    spec.loader.exec_module(module)
    return module


def test_wilson_interval_matches_the_textbook_values(mutation: ModuleType) -> None:
    low, high = mutation.wilson(27, 30)
    assert (round(low, 3), round(high, 3)) == (0.744, 0.965)
    assert mutation.wilson(0, 0) == (0.0, 1.0)
    low, high = mutation.wilson(3, 3)
    assert high == 1.0 and round(low, 3) == 0.439  # n / (n + z**2)


def test_mutants_that_are_no_defect_are_not_drawn(mutation: ModuleType) -> None:
    code = 'def f(a: int, *, b: int | None = None) -> int:\n    """Doc."""\n    return a < 3\n'
    typing_only = code.replace("int | None", "int & None")
    no_program = code.replace("*, b", "<<, b")
    docstring = code.replace("Doc.", "Dac.")
    real = code.replace("a < 3", "a <= 3")
    assert mutation.not_a_defect(code, typing_only)
    assert mutation.not_a_defect(code, no_program)
    assert mutation.not_a_defect(code, docstring)
    assert not mutation.not_a_defect(code, real)


def test_equivalents_match_on_module_operator_and_line(
    mutation: ModuleType, tmp_path: Path
) -> None:
    found = mutation.load_equivalents()  # the committed file loads
    assert all(entry.reason for entry in found)
    entry = mutation.Equivalent("core/x.py", "core/AddNot", "if a:", "why")
    assert entry.matches("core/x.py", "core/AddNot", "    if a:  ")
    assert not entry.matches("core/x.py", "core/AddNot", "if b:")
    # Two mutants of one operator on one line: `mutated` names the equivalent one.
    line = "while a < b and c < d:"
    one = mutation.Equivalent("m.py", "core/Lt_IsNot", line, "why", "while a is not b and c < d:")
    assert one.matches("m.py", "core/Lt_IsNot", line, "while a is not b and c < d:")
    assert not one.matches("m.py", "core/Lt_IsNot", line, "while a < b and c is not d:")
    broken = tmp_path / "eq.toml"
    broken.write_text('[[equivalent]]\nmodule = "m"\noperator = "o"\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="entry 1 lacks line, reason"):
        mutation.load_equivalents(broken)
