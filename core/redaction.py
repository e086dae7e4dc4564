"""The one redaction path: every byte that leaves a nav-agent process passes here.

Gateway error events and gRPC status texts, every log line at every level
(through `RedactingFormatter`), every recording (scenario, provider and tool
cassettes, the live capture, `sessions.db`, exported transcripts) and the
cassette key scan all use the same matcher, so they can never disagree about
what a secret is. It finds:

- every secret this process was given (route keys, literal or from the
  environment, and the gateway's own bearer token), registered with
  `register_secret` when they are loaded;
- credentials by shape, with Yelp's `detect-secrets` plugins (`DETECTORS`):
  JWTs, AWS key ids and secret access keys, basic-auth passwords in URLs,
  Stripe, GitLab, GitHub, npm, PyPI, Slack, Twilio, SendGrid, Mailchimp,
  Discord, Azure storage, Square, OpenAI, and the keyword detector
  (`password = "..."`). Not its Artifactory and Telegram plugins (`AP` + 9
  letters, 8 digits + colon: they flag log lines; a stricter Telegram shape
  is a hand shape), its public-IP one (not a secret), nor its Cloudant, IBM
  and SoftLayer ones (`cloudant_password = ...`: the keyword rule below masks
  those values already);
- whole private-key blocks (PEM, PGP, SSH2, PuTTY) from their first line to
  their last, or to the end of the text (`detect-secrets` flags the header);
- a value after a keyword (`DB_PASSWORD=...`, `api_key: ...`, quoted or not);
- shapes `detect-secrets` lacks, kept by hand: tokens that name their
  issuer by a literal prefix (`HAND_SHAPES`, each says why), the credential
  after an HTTP auth scheme, cookies, registry `auth` values and secrets
  given as command-line flags (`IN_CONTEXT`).

detect-secrets reports values, not positions, so its regular expressions are
run here directly to get spans. Speed (logs and recordings pass here): shapes
that start with a literal are searched over the whole text (Python's re skips
ahead to the literal); shapes that start with a keyword alternation are tried
only where one of their words starts (`IN_CONTEXT`), and a few others only
around their word (`_ANCHORS`). Its entropy plugins are not run over whole
texts: on logs and tool output they flag every hash and id; entropy counts
only in keyword context (`secret: <value>`), where the keyword says the value
may be a secret (`_secret_like`).

Redaction runs before any cut (`clip`), so a secret sitting at a truncation
point cannot leave as its first characters. The registry is process-wide on
purpose: third-party log records (httpx, grpc) reach the formatter with no way
to hand them an instance.
"""

from __future__ import annotations

import bisect
import json
import logging
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from detect_secrets.plugins import keyword as _keyword
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = [
    "DETECTORS",
    "HAND_SHAPES",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "REDACTED_IN_URL",
    "SECRET_SHAPES",
    "RedactingFormatter",
    "SecretMatch",
    "clip",
    "distinct_secrets",
    "find_secrets",
    "header_safe_problem",
    "redact",
    "redact_json",
    "redact_json_text",
    "redact_many",
    "redact_pieces",
    "register_secret",
]

REDACTED = "[redacted]"
REDACTED_IN_URL = "%5Bredacted%5D"
"""`[redacted]` percent-encoded: a URL's masked password keeps the URL parseable
(`user:[redacted]@host` reads as an IPv6 host)."""
_URL_PASSWORD = "a password in a URL"
MIN_SECRET_CHARS = 6

Shape = tuple[str, re.Pattern[str]]
"""(what it is, pattern); a `secret` group, when present, is the part to mask."""


def _token(literal: str, rest: str, flags: int = 0) -> re.Pattern[str]:
    """`literal` + `rest`, not glued to a word before it (an escaped newline is a boundary).

    Literal first, boundary after: Python's re then skips ahead to the
    literal instead of trying every position (twenty times faster).
    """
    lit = re.escape(literal)
    pattern = re.compile(f"{lit}(?:(?<!\\w{lit})|(?<=\\\\[nrt]{lit})){rest}", flags)
    if not flags & re.I:
        _LITERALS[pattern.pattern] = literal
    return pattern


