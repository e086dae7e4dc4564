"""The diff a one-line system-prompt change re-records as (issue 40 §1), by class of line.

What a team does, in a temporary project: copy scenarios of this repository
(five by default, `--all` for every one) and set the project-wide
`nav_system_prompt` to the agent's default prompt; record every format from
the simulator (`nav scenario record ... --provider all --sim`) and commit;
change one line of the prompt; run `nav scenario replay` and the re-record
commands it prints; check that a replay passes again; then count the lines
`git diff` shows, pairing each removed line with the added line that replaced
it, by what differs between the two:

- ids: only simulated ids, tool-call ids, signatures or encrypted payloads
  (runs of 10 or more letters and digits that are not a number);
- tokens: only numbers (token counts, and the cache figures they make);
- ids+tokens: both, and nothing else;
- prompt: the line carries the changed prompt line (old or new);
- other: anything else, and lines with no partner (printed below the
  table; an `end: silent` the recorder wrote for a complete answer when the
  machine was too busy to drain it in time is one).

A pair counts once (a changed line), as the issue counts them; `git diff
--numstat` gives the added and removed totals beside.

Usage: `.venv/bin/python bench/rerecord_diff.py [SCENARIO ...] [--all] [--keep DIR]`.
It runs the `nav` of the Python running it (the tree installed in that venv),
so run it on the branch whose simulator you measure.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from navagent.core.prompts import default_system_prompt

ROOT = Path(__file__).resolve().parents[1]
NAV = Path(sys.executable).with_name("nav")
DEFAULT_SCENARIOS = (
    "providers",
    "diagnose-failing",
    "parallel-logs",
    "thinking-round-trip",
    "reasoning-tool-loop",
)
OLD_LINE = "- Answer briefly and in plain text."
NEW_LINE = "- Answer briefly, in plain text."
CLASSES = ("ids", "tokens", "ids+tokens", "prompt", "other")
_WORD = re.compile(r"([A-Za-z0-9_+/=-]+)")
_GIT = (
    "git",
    "-c",
    "user.name=bench",
    "-c",
    "user.email=bench@invalid",
    "-c",
    "commit.gpgsign=false",
)


def _run(project: Path, *argv: str, check: bool = True) -> str:
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        sys.exit(f"{shlex.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def _setup(project: Path, scenarios: list[str]) -> None:
    """The team's project: scenario files, its prompt file and the setting naming it."""
    (project / "scenarios").mkdir(parents=True)
    for scenario in scenarios:
        source = ROOT / "scenarios" / f"{scenario}.yaml"
        if not source.is_file():
            sys.exit(f"no scenario {scenario!r} in {ROOT / 'scenarios'}")
        shutil.copy(source, project / "scenarios")
    prompt = default_system_prompt("{cluster}")
    if OLD_LINE not in prompt.splitlines():
        sys.exit(f"the default prompt has no line {OLD_LINE!r} to change; update the bench")
    (project / "prompt.md").write_text(prompt, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nnav_system_prompt = "prompt.md"\n', encoding="utf-8"
    )


def _printed_commands(output: str) -> list[list[str]]:
    """The `nav scenario record` commands a failed replay prints to record again."""
    return [
        shlex.split(line.strip())
        for line in output.splitlines()
        if line.strip().startswith("nav scenario record ")
        and not line.startswith((" " * 6, "\t"))  # not a block's own `re-record with:` line
    ]


def _kind(old: str, new: str) -> str:
    """What differs between a removed line and the added line replacing it."""
    if OLD_LINE[2:] in old or NEW_LINE[2:] in new:
        return "prompt"
    old_parts, new_parts = _WORD.split(old), _WORD.split(new)
    if len(old_parts) != len(new_parts):
        return "other"
    kinds = set()
    for index, (a, b) in enumerate(zip(old_parts, new_parts, strict=True)):
        if a == b:
            continue
        if index % 2 == 0:  # a separator differs
            return "other"
        if a.isdigit() and b.isdigit():
            kinds.add("tokens")
        elif len(a) >= 10 and len(b) >= 10:
            kinds.add("ids")
        else:
            return "other"
    return "+".join(sorted(kinds)) or "other"


