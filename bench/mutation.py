"""What the harness alone catches: mutation testing with cosmic-ray (issue 42).

Plants one small defect (a mutant) at a time in the code the harness is
meant to guard and runs the harness alone against it: every committed
scenario replayed on every format through the pytest plugin (its snapshots
included), then the fault sweep at a small budget. A mutant is killed when
that fails (or hangs past the timeout), and survives when it passes.

Modules (`MODULES`): the agent loop, the neutral conversion, tool execution
and the barrier (`core/agent.py` holds `call_batches`), every format's
request and stream translator, the gateway's retry, failover and error
mapping, and sessions (resume, repair, compaction).

Why cosmic-ray and not mutmut 3: mutmut 3 copies the sources into
`mutants/` and imports them from there under their folder names, while
here the folders install as `navagent.*` through setuptools' package-dir;
cosmic-ray rewrites the real file in place (restoring it after each run),
which an editable install picks up as it is.

Sampling: the full set is thousands of mutants at ~30 s each, so
`--per-module` mutants of cosmic-ray's default operators are drawn per
module, from `--seed` and the module's name: a module's draw does not
change when another module does. A mutant that does not parse (the `*` of
a signature made `<<`) or only changes annotations or docstrings is not
drawn: neither is a defect a person could plant.
Mutants judged equivalent (no behaviour changes) are listed, with the reason,
in `bench/mutation_equivalent.toml`: drawn, not run, left out of the rate.

Output: per module, killed/non-equivalent with a 95 % Wilson interval; the
total; the survivors by operator class, each with its line before and after.
The session (a cosmic-ray work database) is kept at `--session`, so an
interrupted run resumes and `cr-report SESSION` reads it.

It mutates the checkout it runs in: run it in a clean one (an interrupted
run can leave one module mutated: `git checkout -- core gateway`).

Planted defects (`planted`): cosmic-ray's operators draw mutants nobody
writes (`<` made `is not`), so a second sample is written by hand in
`bench/planted_defects.toml`: realistic defects a user would notice (a wrong
usage line, text lost from a request, a read run before its create, a 429
no longer retried, no failover after a revoked key, ...), each an exact
edit, planted one at a time and judged by the same harness.

Usage:
    nice -n 10 .venv/bin/python bench/mutation.py run [--per-module 3] [--seed 42]
    nice -n 10 .venv/bin/python bench/mutation.py planted [--only ID ...]
    .venv/bin/python bench/mutation.py report [--session PATH]
    .venv/bin/python bench/mutation.py harness [--budget 5]   # the test command alone
"""

from __future__ import annotations

import argparse
import ast
import math
import random
import re
import shlex
import subprocess
import sys
import time
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT_FILE = ROOT / "bench" / "mutation_equivalent.toml"
DEFECTS_FILE = ROOT / "bench" / "planted_defects.toml"
DEFAULT_SESSION = ROOT / ".mutation" / "session.sqlite"
MODULES = (
    "core/agent.py",
    "core/convert.py",
    "core/nav_cli.py",
    "core/tools.py",
    "gateway/openai/request.py",
    "gateway/openai/stream.py",
    "gateway/openai_responses/request.py",
    "gateway/openai_responses/stream.py",
    "gateway/anthropic/request.py",
    "gateway/anthropic/stream.py",
    "gateway/gemini/request.py",
    "gateway/gemini/stream.py",
    "gateway/dispatch.py",
    "gateway/errors.py",
    "gateway/upstream.py",
    "core/sessions.py",
    "core/history.py",
    "core/compaction.py",
)
"""The code the harness guards, relative to the repository root."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval."""


