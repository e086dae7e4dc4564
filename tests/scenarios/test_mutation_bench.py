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


# --- planted defects --------------------------------------------------------------------------


def test_every_planted_defect_still_applies_once_and_compiles(mutation: ModuleType) -> None:
    defects = mutation.load_defects()
    assert len(defects) >= 30
    for defect in defects:
        source = (ROOT / defect.module).read_text(encoding="utf-8")
        planted = defect.apply(source)  # raises unless `before` occurs exactly once
        assert planted != source, defect.id
        compile(planted, defect.module, "exec")  # a defect, not a syntax error


def test_a_defect_whose_text_moved_is_named(mutation: ModuleType) -> None:
    defect = mutation.Defect("gone", "core/agent.py", "no such text", "x", "nothing")
    with pytest.raises(ValueError, match="gone: core/agent.py holds its text 0 times"):
        defect.apply("print(1)\n")
    twice = mutation.Defect("twice", "m.py", "a", "b", "n")
    with pytest.raises(ValueError, match="2 times"):
        twice.apply("a a")


def test_a_planted_defect_is_restored_after_its_run(
    mutation: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "m.py"
    module.write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    defect = mutation.Defect("v", "m.py", "VALUE = 1", "VALUE = 2", "n")
    # The harness stand-in fails only while the defect is planted.
    check = [sys.executable, "-c", "import m, sys; sys.exit(m.VALUE != 1)"]
    assert mutation.plant(defect, check, timeout=60) == "caught"
    assert module.read_text(encoding="utf-8") == "VALUE = 1\n"
    harmless = mutation.Defect("w", "m.py", "VALUE = 1", "VALUE = 1  # same", "n")
    assert mutation.plant(harmless, check, timeout=60) == "missed"


def test_a_modules_draw_depends_on_that_module_alone(mutation: ModuleType, tmp_path: Path) -> None:
    """Another module's mutants (here: none, or all of core/history.py's) never move the draw."""
    from cosmic_ray.work_db import WorkDB, use_db

    def drawn(modules: tuple[str, ...]) -> set[tuple[str, str, int]]:
        session = tmp_path / f"{len(modules)}.sqlite"
        mutation.init_session(session, 3, 42, modules)
        with use_db(str(session), WorkDB.Mode.open) as db:
            skipped = {job for job, _ in db.results}
            return {
                mutation._item_key(item)
                for item in db.work_items
                if item.job_id not in skipped and "compaction" in str(item.mutations[0].module_path)
            }

    alone = drawn(("core/compaction.py",))
    assert len(alone) == 3
    assert drawn(("core/history.py", "core/compaction.py")) == alone
