"""Docs and help that count or list the wire formats agree with the registry (issue 40, §4).

`core/wire_formats.py` names the formats once; text written by hand
(README.md, scenarios/README.md) and every `nav` command's help must not
say "three formats" or list three of four. A count of formats or protocols
("four protocols", "all three formats", "both providers") must be the
registry's, and a line that names three or more format ids (or route
protocols) must name all of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.wire_formats import FORMAT_IDS, WIRE_FORMATS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "scenarios/README.md")
NUMBERS = {
    word: number
    for number, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
COUNT = re.compile(
    rf"(?<![\w.-])(?:all\s+)?(?P<n>{'|'.join(NUMBERS)}|\d+)\s+(?:wire\s+)?(?P<what>formats|protocols)\b"
    r"|\b(?P<both>both)\s+(?P<what2>formats|providers|protocols|wire\s+formats)\b",
    re.IGNORECASE,
)
PROTOCOLS = sorted({row.protocol for row in WIRE_FORMATS.values()})


def _names(names: list[str]) -> re.Pattern[str]:
    alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])({alternatives})(?![\w-])")


IDS, PROTOCOL_NAMES = _names(list(FORMAT_IDS)), _names(PROTOCOLS)


def claims(text: str) -> list[str]:
    """Every count or list in `text` that disagrees with the registry."""
    wrong = []
    flat = " ".join(text.split())
    for match in COUNT.finditer(flat):
        said = 2 if match["both"] else NUMBERS.get(match["n"].lower()) or int(match["n"])
        real = (
            len(PROTOCOLS) if "protocol" in (match["what"] or match["what2"]) else len(FORMAT_IDS)
        )
        if said != real:
            wrong.append(f"{match[0]!r}: the registry has {real}")
    for line in text.splitlines():
        for pattern, every in ((IDS, FORMAT_IDS), (PROTOCOL_NAMES, PROTOCOLS)):
            named = set(pattern.findall(line))
            if len(named) >= 3 and named != set(every):
                missing = ", ".join(sorted(set(every) - named))
                wrong.append(
                    f"{line.strip()!r} lists {len(named)} of {len(every)} ({missing} missing)"
                )
    return wrong


def helps(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """Every command's --help text, as `nav ... --help` prints it (the command tree from typer)."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "500"})
    assert result.exit_code == 0, result.output
    yield " ".join(("nav", *path)), result.output
    for name, sub in getattr(command, "commands", {}).items():
        yield from helps(sub, (*path, name))


@pytest.mark.parametrize("doc", DOCS)
def test_the_docs_count_and_list_the_formats_the_registry_has(doc: str) -> None:
    assert claims((ROOT / doc).read_text(encoding="utf-8")) == []


def test_every_help_text_counts_and_lists_the_formats_the_registry_has() -> None:
    texts = dict(helps(typer.main.get_command(app)))
    assert {"nav scenario record", "nav agent", "nav sim provider"} <= set(texts)
    wrong = {name: found for name, text in texts.items() if (found := claims(text))}
    assert wrong == {}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a simulated provider speaking all three wire formats", 1),
        ("The Chat service speaks two protocols", 1),
        ("on both providers", 1),
        ("every scenario x {openai, openai-responses, anthropic}", 1),
        ("`openai` (default), `openai-responses` or `anthropic`", 1),
        ("protocols: [anthropic_messages] # or openai_chat_completions, openai_responses", 1),
        ('nav_formats = ["openai", "anthropic"]', 0),  # an example: two, not a list of all
        ("one wire format per folder", 0),
        ("model: claude-sonnet-4-5 protocols: [anthropic_messages]", 0),
        (f"all {len(FORMAT_IDS)} formats: {', '.join(FORMAT_IDS)}", 0),
    ],
)
def test_the_check_finds_a_stale_count_or_list(text: str, found: int) -> None:
    assert len(claims(text)) == found, claims(text)
