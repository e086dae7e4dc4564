"""Unit tests for the pure rendering helpers; they need no process, so they run in-process."""

from __future__ import annotations

import pytest

from navagent.fixtures.nav_sim._clap_text import did_you_mean, jaro
from navagent.fixtures.nav_sim._report import NavError, render_report, rust_debug_str
from navagent.fixtures.nav_sim._yaml import policy_lines, scalar


def test_report_wraps_at_78_columns_with_miette_prefixes() -> None:
    words = " ".join(f"word{index}" for index in range(40))
    text = render_report(NavError(words + "\nsecond line", [words, "last cause " + words]))
    lines = text.removeprefix("Error: ").split("\n")
    assert text.startswith("Error:   × word0 ") and text.endswith("\n\n")
    assert all(len(line) <= 78 for line in lines)
    assert [line[:6] for line in lines if line.startswith("  ├─▶")] == ["  ├─▶ "]
    assert [line[:6] for line in lines if line.startswith("  ╰─▶")] == ["  ╰─▶ "]
    cause_continuations = [line for line in lines if line.startswith("  │   ")]
    last_continuations = [line for line in lines if line.startswith("      ")]
    assert cause_continuations and last_continuations
    assert "  │ second line" in lines


def test_rust_debug_quotes_like_rust() -> None:
    assert rust_debug_str('a "b" \\ c\n') == '"a \\"b\\" \\\\ c\\n"'


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [("martha", "marhta", 0.944), ("dixon", "dicksonx", 0.767), ("", "", 1.0), ("a", "", 0.0)],
)
def test_jaro_matches_strsim(left: str, right: str, expected: float) -> None:
    assert jaro(left, right) == pytest.approx(expected, abs=1e-3)


def test_did_you_mean_orders_least_similar_first() -> None:
    assert did_you_mean("lst", ["create", "get", "list", "delete", "logs", "help"]) == ["list"]
    assert did_you_mean("zzz", ["list"]) == []


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("*", "'*'"),
        ("best_effort", "best_effort"),
        ("true", "'true'"),
        ("443", "'443'"),
        ("", "''"),
        ("it's: here", "'it''s: here'"),
        ("/**/info/refs*", "/**/info/refs*"),
        (True, "true"),
        (443, "443"),
    ],
)
def test_yaml_scalars_quote_only_when_needed(value: object, shown: str) -> None:
    assert scalar(value) == shown


def test_policy_lines_order_and_omit_empty() -> None:
    lines = policy_lines(
        {
            "network_policies": {"b": {"binaries": [{"path": "/x"}]}, "a": {"endpoints": []}},
            "process": {"run_as_user": "", "run_as_group": ""},
            "version": 1,
        }
    )
    assert lines == [
        "version: 1",
        "network_policies:",
        "  a: {}",  # everything in it was empty, but the policy itself is there
        "  b:",
        "    binaries:",
        "    - path: /x",
    ]