def wilson(killed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of `killed / total`.

    Hand-rolled (five lines of the textbook formula) rather than importing
    statsmodels, which would bring numpy, scipy and pandas into a bench script.
    """
    if total == 0:
        return 0.0, 1.0
    p = killed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


# -- the test command ------------------------------------------------------------------------


def harness(budget: int, seed: int) -> int:
    """Replays on every format (fail fast), then the sweep at `budget`; 0 when all pass."""
    replay = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "scenarios",
            "-q",
            "-x",
            "-n",
            "0",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        check=False,
    )
    if replay.returncode != 0:
        return 1
    from navagent.core.wire_formats import FORMAT_IDS
    from navagent.fixtures.harness import discover_scenarios, plan_replays
    from navagent.fixtures.harness.faults._invariants import INVARIANTS
    from navagent.fixtures.harness.sweep._report import grid_text, reproducer
    from navagent.fixtures.harness.sweep._run import GridResult, SweepOptions, run_sweep

    class Failed(Exception):
        pass

    def stop_at_first(grid: GridResult) -> None:
        if grid.error or grid.violations:
            print(grid_text(grid))
            for result in grid.violations:
                print(reproducer(grid, result))
            raise Failed(grid.job.label)

    jobs = plan_replays(discover_scenarios([ROOT / "scenarios"]), FORMAT_IDS)
    options = SweepOptions(budget=budget, seed=seed, invariants=dict(INVARIANTS))
    try:
        run_sweep(jobs, options, on_grid=stop_at_first)
    except Failed as failed:
        print(f"sweep: {failed} broke an invariant")
        return 1
    print(f"sweep: {len(jobs)} scenario x format at budget {budget}, no violation")
    return 0


# -- sampling --------------------------------------------------------------------------------


class _Plain(ast.NodeTransformer):
    """An AST without annotations and docstrings: what a module does, not how it is typed."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        node.annotation = ast.Constant(None)
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return node

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        node.returns = None
        return self.generic_visit(node)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return ast.Pass()  # a docstring or a bare string: not code
        return self.generic_visit(node)


def _plain(code: str) -> str | None:
    try:
        return ast.dump(_Plain().visit(ast.parse(code)))
    except SyntaxError:
        return None


def not_a_defect(original: str, mutated: str) -> bool:
    """True when `mutated` is no program (`*` of a signature made `<<`) or differs only in typing.

    Neither is a defect a person could plant: one does not import, the other
    changes annotations or docstrings only.
    """
    plain = _plain(mutated)
    return plain is None or plain == _plain(original)


@dataclass(frozen=True)
class Equivalent:
    """A mutant judged equivalent: module, operator, the original line, and why.

    `mutated` (the line after the mutation), when given, narrows the entry to one of
    several mutants of that operator on one line (a line with two `<`).
    """

    module: str
    operator: str
    line: str
    reason: str
    mutated: str = ""

    def matches(self, module: str, operator: str, line: str, mutated: str = "") -> bool:
        """True for a mutant of this module and operator on this (stripped) line."""
        if self.mutated and self.mutated.strip() != mutated.strip():
            return False
        return (module, operator, line.strip()) == (self.module, self.operator, self.line.strip())


def load_equivalents(path: Path = EQUIVALENT_FILE) -> list[Equivalent]:
    """The `[[equivalent]]` entries of `path` (none when it does not exist).

    Raises:
        SystemExit: an entry lacks a key; the message names it.
    """
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("equivalent", [])
    found = []
    for number, entry in enumerate(entries, start=1):
        missing = [key for key in ("module", "operator", "line", "reason") if not entry.get(key)]
        if missing:
            raise SystemExit(f"{path.name}: entry {number} lacks {', '.join(missing)}")
        found.append(
            Equivalent(
                entry["module"],
                entry["operator"],
                entry["line"],
                entry["reason"],
                entry.get("mutated", ""),
            )
        )
    return found


def _source_line(module: str, line: int) -> str:
    return (ROOT / module).read_text(encoding="utf-8").splitlines()[line - 1].strip()


def _mutated(module: str, operator_name: str, occurrence: int) -> str | None:
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    code = (ROOT / module).read_text(encoding="utf-8")
    operator = cosmic_ray.plugins.get_operator(operator_name)()
    mutated: str | None = mutate_code(code, operator, occurrence)
    return mutated


def init_session(
    session: Path, per_module: int, seed: int, modules: tuple[str, ...] = MODULES
) -> None:
    """Every mutant of `modules` into a fresh work database; all but the sample marked skipped."""
    import parso  # noqa: F401  (cosmic-ray's operator plugins import parso half-way otherwise)
    from cosmic_ray.commands import init
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    session.parent.mkdir(parents=True, exist_ok=True)
    equivalents = load_equivalents()
    with use_db(str(session), WorkDB.Mode.create) as db:
        init([ROOT / module for module in modules], db, {})  # `_module` makes them relative
        by_module: dict[str, list[Any]] = defaultdict(list)
        for item in db.work_items:
            by_module[_module(item.mutations[0].module_path)].append(item)
        skipped: list[str] = []
        for module in modules:
            items = draw_order(by_module[module], module, seed)
            original = (ROOT / module).read_text(encoding="utf-8")
            chosen = 0
            for item in items:
                mutation = item.mutations[0]
                if chosen >= per_module:
                    skipped.append(item.job_id)
                    continue
                mutated = _mutated(module, mutation.operator_name, mutation.occurrence)
                if mutated is None or not_a_defect(original, mutated):
                    skipped.append(item.job_id)  # not drawn: no mutant, no program, typing only
                    continue
                chosen += 1
                line = _source_line(module, mutation.start_pos[0])
                after = mutated.splitlines()[mutation.start_pos[0] - 1].strip()
                reason = next(
                    (
                        e.reason
                        for e in equivalents
                        if e.matches(module, mutation.operator_name, line, after)
                    ),
                    None,
                )
                if reason is not None:
                    db.set_result(
                        item.job_id,
                        WorkResult(WorkerOutcome.SKIPPED, output=f"equivalent: {reason}"),
                    )
            print(f"{module:<40} {len(items):5} mutants, {chosen} drawn")
        db.set_multiple_results(skipped, WorkResult(WorkerOutcome.SKIPPED, output="not drawn"))


def draw_order(items: list[Any], module: str, seed: int) -> list[Any]:
    """A module's mutants in the order they are drawn, from the seed and that module alone.

    One generator per module, not one shared by all: with a shared one, a
    change that adds or removes a mutant in one module reshuffled every module
    after it, so a before/after comparison drew different mutants in code
    that had not changed.
    """
    ordered = sorted(items, key=_item_key)  # uuid job ids: sort for the seed
    random.Random(f"{seed}:{module}").shuffle(ordered)
    return ordered


def _item_key(item: Any) -> tuple[str, str, int]:
    mutation = item.mutations[0]
    return (_module(mutation.module_path), mutation.operator_name, mutation.occurrence)


def _module(path: Any) -> str:
    return Path(path).resolve().relative_to(ROOT).as_posix()


# -- running and reporting -------------------------------------------------------------------


def execute(session: Path, command: str, timeout: float) -> None:
    """Run the harness against every drawn mutant without a result yet."""
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(session), WorkDB.Mode.open) as db:
        pending = sorted(db.pending_work_items, key=_item_key)
        for number, item in enumerate(pending, start=1):
            mutation = item.mutations[0]
            started = time.monotonic()
            result = mutate_and_test(item.mutations, command, timeout)
            db.set_result(item.job_id, result)
            where = f"{_module(mutation.module_path)}:{mutation.start_pos[0]}"
            outcome = result.test_outcome or result.worker_outcome
            print(
                f"[{number}/{len(pending)}] {where:<42} {mutation.operator_name:<48}"
                f" {outcome} in {time.monotonic() - started:.0f}s",
                flush=True,
            )