_LITERALS: dict[str, str] = {}
"""The literal each case-sensitive `_token` shape starts with: a text without
it is not searched (`in` is a fast scan; each search has a fixed cost)."""


_TELEGRAM = re.compile(r"(?<![0-9])[0-9]{8,10}:AA[0-9A-Za-z_\-]{33}(?![0-9A-Za-z_\-])")
_BEARER = _token("bearer", r"\s+(?P<secret>[A-Za-z0-9._~+/\-]{8,}=*)", re.I)
HAND_SHAPES: tuple[Shape, ...] = (
    # detect-secrets' OpenAI detector knows only the legacy `T3BlbkFJ` keys;
    # project, service-account and Anthropic keys are plain `sk-` prefixes.
    ("an Anthropic API key (sk-ant-...)", _token("sk-ant-", r"[A-Za-z0-9_\-]{8,}")),
    ("an OpenAI-style secret key (sk-...)", _token("sk-", r"(?!ant-)[A-Za-z0-9_\-]{8,}")),
    # Tokens detect-secrets has no plugin for.
    ("a Hugging Face token (hf_...)", _token("hf_", r"[A-Za-z0-9]{30,}")),
    ("a GitHub token", _token("github_pat_", r"[A-Za-z0-9_]{30,}")),
    ("a Google API key", _token("AIza", r"[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),
    ("a Google OAuth access token", _token("ya29.", r"[0-9A-Za-z_\-]{20,}")),
    ("a Groq API key", _token("gsk_", r"[A-Za-z0-9]{20,}")),
    ("an xAI API key", _token("xai-", r"[A-Za-z0-9]{20,}")),
    *(("a DigitalOcean token", _token(f"do{k}_v1_", r"[a-f0-9]{64}")) for k in "opr"),
    *(("a HashiCorp Vault token", _token(f"hv{k}.", r"[A-Za-z0-9_\-]{20,}")) for k in "sbr"),
    ("a Shopify token", _token("shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}")),
    ("a Linear API key", _token("lin_api_", r"[A-Za-z0-9]{32,}")),
    ("a Notion token", _token("secret_", r"[A-Za-z0-9]{43}(?![A-Za-z0-9])")),
    ("a Notion token", _token("ntn_", r"[A-Za-z0-9]{40,}")),
    ("an Atlassian API token", _token("ATATT3", r"[A-Za-z0-9_\-=]{20,}")),
    ("a Databricks token", _token("dapi", r"[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])")),
    ("a Pulumi token", _token("pul-", r"[a-f0-9]{40}")),
    ("a Mailgun key", _token("key-", r"[a-f0-9]{32}(?![A-Za-z0-9])")),
    ("a Doppler token", _token("dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}")),
    ("an age secret key", _token("AGE-SECRET-KEY-1", r"[02-9AC-HJ-NP-Z]{58}")),
    # detect-secrets' Telegram plugin takes any `12345678:` + 35 characters
    # (log lines); the second part of a bot token starts with `AA`.
    ("a Telegram bot token", _TELEGRAM),
    # Its Slack detector needs numeric segments (`xoxb-1-2-abc`); newer tokens have none.
    ("a Slack token", _token("xox", r"[abposre]-[A-Za-z0-9\-]{10,}")),
    # Wire-level credentials: a bearer token anywhere (a header, a curl command).
    ("a bearer token", _BEARER),
    # A key in a URL's query, whatever its shape (Gemini takes `?key=`).
    (
        "a key in a URL's query",
        re.compile(r"[?&](?:key|api_?key)=(?P<secret>(?!%5Bredacted%5D)[^&#\s'\"]{4,})", re.I),
    ),
    # A URL's password whatever its characters (detect-secrets' basic-auth
    # detector refuses `!$&@...` in it, and an empty user name).
    (
        _URL_PASSWORD,
        re.compile(r"://(?<=[A-Za-z0-9+.\-]://)[^\s:/?#@\[\]]*:(?P<secret>[^\s/?#]+)@"),
    ),
)
"""Shapes detect-secrets lacks (each entry says why it is hand-written)."""

_PLUGINS: tuple[tuple[Any, tuple[str, ...], bool], ...] = (
    # (plugin, the kind of each of its regexes, whether group 1 is the value)
    (AWSKeyDetector, ("an AWS access key id", "an AWS secret access key"), True),
    (AzureStorageKeyDetector, ("an Azure storage account key",), False),
    (BasicAuthDetector, (_URL_PASSWORD,), True),
    (DiscordBotTokenDetector, ("a Discord bot token",), False),
    (GitHubTokenDetector, ("a GitHub token",), False),
    (GitLabTokenDetector, ("a GitLab token",), False),
    (JwtTokenDetector, ("a JSON Web Token",), False),
    (MailchimpDetector, ("a Mailchimp key",), False),
    (NpmDetector, ("an npm token",), True),
    (OpenAIDetector, ("an OpenAI API key",), False),
    (PypiTokenDetector, ("a PyPI token",), False),
    (SendGridDetector, ("a SendGrid key",), False),
    (SlackDetector, ("a Slack token", "a Slack webhook"), False),
    (SquareOAuthDetector, ("a Square OAuth secret",), False),
    (StripeDetector, ("a Stripe key",), False),
    (TwilioKeyDetector, ("a Twilio key",), False),
)


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=")
"""A token's characters: a whole-match finding is widened over them (`sk_live_`
keys outgrew the plugin's 24 characters; its JWT pattern stops before the signature)."""


_WIDENED: set[re.Pattern[str]] = set()
"""Plugin patterns whose findings are widened to the token's end (`_TOKEN_CHARS`)."""


def _plugin_shapes() -> tuple[Shape, ...]:
    """Each detect-secrets regex, named; a value in group 1 becomes the `secret` group."""
    shapes: list[Shape] = []
    for plugin, names, value_group in _PLUGINS:
        for index, pattern in enumerate(plugin.denylist):
            source = pattern.pattern
            if value_group and pattern.groups:
                source = re.sub(r"(?<!\\)\((?!\?)", "(?P<secret>", source, count=1)
            else:  # its groups only pick prefixes (`(ghp|gho)_...`): mask the whole match
                source = re.sub(r"(?<!\\)\((?!\?)", "(?:", source)
            compiled = re.compile(source, pattern.flags)
            if "secret" not in compiled.groupindex:
                _WIDENED.add(compiled)
            shapes.append((names[min(index, len(names) - 1)], compiled))
    return tuple(shapes)


_BOUNDED_VALUE = r"(?=\w)[^\n\r\v'\"]{0,256}[^\n\r\v,'\"`]"
"""The keyword detector's value, kept on one line and at most 257 characters
(its own `[^\\v'"]*` runs across newlines in a whole text, and is unbounded)."""


def _keyword_shapes() -> tuple[Shape, ...]:
    """detect-secrets' keyword detector (quoted values), each form that starts at its keyword.

    Left out: `"value" == password` (a comparison in code, not a value given).
    """
    shapes: list[Shape] = []
    for pattern, group in _keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
        if not pattern.pattern.startswith(_keyword.DENYLIST_REGEX):
            continue
        source = pattern.pattern.replace(_keyword.SECRET, f"(?P<secret>{_BOUNDED_VALUE})")
        assert source != pattern.pattern, "detect-secrets' keyword SECRET changed"
        compiled = re.compile(source, pattern.flags)
        assert compiled.groupindex["secret"] == group + 1
        shapes.append(("a secret assigned to a keyword", compiled))
    return tuple(shapes)


_PLUGIN_SHAPES = _plugin_shapes()
_AWS_SECRET_KEY = _PLUGIN_SHAPES[1]
_ANYWHERE: tuple[Shape, ...] = tuple(s for s in _PLUGIN_SHAPES if s is not _AWS_SECRET_KEY)
DETECTORS: tuple[Shape, ...] = _PLUGIN_SHAPES + _keyword_shapes()
"""Everything taken from detect-secrets."""

_HAND_AWS_SECRET_KEY = re.compile(
    # Its AWS detector needs the secret access key in quotes (source code);
    # logs and env dumps write `AWS_SECRET_ACCESS_KEY=...`.
    r"(?i)aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[=:]\s*['\"]?"
    r"(?P<secret>[0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])"
)
_AUTH_SCHEMES = (
    r"(?:basic|digest|token|negotiate|ntlm|hoba|mutual|scram-sha-1|scram-sha-256|vapid"
    r"|aws4-hmac-sha256|dpop|gnap|privatetoken|concealed|apikey|api-key|key|sso-key|oauth)"
)
"""HTTP authentication schemes (IANA's registry, and a few vendors'): they stay,
the credential after them is masked."""
_CREDENTIAL_HEADER = re.compile(
    # `proxy-authorization` and `x-api-key` end in these names.
    r"(?i)(?:authorization|api-key)['\"]?[ \t]*[:=][ \t]*['\"]?"
    rf"(?:{_AUTH_SCHEMES}[ \t]+)?"
    rf"(?P<secret>(?!bearer\s|{_AUTH_SCHEMES}[ \t])(?=[A-Za-z0-9+/._~\-])[^\s'\",;]{{4,}})"
)
_COOKIE_HEADER = re.compile(
    # `Cookie: a=1; b=2` and `Set-Cookie: ...`: from the first `name=` to the
    # end of the line, its quote or an escape (`xcookie:` is another name).
    r"(?i)cookie(?<![A-Za-z0-9]{2}cookie)['\"]?[ \t]*[:=][ \t]*['\"]?"
    r"(?P<secret>[!#$%&*+\-.^_`|~0-9A-Za-z]+=[^\r\n'\"\\]{1,1000})"
)
_AUTH_VALUE = re.compile(
    # Docker's `"auth": "<base64 user:password>"`, npm's `_auth=<base64>`.
    r"(?i)(?<![A-Za-z0-9])auth(?:\\?['\"])?[ \t]*[:=][ \t]*(?:\\?['\"])?"
    r"(?P<secret>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])"
)
_FLAG_NAMES = tuple(f"--{name}" for name in (
    "password", "passwd", "token", "api-key", "apikey", "secret", "client-secret",
    "access-token", "auth-token", "private-key",
))  # fmt: skip
_FLAG_VALUE = re.compile(
    # `--token VALUE` on a command line (`--token=VALUE` is a keyword assignment).
    rf"(?i)(?:{'|'.join(_FLAG_NAMES)})[ \t]+['\"]?(?P<secret>[A-Za-z0-9][^\s'\"`]{{3,255}})"
)
_HEADER_KEY = re.compile(
    # A YAML mapping key (a recorded header) whose value follows on the next lines.
    r"(?im)[ \t]*['\"]?(?:authorization|proxy-authorization|x-api-key|api-key|cookie"
    r"|set-cookie)['\"]?[ \t]*:[ \t]*(?=\r|$)"  # a line ends at CR, LF or CRLF
)

_UNQUOTED_KEYWORD = re.compile(
    # Matched where its keyword starts (`IN_CONTEXT`): not inside a word, but
    # after `_`, `.`, `-` (`DB_PASSWORD`) or an escape (`\\npassword`).
    r"(?i)(?:(?<![A-Za-z0-9])|(?<=[_.\-])|(?<=\\[nrt]))"
    r"(?:password|passwd|passphrase|pgpassword|pwd|pass|secret|secret_?key|secret_?access_?key|api_?key"
    r"|access_?key|private_?key|auth_?key|client_?secret|token|access_?token|auth_?token"
    r"|refresh_?token|credentials?)(?:\\?['\"])?[ \t]*(?P<op>:|=)[ \t]*(?:\\?['\"`])?"
    r"(?P<secret>(?!\[redacted\])[^\s'\"`,;\\\[\]{}()<>]{4,256})"
)
"""`DB_PASSWORD=hunter22`, `api_key: 9f...`: a value after a keyword, quoted
or not (`\\"` too: JSON inside a JSON string). After `=` the value is taken;
after `:` (prose, YAML) only when it is secret-like (`_secret_like`)."""

_ENTROPY = Base64HighEntropyString()


def _secret_like(value: str) -> bool:
    """After `keyword:`, a value worth masking: not a plain word."""
    if len(value) < 6:
        return False
    if not value.isalpha():
        return True
    return _ENTROPY.calculate_shannon_entropy(value) >= 3.0


_KEY_BLOCKS: tuple[Shape, ...] = (
    (
        "a private key block",
        re.compile(
            r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
            r"(?:.*?-----END (?P=label)-----|.*)",
            re.S,
        ),
    ),
    (
        "a private key block",
        re.compile(
            r"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
            r"(?:.*?---- END SSH2 ENCRYPTED PRIVATE KEY ----|.*)",
            re.S,
        ),
    ),
    (
        "a private key block",
        re.compile(r"PuTTY-User-Key-File-\d+:(?:.*?Private-MAC:[ \t]*[0-9a-fA-F]*|.*)", re.S),
    ),
)
"""Whole key blocks, header to footer (to the end of the text when it has none).
detect-secrets' private-key plugin finds their headers (`_HEADER`); the scan of
one line at a time still sees a header alone."""

_HEADER = re.compile("|".join(p.pattern for p in PrivateKeyDetector.denylist))


def _spellings(*words: str) -> tuple[str, ...]:
    """Each of `words` with `_?` spelled both ways (`api_?key`: `api_key`, `apikey`)."""
    out: list[str] = []
    for word in words:
        spelled = [word]
        while any("_?" in w for w in spelled):
            spelled = [
                v for w in spelled for v in (w.replace("_?", "_", 1), w.replace("_?", "", 1))
            ]
        out += spelled
    return tuple(dict.fromkeys(out))


_DENYLIST_STARTS = _spellings(*_keyword.DENYLIST)
"""Where a match of the keyword detector's denylist (`api_?key|...|secret`) can start."""
_KEYWORD_STARTS = _spellings(
    "pass", "pgpass", "pwd", "secret", "api_?key", "access_?key", "private_?key", "auth_?key",
    "client_?secret", "token", "access_?token", "auth_?token", "refresh_?token", "credential",
)  # fmt: skip

_HEADER_NAMES = ("authorization", "api-key", "cookie")
IN_CONTEXT: tuple[tuple[str, re.Pattern[str], tuple[str, ...], bool], ...] = (
    *((kind, shape, _DENYLIST_STARTS, False) for kind, shape in _keyword_shapes()),
    (_AWS_SECRET_KEY[0], _AWS_SECRET_KEY[1], ("aws",), False),
    ("an AWS secret access key", _HAND_AWS_SECRET_KEY, ("aws",), False),
    # One scan finds where both `auth...` shapes may start; one finds every `--`.
    ("a credential header", _CREDENTIAL_HEADER, ("auth", "api-key"), False),
    ("a registry auth value", _AUTH_VALUE, ("auth", "api-key"), False),
    ("a credential header", _COOKIE_HEADER, ("cookie",), False),
    ("a secret given as a command-line flag", _FLAG_VALUE, ("--",), False),
    ("a credential header", _HEADER_KEY, _HEADER_NAMES, True),
    ("a secret assigned to a keyword", _UNQUOTED_KEYWORD, _KEYWORD_STARTS, False),
)
"""Shapes that start with a keyword, the words (lower case) they can start
with, and whether they start at that word's line instead: each is tried only
there (`re.match`). Searched over whole texts, their leading alternations
cost seconds a megabyte: Python's re cannot skip ahead to them."""

SECRET_SHAPES: tuple[Shape, ...] = (*HAND_SHAPES, *_ANYWHERE)
"""The shapes searched over the whole text (the key blocks and `IN_CONTEXT` aside)."""

_ANCHORS: dict[str, tuple[str, int, int]] = {
    _BEARER.pattern: ("bearer", 0, 4200),
    _TELEGRAM.pattern: (":aa", 10, 34),
    MailchimpDetector.denylist[0].pattern: ("-us", 32, 4),
    SlackDetector.denylist[0].pattern: ("xox", 0, 400),
    SlackDetector.denylist[1].pattern: ("hooks.slack.com", 8, 400),
    StripeDetector.denylist[0].pattern: ("k_live_", 1, 100),
}
"""Shapes Python's re cannot skip through quickly (a case-insensitive or
alternated start, a literal in the middle): searched only around their
word (lower case), from so many characters before it to so many after."""


_TRIM = " \t\r\n=:\"'"
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


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The part of `match` to mask: its `secret` group, or all of it without edge separators."""
    if "secret" in match.re.groupindex:
        return match.span("secret")
    start, end = match.span()
    text = match.string
    if match.re in _WIDENED:
        while end < len(text) and text[end] in _TOKEN_CHARS:
            end += 1
    while start < end and text[start] in _TRIM:
        start += 1
    while end > start and text[end - 1] in _TRIM:
        end -= 1
    return start, end


def _shape_matches(
    kind: str, shape: re.Pattern[str], text: str, start: int, end: int
) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    for match in shape.finditer(text, start, end):
        first, last = _span(match)
        if last > first and text[first:last] not in (REDACTED, REDACTED_IN_URL):
            found.append(SecretMatch(kind, first, last))
    return found


def _regions(lowered: str, word: str, before: int, after: int) -> list[tuple[int, int]]:
    """The stretches of the text around each `word` (lower case), merged, in order."""
    spans: list[tuple[int, int]] = []
    position = lowered.find(word)
    while position != -1:
        start, end = max(0, position - before), position + len(word) + after
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
        position = lowered.find(word, position + 1)
    return spans


def _starts(lowered: str, words: Iterable[str]) -> list[int]:
    """Every position where one of `words` (lower case) starts."""
    found: set[int] = set()
    for word in words:
        position = lowered.find(word)
        while position != -1:
            found.add(position)
            position = lowered.find(word, position + 1)
    return sorted(found)


def find_secrets(
    text: str, *, extra: Iterable[str] = (), extra_kind: str = _KNOWN_KIND, blocks: bool = True
) -> list[SecretMatch]:
    """Every secret in `text`: registered, in `extra`, credential-shaped or a key block.

    Spans may overlap (`redact` merges them); `extra` values (of any length)
    are reported as `extra_kind`. A span that is already `[redacted]` is not
    a finding, so redacting twice changes nothing. `blocks=False` leaves the
    key blocks out (`redact_many` finds them text by text).
    """
    found = _known(text, extra, extra_kind)
    if blocks:
        found += _key_blocks(text)
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: keep positions
        lowered = "".join(char if len(char.lower()) != 1 else char.lower() for char in text)
    for kind, shape in SECRET_SHAPES:
        literal = _LITERALS.get(shape.pattern)
        if literal is not None and literal not in text:
            continue
        anchor = _ANCHORS.get(shape.pattern)
        if anchor is None:
            found += _shape_matches(kind, shape, text, 0, len(text))
            continue
        word, before, after = anchor
        for start, end in _regions(lowered, word, before, after):
            found += _shape_matches(kind, shape, text, start, end)
    found += _in_context(text, lowered)
    return found


def _key_blocks(text: str) -> list[SecretMatch]:
    if "PRIVATE" not in text and "PuTTY" not in text:
        return []
    found: list[SecretMatch] = []
    for kind, block in _KEY_BLOCKS:
        found += [SecretMatch(kind, *m.span()) for m in block.finditer(text)]
    found += [SecretMatch("a private key block", *m.span()) for m in _HEADER.finditer(text)]
    return found


def distinct_secrets(
    text: str, *, extra: Iterable[str] = (), extra_kind: str = _KNOWN_KIND
) -> list[SecretMatch]:
    """`find_secrets`, one finding per secret: overlapping ones are one, named by the first."""
    distinct: list[SecretMatch] = []
    for match in sorted(
        find_secrets(text, extra=extra, extra_kind=extra_kind), key=lambda m: (m.start, -m.end)
    ):
        if distinct and match.start < distinct[-1].end:
            last = distinct[-1]
            distinct[-1] = SecretMatch(last.kind, last.start, max(last.end, match.end))
        else:
            distinct.append(match)
    return distinct


def _known(text: str, extra: Iterable[str], extra_kind: str) -> list[SecretMatch]:
    """The registered secrets and the `extra` values, verbatim."""
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
    return found


def _in_context(text: str, lowered: str) -> list[SecretMatch]:
    """The `IN_CONTEXT` shapes' findings, each tried where one of its words starts."""
    found: list[SecretMatch] = []
    starts: dict[tuple[tuple[str, ...], bool], list[int]] = {}
    for kind, shape, words, line_start in IN_CONTEXT:
        positions = starts.get((words, line_start))
        if positions is None:
            positions = _starts(lowered, words)
            if line_start:
                positions = sorted({_line_start(lowered, p) for p in positions})
            starts[(words, line_start)] = positions
        for position in positions:
            match = shape.match(text, position, position + _CONTEXT_CHARS)
            if match is None:
                continue
            first, last = _span(match)
            if shape is _UNQUOTED_KEYWORD and not (
                match.group("op") == "=" or _secret_like(match.group("secret"))
            ):
                continue
            if shape is _AUTH_VALUE and not _secret_like(match.group("secret")):
                continue
            if last > first and text[first:last] not in (REDACTED, REDACTED_IN_URL):
                found.append(SecretMatch(kind, first, last))
    return found


def _line_start(text: str, position: int) -> int:
    """Where the line holding `position` starts: after the last CR or LF before it."""
    return max(text.rfind("\n", 0, position), text.rfind("\r", 0, position)) + 1


_CONTEXT_CHARS = 1024
"""How far a keyword shape may reach from its word (a value is at most 257 characters)."""


def _merged(matches: Iterable[SecretMatch]) -> list[tuple[int, int, str]]:
    """The spans of `matches`, overlapping ones joined, in order, with what replaces each."""
    spans: list[tuple[int, int, str]] = []
    for match in sorted(matches, key=lambda m: (m.start, -m.end)):
        mask = REDACTED_IN_URL if match.kind == _URL_PASSWORD else REDACTED
        if spans and match.start < spans[-1][1]:
            start, end, kept = spans[-1]
            spans[-1] = (start, max(end, match.end), REDACTED_IN_URL if mask != kept else kept)
        else:
            spans.append((match.start, match.end, mask))
    return spans


def redact(text: str, *, extra: Iterable[str] = ()) -> str:
    """`text` with every secret `find_secrets` sees replaced by `[redacted]`."""
    matches = find_secrets(text, extra=extra)
    return _masked(text, matches) if matches else text


def _masked(text: str, matches: Iterable[SecretMatch]) -> str:
    pieces: list[str] = []
    position = 0
    for start, end, mask in _merged(matches):
        pieces.append(text[position:start])
        pieces.append(mask)
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def redact_pieces(pieces: list[str], *, extra: Iterable[str] = ()) -> list[str]:
    """`pieces` redacted as one text (a streamed answer), still as many pieces.

    A secret split across pieces is masked: its first piece gets `[redacted]`
    and the others lose their part of it, so `"".join` of the result is
    `redact("".join(pieces))`.
    """
    text = "".join(pieces)
    spans = _merged(find_secrets(text, extra=extra))
    if not spans:
        return list(pieces)
    out: list[str] = []
    offset = 0
    for piece in pieces:
        start_of_piece, end_of_piece = offset, offset + len(piece)
        offset = end_of_piece
        kept: list[str] = []
        position = start_of_piece
        for start, end, mask in spans:
            if end <= start_of_piece or start >= end_of_piece:
                continue
            kept.append(text[position : max(position, start)])
            if start >= start_of_piece:
                kept.append(mask)
            position = min(end, end_of_piece)
        kept.append(text[position:end_of_piece])
        out.append("".join(kept))
    return out


_SEPARATOR = "\n\ue000\n"
"""Between the texts `redact_many` searches at once: no shape crosses a newline
and a private-use character (none matches `\\s`, a token or a keyword value)."""


def redact_many(texts: Sequence[str], *, extra: Iterable[str] = ()) -> list[str]:
    """`[redact(text) for text in texts]`, searched as one text: one pass, not one per text.

    A JSON document's strings are many and mostly short; searching each on
    its own costs the fixed price of every shape each time. Findings never
    cross from one text to the next (`_SEPARATOR`; key blocks are found text
    by text), so the result is the same.
    """
    extras = tuple(extra)
    todo = [i for i, text in enumerate(texts) if extras or len(text) >= MIN_SECRET_CHARS]
    if len(todo) <= 1 or any("\ue000" in texts[i] for i in todo):
        return [redact(text, extra=extras) for text in texts]
    joined = _SEPARATOR.join(texts[i] for i in todo)
    matches = find_secrets(joined, extra=extras, blocks=False)
    offsets: list[int] = []
    position = 0
    for i in todo:
        offsets.append(position)
        position += len(texts[i]) + len(_SEPARATOR)
    per_text: dict[int, list[SecretMatch]] = {}
    for match in matches:
        index = bisect.bisect_right(offsets, match.start) - 1
        start = offsets[index]
        end = min(match.end - start, len(texts[todo[index]]))
        per_text.setdefault(index, []).append(SecretMatch(match.kind, match.start - start, end))
    out = list(texts)
    for index, i in enumerate(todo):
        found = per_text.get(index, []) + _key_blocks(texts[i])
        if found:
            out[i] = _masked(texts[i], found)
    return out


def redact_json(value: Any, *, extra: Iterable[str] = ()) -> Any:
    """`value` (parsed JSON) with every string in it redacted; keys are kept."""
    strings: list[str] = []
    _collect(value, strings)
    redacted = iter(redact_many(strings, extra=extra))
    return _rebuild(value, redacted)


def _collect(value: Any, strings: list[str]) -> None:
    if isinstance(value, str):
        strings.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect(item, strings)
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, strings)


def _rebuild(value: Any, redacted: Iterator[str]) -> Any:
    if isinstance(value, str):
        return next(redacted)
    if isinstance(value, list):
        return [_rebuild(item, redacted) for item in value]
    if isinstance(value, dict):
        return {key: _rebuild(item, redacted) for key, item in value.items()}
    return value


def redact_json_text(text: str, *, extra: Iterable[str] = ()) -> str:
    """A JSON document's text with its strings redacted (any other text: `redact`)."""
    try:
        data = json.loads(text)
    except ValueError:
        return redact(text, extra=extra)
    redacted = redact_json(data, extra=extra)
    if redacted == data:
        return text
    return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))


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
        record.message = clip(_CONTROL.sub(_escape, redact(record.message)), self._max_chars)
        return super().formatMessage(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        """Format a traceback, redacted."""
        return redact(super().formatException(ei))


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{ord(char):02x}")