def classify(old: list[str], new: list[str], others: list[str] | None = None) -> Counter[str]:
    """Changed lines of one file by class (a replaced pair counts once); `others` gets the rest."""
    counts: Counter[str] = Counter()
    others = [] if others is None else others
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed, added = old[a1:a2], new[b1:b2]
        for a, b in zip(removed, added, strict=False):
            kind = _kind(a, b)
            counts[kind] += 1
            if kind == "other":
                others.append(f"- {a}\n+ {b}")
        for index, line in enumerate(removed[len(added) :] + added[len(removed) :]):
            if _kind(line, line) == "prompt":
                counts["prompt"] += 1
            else:
                counts["other"] += 1
                others.append(f"{'-' if index < len(removed) - len(added) else '+'} {line}")
    return counts


def measure(project: Path, scenarios: list[str]) -> None:
    _setup(project, scenarios)
    _run(project, str(NAV), "scenario", "record", *scenarios, "--provider", "all", "--sim")
    _run(project, "git", "init", "-q", ".")
    _run(project, "git", "add", "-A")
    _run(project, *_GIT, "commit", "-qm", "recorded")
    prompt = project / "prompt.md"
    prompt.write_text(
        prompt.read_text(encoding="utf-8").replace(OLD_LINE, NEW_LINE), encoding="utf-8"
    )
    commands = _printed_commands(_run(project, str(NAV), "scenario", "replay", check=False))
    if not commands:
        sys.exit("the replay after the prompt change printed no record command")
    for command in commands:
        _run(project, str(NAV), *command[1:])
    _run(project, str(NAV), "scenario", "replay")  # the re-recorded cassettes replay
    numstat = _run(project, "git", "diff", "--numstat").splitlines()
    files = [line.split("\t") for line in numstat]
    by_format: dict[str, Counter[str]] = {}
    others: list[str] = []
    for _added, _removed, name in files:
        old = _run(project, "git", "show", f"HEAD:{name}").splitlines()
        new = (project / name).read_text(encoding="utf-8").splitlines()
        group = name.split("/")[1] if name.startswith("cassettes/") else name
        lines: list[str] = []
        by_format.setdefault(group, Counter()).update(classify(old, new, lines))
        others += [f"{name}:\n{line[:160]}" for line in lines]
    added = sum(int(row[0]) for row in files)
    removed = sum(int(row[1]) for row in files)
    print(f"scenarios: {', '.join(scenarios)}")
    print(f"re-record commands printed: {len(commands)}")
    print(f"git diff: {len(files)} files changed, {added} insertions(+), {removed} deletions(-)")
    print()
    print(f"{'file group':<18}" + "".join(f"{name:>12}" for name in (*CLASSES, "total")))
    total: Counter[str] = Counter()
    for group, counts in sorted(by_format.items()):
        total.update(counts)
        cells = "".join(f"{counts[name]:>12}" for name in CLASSES)
        print(f"{group:<18}{cells}{sum(counts.values()):>12}")
    cells = "".join(f"{total[name]:>12}" for name in CLASSES)
    print(f"{'all':<18}{cells}{sum(total.values()):>12}")
    if others:
        print("\nother lines:")
        print("\n".join(others[:20]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help=f"default: {' '.join(DEFAULT_SCENARIOS)}")
    parser.add_argument("--all", action="store_true", help="every scenario of this repository")
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    args = parser.parse_args()
    if args.all:
        scenarios = sorted(path.stem for path in (ROOT / "scenarios").glob("*.yaml"))
    else:
        scenarios = args.scenarios or list(DEFAULT_SCENARIOS)
    if args.keep:
        if args.keep.exists():
            sys.exit(f"{args.keep} exists; name a new folder")
        measure(args.keep, scenarios)
        return
    with tempfile.TemporaryDirectory(prefix="nav-rerecord-diff-") as folder:
        measure(Path(folder) / "project", scenarios)


if __name__ == "__main__":
    main()
