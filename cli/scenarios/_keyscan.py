"""Finding anything that looks like a credential in a cassette.

Cassettes are committed, so a key that slipped through the header filter
would be published. The recorder filters auth headers and then checks its
own output; the replay and a test scan every cassette again, so a cassette
edited by hand or recorded by an older tool is caught too.

What counts as a credential is decided in one place for the whole project,
`navagent.core.redaction` (the gateway masks with the same matcher): the
shapes of real credentials, strict enough that the simulator's ids and
thinking signatures (base58/base64 without those prefixes) do not match, and
every key this process has loaded. A finding shows only the first characters of the
value: the report itself must not leak what it found.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from navagent.core.redaction import find_secrets

__all__ = ["KeyFinding", "scan_file", "scan_files", "scan_text"]


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
    for number, line in enumerate(text.splitlines(), start=1):
        matches = find_secrets(line, extra=secrets, extra_kind="the API key used to record")
        findings += [
            KeyFinding(source, number, match.kind, _preview(line[match.start : match.end]))
            for match in matches
        ]
    return findings


def scan_file(path: Path, *, secrets: Sequence[str] = ()) -> list[KeyFinding]:
    """`scan_text` over one file (read as UTF-8, undecodable bytes replaced)."""
    text = path.read_bytes().decode("utf-8", "replace")
    return scan_text(text, source=str(path), secrets=secrets)


def scan_files(paths: Iterable[Path]) -> list[KeyFinding]:
    """`scan_file` over many files, findings in file order."""
    return [finding for path in paths for finding in scan_file(path)]
