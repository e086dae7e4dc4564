"""The one redaction path: every byte that leaves a nav-agent process passes here.

Gateway error events and gRPC status texts, every log line at every level
(through `RedactingFormatter`) and the cassette key scan all use the same
matcher, so they can never disagree about what a secret is. It finds two
things:

- every secret this process was given (route keys, literal or from the
  environment, and the gateway's own bearer token), registered with
  `register_secret` when they are loaded;
- anything shaped like a credential (`SECRET_SHAPES`), so a key the process
  never saw (one a provider echoes back, one pasted into a prompt) is caught
  too.

Redaction runs before any cut (`clip`), so a secret sitting at a truncation
point cannot leave as its first characters. The registry is process-wide on
purpose: third-party log records (httpx, grpc) reach the formatter with no way
to hand them an instance.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SECRET_SHAPES",
    "SHAPE_LITERALS",
    "RedactingFormatter",
    "SecretMatch",
    "clip",
    "find_secrets",
    "fold",
    "may_hold_secrets",
    "header_safe_problem",
    "redact",
    "register_secret",
]

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6

SECRET_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an Anthropic API key (sk-ant-...)", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}")),
    ("an OpenAI-style secret key (sk-...)", re.compile(r"\bsk-(?!ant-)[A-Za-z0-9_\-]{8,}")),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{8,}=*)")),
    (
        "a credential header",
        re.compile(
            r"(?i)\b(?:authorization|proxy-authorization|x-api-key|api-key|cookie|set-cookie)"
            r"['\"]?[ \t]*[:=][ \t]*['\"]?(?P<secret>(?!bearer\s)[^\s'\",;]{4,})"
        ),
    ),
    (
        # A YAML mapping key (a recorded header) whose value follows on the next lines.
        "a credential header",
        re.compile(
            r"(?im)^[ \t]*['\"]?(?:authorization|proxy-authorization|x-api-key|api-key|cookie"
            r"|set-cookie)['\"]?[ \t]*:[ \t]*$"
        ),
    ),
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
)
"""(what it is, pattern) for every credential shape; a `secret` group, when
present, is the part to mask (the header name stays readable)."""

_CREDENTIAL_HEADERS = ("authorization", "api-key", "cookie")
SHAPE_LITERALS: dict[re.Pattern[str], tuple[str, ...]] = {
    shape: literals
    for (_, shape), literals in zip(
        SECRET_SHAPES,
        (
            ("sk-ant-",),
            ("sk-",),
            ("bearer",),
            _CREDENTIAL_HEADERS,
            _CREDENTIAL_HEADERS,
            ("-----begin ",),
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
            ("akia", "asia"),
            ("aiza",),
            ("xox",),
        ),
        strict=True,
    )
}
"""For each shape, lowercase text of which every match contains at least one
(in `fold`ed text): a shape none of whose literals is in a text is not run on
it. Python's `re` cannot skip ahead to a pattern that starts with `\b` or is
case-insensitive, so each costs a pass over the text, a few milliseconds on
a cassette; finding a literal first costs next to nothing."""

_ASCII_LOOKALIKES = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
"""The only characters beyond ASCII that `re.IGNORECASE` matches to an ASCII
letter (İ, ı, ſ, the Kelvin sign), and the letter."""


def fold(text: str) -> str:
    """`text` lowercased, with the characters `re.IGNORECASE` takes for ASCII letters as those.

    A case-insensitive match of an ASCII literal in `text` is then the
    literal, lowercase, in `fold(text)`.
    """
    for char, letter in _ASCII_LOOKALIKES:  # `in` first: far faster than str.translate
        if char in text:
            text = text.replace(char, letter)
    return text.lower()


_KNOWN_KIND = "a configured secret"
_lock = threading.Lock()
_secrets: tuple[str, ...] = ()
_secrets_pattern: re.Pattern[str] | None = None


@dataclass(frozen=True)
class SecretMatch:
    """One secret found in a text: what it looks like and where it is."""

    kind: str
    start: int
    end: int


def register_secret(secret: str) -> None:
    """Remember `secret` so every later `redact` masks it.

    Values shorter than `MIN_SECRET_CHARS` are ignored: no provider issues
    such keys, and masking every "k" or "abc" would garble every message.
    """
    global _secrets, _secrets_pattern
    value = secret.strip()
    if len(value) < MIN_SECRET_CHARS or value in _secrets:
        return
    with _lock:
        # Longest first, so a secret that contains another is masked whole.
        _secrets = tuple(sorted({*_secrets, value}, key=len, reverse=True))
        _secrets_pattern = re.compile("|".join(re.escape(known) for known in _secrets))


def _has_literal(folded: str, shape: re.Pattern[str]) -> bool:
    return any(literal in folded for literal in SHAPE_LITERALS[shape])


def may_hold_secrets(text: str, *, extra: Iterable[str] = ()) -> bool:
    """False when `find_secrets` finds nothing in `text` nor in any part of it (a line, say).

    Cheap: no shape's literal, no registered secret and no `extra` value is
    in `text`. A scan of a large text line by line asks this first.
    """
    folded = fold(text)
    if any(_has_literal(folded, shape) for _, shape in SECRET_SHAPES):
        return True
    pattern = _secrets_pattern
    if pattern is not None and pattern.search(text):
        return True
    return any(value and value in text for value in extra)


def find_secrets(
    text: str, *, extra: Iterable[str] = (), extra_kind: str = _KNOWN_KIND
) -> list[SecretMatch]:
    """Every secret in `text`: registered, in `extra`, or credential-shaped.

    Spans may overlap; `extra` values (of any length) are reported as `extra_kind`.
    """
    found: list[SecretMatch] = []
    pattern = _secrets_pattern
    if pattern is not None:
        found += [SecretMatch(_KNOWN_KIND, m.start(), m.end()) for m in pattern.finditer(text)]
    for value in extra:
        if value:
            start = text.find(value)
            while start != -1:
                found.append(SecretMatch(extra_kind, start, start + len(value)))
                start = text.find(value, start + 1)
    folded = fold(text)
    for kind, shape in SECRET_SHAPES:
        if not _has_literal(folded, shape):
            continue
        for match in shape.finditer(text):
            group = "secret" if "secret" in shape.groupindex else 0
            found.append(SecretMatch(kind, match.start(group), match.end(group)))
    return found


def redact(text: str, *, extra: Iterable[str] = ()) -> str:
    """`text` with every secret `find_secrets` sees replaced by `[redacted]`."""
    matches = find_secrets(text, extra=extra)
    if not matches:
        return text
    pieces: list[str] = []
    position = 0
    for match in sorted(matches, key=lambda m: (m.start, -m.end)):
        if match.end <= position:
            continue
        pieces.append(text[position : max(position, match.start)])
        pieces.append(REDACTED)
        position = match.end
    pieces.append(text[position:])
    return "".join(pieces)


_URL = re.compile(r"https?://\S*$")


def clip(text: str, limit: int) -> str:
    """Redact `text`, then cut it to at most `limit` characters at a word boundary.

    The cut never splits a URL (a URL that would be cut is dropped whole) and
    is marked with "…". Redaction comes first, so no secret's head survives.
    """
    text = redact(text)
    if len(text) <= limit:
        return text
    head = text[: max(1, limit - 1)]
    if not text[len(head)].isspace():  # the cut falls inside a word: drop the piece
        space = head.rfind(" ")
        head = head[:space] if space >= limit // 2 else _URL.sub("", head)
    return head.rstrip(" ,;:(") + "…"


def header_safe_problem(value: str) -> str | None:
    """Why `value` cannot be sent as an HTTP header value, or None when it can.

    Keys and tokens must be visible ASCII: h11 rejects anything else, and its
    error quotes the whole header, secret included. The reason never quotes
    the value.
    """
    for position, char in enumerate(value, start=1):
        if not "!" <= char <= "~":
            what = "a space" if char == " " else f"character U+{ord(char):04X}"
            return f"it contains {what} at position {position} of {len(value)}"
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RedactingFormatter(logging.Formatter):
    """A formatter whose every line is redacted, one line long and bounded.

    Control characters in the message are escaped, so nothing a client sends
    can forge a log line; tracebacks (only logged at DEBUG) stay multi-line
    but are redacted too.
    """

    def __init__(self, fmt: str | None = None, *, max_chars: int = 4096) -> None:
        super().__init__(fmt)
        self._max_chars = max_chars

    def formatMessage(self, record: logging.LogRecord) -> str:
        """Format `record`'s message as one redacted, escaped, bounded line."""
        record.message = clip(_CONTROL.sub(_escape, record.message), self._max_chars)
        return super().formatMessage(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        """Format a traceback, redacted."""
        return redact(super().formatException(ei))


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{ord(char):02x}")