_OPERATOR_CLASS = re.compile(r"^core/([A-Za-z]+?)(?:_|$)")


def _diff_lines(diff: str) -> tuple[str, str]:
    removed = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return (removed[0] if removed else "", added[0] if added else "")


@dataclass
class Tally:
    """What a session found, per module."""

    rows: dict[str, list[int]]
    """module -> [killed, run, equivalent]."""
    survivors: dict[str, list[str]]
    """operator class -> one entry per surviving mutant (where, operator, line before/after)."""
    equivalent: list[str]
    pending: int = 0


def tally(session: Path) -> Tally:
    """Count the session's results by module; list survivors by operator class."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    found = Tally({module: [0, 0, 0] for module in MODULES}, defaultdict(list), [])
    equivalents = load_equivalents()
    with use_db(str(session), WorkDB.Mode.open) as db:
        results = dict(db.results)
        for item in db.work_items:
            mutation = item.mutations[0]
            module = _module(mutation.module_path)
            result = results.get(item.job_id)
            if result is None:
                found.pending += 1
            elif result.worker_outcome == WorkerOutcome.SKIPPED:
                if (result.output or "").startswith("equivalent"):
                    found.rows[module][2] += 1
                    found.equivalent.append(f"{module}:{mutation.start_pos[0]} {result.output}")
            elif result.worker_outcome != WorkerOutcome.NO_TEST:
                before, after = _diff_lines(result.diff or "")
                reason = next(
                    (
                        e.reason
                        for e in equivalents
                        if e.matches(module, mutation.operator_name, before, after)
                    ),
                    None,
                )
                if reason is not None:  # judged after it ran: the file is read at report time too
                    found.rows[module][2] += 1
                    found.equivalent.append(
                        f"{module}:{mutation.start_pos[0]} equivalent: {reason}"
                    )
                    continue
                found.rows[module][1] += 1
                if result.test_outcome != TestOutcome.SURVIVED:
                    found.rows[module][0] += 1
                    continue
                match = _OPERATOR_CLASS.match(mutation.operator_name)
                kind = match.group(1) if match else mutation.operator_name
                found.survivors[kind].append(
                    f"{module}:{mutation.start_pos[0]} {mutation.operator_name}\n"
                    f"      - {before}\n      + {after}"
                )
    return found


def report(session: Path) -> int:
    """Print the kill rate per module with its interval, and the survivors by class."""
    found = tally(session)
    print(f"{'module':<40} {'killed':>6} {'of':>3} {'equiv':>5} {'rate':>6}  95% Wilson")
    killed_all = run_all = 0
    for module, (killed, run, equiv) in found.rows.items():
        if not run and not equiv:
            continue
        killed_all, run_all = killed_all + killed, run_all + run
        low, high = wilson(killed, run)
        shown = f"{killed / run:6.0%}" if run else "     -"
        print(f"{module:<40} {killed:>6} {run:>3} {equiv:>5} {shown}  [{low:.0%}, {high:.0%}]")
    low, high = wilson(killed_all, run_all)
    rate = killed_all / run_all if run_all else 0.0
    print(
        f"{'all':<40} {killed_all:>6} {run_all:>3} {len(found.equivalent):>5} {rate:6.1%}"
        f"  [{low:.1%}, {high:.1%}]"
    )
    if found.pending:
        print(f"{found.pending} drawn mutants not run yet")
    for kind, lines in sorted(found.survivors.items()):
        print(f"\nsurvivors, {kind} ({len(lines)}):")
        for line in lines:
            print(f"  {line}")
    if found.equivalent:
        print("\nequivalent (bench/mutation_equivalent.toml):")
        for line in found.equivalent:
            print(f"  {line}")
    return 0


# -- planted defects -------------------------------------------------------------------------


@dataclass(frozen=True)
class Defect:
    """One realistic defect: where, the exact text before and after, what a user notices."""

    id: str
    module: str
    before: str
    after: str
    noticed: str

    def apply(self, source: str) -> str:
        """`source` with the defect planted.

        Raises:
            ValueError: `before` does not occur exactly once in `source`.
        """
        count = source.count(self.before)
        if count != 1:
            raise ValueError(f"{self.id}: {self.module} holds its text {count} times, not once")
        return source.replace(self.before, self.after)


def load_defects(path: Path = DEFECTS_FILE) -> list[Defect]:
    """The `[[defect]]` entries of `path`.

    Raises:
        SystemExit: an entry lacks a key, or two share an id; the message names it.
    """
    keys = ("id", "module", "before", "after", "noticed")
    found: list[Defect] = []
    for number, entry in enumerate(tomllib.loads(path.read_text("utf-8"))["defect"], start=1):
        missing = [key for key in keys if not entry.get(key)]
        if missing:
            raise SystemExit(f"{path.name}: defect {number} lacks {', '.join(missing)}")
        if any(defect.id == entry["id"] for defect in found):
            raise SystemExit(f"{path.name}: defect {number} repeats the id {entry['id']!r}")
        found.append(Defect(*(entry[key] for key in keys)))
    return found


def plant(defect: Defect, command: list[str], timeout: float) -> str:
    """Plant `defect`, run `command`, restore the file: "caught", "missed" or "timeout"."""
    path = ROOT / defect.module
    original = path.read_text(encoding="utf-8")
    path.write_text(defect.apply(original), encoding="utf-8")
    try:
        result = subprocess.run(
            command,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    finally:
        path.write_text(original, encoding="utf-8")
    return "missed" if result.returncode == 0 else "caught"


def planted(only: list[str] | None, budget: int, timeout: float) -> int:
    """Run the harness against each planted defect; print what it caught and missed."""
    defects = [d for d in load_defects() if only is None or d.id in only]
    command = [sys.executable, str(Path(__file__).resolve()), "harness", f"--budget={budget}"]
    missed: list[Defect] = []
    for number, defect in enumerate(defects, start=1):
        started = time.monotonic()
        outcome = plant(defect, command, timeout)
        if outcome == "missed":
            missed.append(defect)
        print(
            f"[{number}/{len(defects)}] {defect.id:<34} {outcome:<8}"
            f" {time.monotonic() - started:4.0f}s",
            flush=True,
        )
    caught = len(defects) - len(missed)
    low, high = wilson(caught, len(defects))
    print(
        f"\ncaught {caught} of {len(defects)} ({caught / max(1, len(defects)):.0%},"
        f" 95% Wilson [{low:.0%}, {high:.0%}])"
    )
    for defect in missed:
        print(f"  missed {defect.id} ({defect.module}): {defect.noticed}")
    return 0


def main() -> int:
    """Parse the command line and run the subcommand."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="draw the sample, run the harness on each, report")
    run.add_argument("--per-module", type=int, default=3)
    run.add_argument("--seed", type=int, default=42)
    run.add_argument("--budget", type=int, default=5, help="the sweep's points per grid")
    run.add_argument("--timeout", type=float, default=240.0, help="seconds per mutant")
    run.add_argument("--session", type=Path, default=DEFAULT_SESSION)
    run.add_argument("--resume", action="store_true", help="run what the session has not run")
    run.add_argument("--modules", nargs="+", choices=MODULES, default=list(MODULES))
    rep = sub.add_parser("report", help="print the session's figures")
    rep.add_argument("--session", type=Path, default=DEFAULT_SESSION)
    hand = sub.add_parser("planted", help="run the harness against each planted defect")
    hand.add_argument("--only", nargs="+", default=None, metavar="ID")
    hand.add_argument("--budget", type=int, default=5, help="the sweep's points per grid")
    hand.add_argument("--timeout", type=float, default=600.0, help="seconds per defect")
    test = sub.add_parser("harness", help="the test command: replays, then the sweep")
    test.add_argument("--budget", type=int, default=5)
    test.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "harness":
        return harness(args.budget, args.seed)
    if args.command == "report":
        return report(args.session)
    edited = args.modules if args.command == "run" else {d.module for d in load_defects()}
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", *edited],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    if dirty.strip():
        print(f"uncommitted changes in the modules to mutate:\n{dirty}", file=sys.stderr)
        return 2
    if args.command == "planted":
        return planted(args.only, args.budget, args.timeout)
    if not args.resume:
        init_session(args.session, args.per_module, args.seed, tuple(args.modules))
    command = shlex.join(
        [sys.executable, str(Path(__file__).resolve()), "harness", "--budget", str(args.budget)]
    )
    execute(args.session, command, args.timeout)
    return report(args.session)


if __name__ == "__main__":
    sys.exit(main())
