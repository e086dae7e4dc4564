"""Finding anything that looks like a credential in a cassette.

Cassettes are committed, so a key that slipped through the header filter
would be published. The recorder filters auth headers and then checks its
own output; the replay and a test scan every cassette again, so a cassette
edited by hand or recorded by an older tool is caught too.

The patterns are the shapes of real credentials, strict enough that the
simulator's ids and thinking signatures (base58/base64 without those
prefixes) do not match. A finding shows only the first characters of the
value: the report itself must not leak what it found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEY_PATTERNS", "KeyFinding", "scan_file", "scan_files", "scan_text"]

KEY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an Anthropic API key (sk-ant-...)", re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}")),
    ("an OpenAI-style secret key (sk-...)", re.compile(r"\bsk-(?!ant-)[A-Za-z0-9_\-]{16,}")),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*")),
    (
        "a credential header",
        re.compile(
            r"(?im)^[ \t]*['\"]?(authorization|proxy-authorization|x-api-key|api-key|cookie"
            r"|set-cookie)['\"]?[ \t]*:"
        ),
    ),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
)
"""(what it is, pattern) for every credential shape the scan looks for."""


@dataclass(frozen=True)
class KeyFinding:
    """Something that looks like a credential, and where."""

    source: str
    line: int
    """1-based line in the file."""
    kind: str
    preview: str
    """The first few characters and the length: enough to find it, not to use it."""

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: looks like {self.kind}: {self.preview}"


def _preview(value: str) -> str:
    return f"{value[:7]}... ({len(value)} characters)"


def scan_text(
    text: str, *, source: str = "<text>", secrets: Sequence[str] = ()
) -> list[KeyFinding]:
    """Find credential-shaped strings, and any of `secrets` verbatim, in `text`.

    Args:
        text: What to scan (a whole cassette).
        source: Its name in the findings.
        secrets: Exact values that must not appear (the key a recording used).
    """
    findings: list[KeyFinding] = []
    exact = [secret for secret in secrets if secret]
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in KEY_PATTERNS:
            findings += [
                KeyFinding(source, number, kind, _preview(match.group(0)))
                for match in pattern.finditer(line)
            ]
        findings += [
            KeyFinding(source, number, "the API key used to record", _preview(secret))
            for secret in exact
            if secret in line
        ]
    return findings


def scan_file(path: Path, *, secrets: Sequence[str] = ()) -> list[KeyFinding]:
    """`scan_text` over one file (read as UTF-8, undecodable bytes replaced)."""
    text = path.read_bytes().decode("utf-8", "replace")
    return scan_text(text, source=str(path), secrets=secrets)


def scan_files(paths: Iterable[Path]) -> list[KeyFinding]:
    """`scan_file` over many files, findings in file order."""
    return [finding for path in paths for finding in scan_file(path)]
