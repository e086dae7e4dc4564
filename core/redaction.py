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
  issuer by a literal prefix (`HAND_SHAPES`, each says why, and the vendor
  table in `_secret_shapes`), the credential after an HTTP auth scheme,
  cookies, any header or query parameter whose name holds a credential word
  (`CREDENTIAL_NAME_WORDS`), registry `auth` values and secrets given as
  command-line flags (`_IN_CONTEXT_SHAPES`), also inside escaped JSON
  (escaped quotes and slashes, `u0022` escapes);
- a base64 run whose decoded text holds any of the above (kubeconfig
  `client-key-data`, `.dockerconfigjson`, a Secret's `data`).

detect-secrets reports values, not positions, so its regular expressions are
run here directly to get spans, all on RE2 (`google-re2`): no pattern applied
to a text can backtrack, so redaction time is linear in the text whatever it
holds (a megabyte of one shape's prefix repeated took seconds on Python's re,
and four times the text sixteen times as long). Each shape names the literal
words it starts with (`Shape.prefixes`): one RE2 set pass over the text tells
which shapes can match at all, and the linear-time test repeats every one of
those words. Its entropy plugins are not run over whole texts: on logs and
tool output they flag every hash and id; entropy counts only in keyword
context (`secret: <value>`), where the keyword says the value may be a
secret (`_secret_like`).

Redaction runs before any cut (`clip`), so a secret sitting at a truncation
point cannot leave as its first characters. The registry is process-wide on
purpose: third-party log records (httpx, grpc) reach the formatter with no way
to hand them an instance.
"""

from __future__ import annotations

import binascii
import bisect
import functools
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import re2
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

from navagent.core._secret_shapes import VENDOR_TOKENS

__all__ = [
    "CREDENTIAL_NAME_WORDS",
    "CUT_TAIL_BYTES",
    "DETECTORS",
    "HAND_SHAPES",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "REDACTED_IN_URL",
    "SECRET_SHAPES",
    "Redacted",
    "RedactingFormatter",
    "SecretMatch",
    "Shape",
    "clip",
    "credential_name",
    "distinct_secrets",
    "find_secrets",
    "header_safe_problem",
    "redact",
    "redact_cut_end",
    "redact_json",
    "redact_json_text",
    "redact_many",
    "redact_pieces",
    "redacted",
    "register_secret",
    "shape_prefixes",
]

REDACTED = "[redacted]"
REDACTED_IN_URL = "%5Bredacted%5D"
"""`[redacted]` percent-encoded: a URL's masked password keeps the URL parseable
(`user:[redacted]@host` reads as an IPv6 host)."""
_MASKS = (REDACTED.encode(), REDACTED_IN_URL.encode())
_URL_PASSWORD = "a password in a URL"
MIN_SECRET_CHARS = 6


def _latin1(max_mem: int = 8 << 20) -> re2.Options:
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # type: ignore[attr-defined]  # stubs lack it
    options.max_mem = max_mem
    return options


_OPTIONS = _latin1()
"""Every pattern runs on a text's UTF-8 bytes, one byte a character: RE2 never
backtracks (its time is linear in the text), and offsets need no decoding per
search. Patterns are ASCII (a non-ASCII literal is spelled in UTF-8 bytes)."""

Regexp = Any
"""A compiled RE2 pattern over bytes (`re2._Regexp[bytes]`)."""


def _compile(source: str) -> Regexp:
    return re2.compile(source.encode("utf-8"), _OPTIONS)


def _capture_free(source: str) -> Regexp:
    options = _latin1()
    options.never_capture = True
    return re2.compile(source.encode("utf-8"), options)


@dataclass(frozen=True)
class Shape:
    """One credential shape, run on the linear-time engine.

    `prefixes` are what a match starts with (lower case when `folded`): the
    shape is searched only in a text holding one of them (`gated`), and the
    linear-time test repeats each of them to a megabyte. `after` lists the
    bytes that may not follow a match, checked after it (RE2 has no
    lookahead), for the shapes whose pattern reads the byte before them
    (the others end in `_not_followed`); `check(head, secret)` may refuse a
    match; the `secret` group (or the whole match) is widened over the
    token's characters when `widen`.

    A token shape has no group at all: RE2 finds a match without captures
    in one DFA pass, but tracking a group across a long match costs it ten
    to fifty times more. Its match may start with an escape (`lead_escape`:
    a backslash and `n` before the token) and end with the byte `_not_followed` took
    (`tail`); `_shape_spans` leaves both out. A shape whose value follows a
    keyword is matched without captures too (`_valued`): `head`, anchored at
    the match, finds where the value starts; `trail` bytes (a closing quote)
    end the match after it.
    """

    kind: str
    pattern: Regexp
    prefixes: tuple[str, ...]
    folded: bool = False
    gated: bool = True
    after: frozenset[int] = frozenset()
    check: Callable[[bytes, bytes], bool] | None = None
    widen: bool = False
    lead_escape: bool = False
    tail: bool = False
    head: Regexp | None = None
    trail: int = 0

    @property
    def group(self) -> int:
        """The index of the `secret` group, 0 (the whole match) without one."""
        index: int = self.pattern.groupindex.get(b"secret", 0)
        return index

    @property
    def gates(self) -> tuple[bytes, ...]:
        """The prefixes as bytes: one must be in the text (lower-cased when `folded`)."""
        return tuple(prefix.encode() for prefix in self.prefixes)


_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_TOKEN_END = _WORD | frozenset(b"-")
_TOKEN_BYTES = _WORD | frozenset(b"-.+/=~%")
"""What a token may end with: a match's last byte outside these is a separator."""
_B64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _not_followed(chars: frozenset[int]) -> str:
    """RE2 for "the end, or a byte not in `chars`" (it has no lookahead): a token's exact end.

    Inside the pattern, not a check after it: a megabyte of back-to-back
    over-long tokens is then one search, not one refused match per token.
    """
    return "(?:$|[^" + "".join(f"\\x{byte:02x}" for byte in sorted(chars)) + "])"


def _token(
    kind: str, literal: str, rest: str, *, after: frozenset[int] = frozenset(), folded: bool = False
) -> Shape:
    """`literal` + `rest`, not glued to a word before it (an escaped newline is a boundary)."""
    assert literal[:1].isalnum(), literal  # `\b` before it is the start of a word
    lit = re2.escape(literal)
    flags = "(?i)" if folded else ""
    end = _not_followed(after) if after else ""
    pattern = _compile(f"{flags}(?:\\b|\\\\[nrt]){lit}{rest}{end}")
    prefixes = (literal.lower() if folded else literal,)
    return Shape(kind, pattern, prefixes, folded, lead_escape=True, tail=bool(after))


def _valued(
    kind: str, source: str, prefixes: tuple[str, ...], *, trail: int = 0, **options: Any
) -> Shape:
    """A shape whose `secret` group is its value: matched without captures, `head` finds the value.

    `source` is `HEAD(?P<secret>VALUE)` and `trail` fixed bytes: the head is
    everything before the group (its groups balanced), so the value starts
    where `head`, anchored at the match, ends.
    """
    head, marker, _ = source.partition("(?P<secret>")
    assert marker and head, kind
    whole = _capture_free(source.replace("(?P<secret>", "(?:"))
    assert whole.groups == 0, kind  # RE2 still captures a named group under `never_capture`
    return Shape(kind, whole, prefixes, head=_capture_free(head), trail=trail, **options)


_TELEGRAM = Shape(
    "a Telegram bot token",
    _compile(r"(?:^|[^0-9])(?P<secret>[0-9]{8,10}:AA[0-9A-Za-z_\-]{33})"),
    (":AA",),
    after=_TOKEN_END,
)
_BEARER = _valued(
    "a bearer token",
    r"(?i)(?:\b|\\[nrt])bearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{8,}=*)",
    ("bearer",),
    folded=True,
)
_SLASHES = r"(?:\\*/){2}"
"""`//`, also escaped in JSON text (`\\/\\/`, `\\\\/\\\\/`)."""
CREDENTIAL_NAME_WORDS = (
    "key", "token", "secret", "sig", "auth", "password", "passwd", "credential", "session",
)  # fmt: skip
"""A header or query parameter whose name holds one of these carries a credential
(`Ocp-Apim-Subscription-Key`, `X-Functions-Key`, `sig=`, `X-Goog-Signature=`)."""
_NAME_WORDS = "|".join(CREDENTIAL_NAME_WORDS)


def credential_name(name: str) -> bool:
    """Whether a header or parameter named `name` carries a credential."""
    lowered = name.lower()
    return any(word in lowered for word in CREDENTIAL_NAME_WORDS)


HAND_SHAPES: tuple[Shape, ...] = (
    # detect-secrets' OpenAI detector knows only the legacy `T3BlbkFJ` keys;
    # project, service-account and Anthropic keys are plain `sk-` prefixes.
    _token("an Anthropic API key (sk-ant-...)", "sk-ant-", r"[A-Za-z0-9_\-]{8,}"),
    Shape(
        "an OpenAI-style secret key (sk-...)",
        _compile(r"(?:\b|\\[nrt])sk-[A-Za-z0-9_\-]{8,}"),
        ("sk-",),
        check=lambda _, secret: not secret.startswith(b"sk-ant-"),
        lead_escape=True,
    ),
    # Tokens detect-secrets has no plugin for.
    _token("a Hugging Face token (hf_...)", "hf_", r"[A-Za-z0-9]{30,}"),
    _token("a GitHub token", "github_pat_", r"[A-Za-z0-9_]{30,}"),
    _token("a Google API key", "AIza", r"[0-9A-Za-z_\-]{35}", after=_TOKEN_END),
    _token("a Google OAuth access token", "ya29.", r"[0-9A-Za-z_\-]{20,}"),
    _token("a Groq API key", "gsk_", r"[A-Za-z0-9]{20,}"),
    _token("an xAI API key", "xai-", r"[A-Za-z0-9]{20,}"),
    *(_token("a DigitalOcean token", f"do{k}_v1_", r"[a-f0-9]{64}") for k in "opr"),
    *(_token("a HashiCorp Vault token", f"hv{k}.", r"[A-Za-z0-9_\-]{20,}") for k in "sbr"),
    _token("a Shopify token", "shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _token("a Linear API key", "lin_api_", r"[A-Za-z0-9]{32,}"),
    _token("a Notion token", "secret_", r"[A-Za-z0-9]{43}", after=frozenset(_WORD - {ord("_")})),
    _token("a Notion token", "ntn_", r"[A-Za-z0-9]{40,}"),
    _token("an Atlassian API token", "ATATT3", r"[A-Za-z0-9_\-=]{20,}"),
    _token(
        "a Databricks token", "dapi", r"[a-f0-9]{32}(?:-\d)?", after=frozenset(_WORD - {ord("_")})
    ),
    _token("a Pulumi token", "pul-", r"[a-f0-9]{40}"),
    _token("a Mailgun key", "key-", r"[a-f0-9]{32}", after=frozenset(_WORD - {ord("_")})),
    _token("a Doppler token", "dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    _token("an age secret key", "AGE-SECRET-KEY-1", r"[02-9AC-HJ-NP-Z]{58}"),
    # detect-secrets' Telegram plugin takes any `12345678:` + 35 characters
    # (log lines); the second part of a bot token starts with `AA`.
    _TELEGRAM,
    # Its Slack detector needs numeric segments (`xoxb-1-2-abc`); newer tokens have none.
    _token("a Slack token", "xox", r"[abposre]-[A-Za-z0-9\-]{10,}"),
    # Tokens that name their issuer, printed without a keyword (`_secret_shapes`).
    *(
        _token(kind, literal, rest, after=_TOKEN_END if bounded else frozenset())
        for kind, literal, rest, bounded in VENDOR_TOKENS
    ),
    # Two whose literal sits inside the token: an Azure AD client secret
    # (`abc8Q~...`) and a Terraform Cloud token (`<14>.atlasv1.<60-70>`).
    Shape(
        "an Azure AD client secret",
        _compile(
            r"(?:^|[^A-Za-z0-9_~.\-])"
            r"(?P<secret>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})"
        ),
        ("Q~",),
        after=_TOKEN_END | frozenset(b"~."),
    ),
    Shape(
        "a Terraform Cloud token",
        _compile(
            r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}"
            + _not_followed(_TOKEN_END | frozenset(b"="))
        ),
        (".atlasv1.",),
        tail=True,
    ),
    # Wire-level credentials: a bearer token anywhere (a header, a curl command).
    _BEARER,
    # A credential in a URL's query by its name (`?key=`, `&sig=`, `X-Goog-Signature=`),
    # also where JSON escaped the `&` (`\u0026`).
    _valued(
        "a credential in a URL's query",
        rf"(?i)(?:[?&;]|\\u0026)[A-Za-z0-9_.\-]*(?:{_NAME_WORDS})[A-Za-z0-9_.\-]*="
        r"(?P<secret>[^&#\s'\"\\<>]{4,})",
        CREDENTIAL_NAME_WORDS,
        folded=True,
    ),
    # A URL's password whatever its characters (detect-secrets' basic-auth
    # detector refuses `!$&@...` in it, and an empty user name), `\/` escapes too.
    Shape(
        _URL_PASSWORD,
        _compile(r"[A-Za-z0-9+.\-]:" + _SLASHES + r"[^\s:/?#@\[\]\\]*:(?P<secret>[^\s/?#\\]+)@"),
        ("://", ":\\/"),
    ),
)
"""Shapes detect-secrets lacks (each entry says why it is hand-written)."""

_PLUGINS: tuple[tuple[Any, tuple[tuple[str, tuple[str, ...]], ...], bool], ...] = (
    # (plugin, (kind, prefixes) of each of its regexes, whether group 1 is the value)
    (
        AWSKeyDetector,
        (
            ("an AWS access key id", ("A3T", "ABIA", "ACCA", "AKIA", "ASIA")),
            ("an AWS secret access key", ("aws",)),
        ),
        True,
    ),
    (AzureStorageKeyDetector, (("an Azure storage account key", ("AccountKey=",)),), False),
    (BasicAuthDetector, ((_URL_PASSWORD, ("://",)),), True),
    (DiscordBotTokenDetector, (("a Discord bot token", ("M", "N", "O")),), False),
    (GitHubTokenDetector, (("a GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),), False),
    (
        GitLabTokenDetector,
        tuple(
            ("a GitLab token", prefixes)
            for prefixes in (
                ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-"),
                ("GR1348941",),
                ("glcbt-",),
                ("glimt-",),
                ("glptt-",),
                ("glagent-",),
                ("gloas-",),
            )
        ),  # fmt: skip
        False,
    ),
    (JwtTokenDetector, (("a JSON Web Token", ("eyJ",)),), False),
    (MailchimpDetector, (("a Mailchimp key", ("-us",)),), False),
    (NpmDetector, (("an npm token", ("//",)),), True),
    (OpenAIDetector, (("an OpenAI API key", ("sk-",)),), False),
    (PypiTokenDetector, (("a PyPI token", ("pypi-",)),) * 2, False),
    (SendGridDetector, (("a SendGrid key", ("SG.",)),), False),
    (SlackDetector, (("a Slack token", ("xox",)), ("a Slack webhook", ("https://hooks",))), False),
    (SquareOAuthDetector, (("a Square OAuth secret", ("sq0csp-",)),), False),
    (StripeDetector, (("a Stripe key", ("rk_live_", "sk_live_")),), False),
    (TwilioKeyDetector, (("a Twilio key", ("AC",)), ("a Twilio key", ("SK",))), False),
)
"""detect-secrets' plugins run here, and what each regex's match starts with."""

_GATES: dict[str, tuple[str, ...]] = {
    # A plugin regex is searched only where its distinctive literal is (it
    # does not start with it, or starts with a letter of a class).
    "a Mailchimp key": ("-us",),
    "a Discord bot token": (".",),
    "an npm token": (":_authToken=",),
    "an OpenAI API key": ("T3BlbkFJ",),
    "a Stripe key": ("k_live_",),
}


def _python_flags(flags: int) -> str:
    """The inline flags RE2 takes for a Python pattern's `re.I`, `re.S`, `re.M`."""
    return "".join(
        letter for flag, letter in ((re.I, "i"), (re.S, "s"), (re.M, "m")) if flags & flag
    )


def _plugin_shapes() -> tuple[Shape, ...]:
    """Each detect-secrets regex on RE2, named; a value in group 1 becomes the `secret` group.

    RE2 has no lookahead and bounds a repeat at 1000: a trailing "not a word
    character" lookahead becomes `_not_followed`; GitLab's agent token repeat is open. A regex
    without a value group is matched whole, and widened over the token's characters.
    """
    shapes: list[Shape] = []
    for plugin, rows, value_group in _PLUGINS:
        assert len(rows) == len(plugin.denylist), f"{plugin.__name__} changed its regexes"
        for (kind, prefixes), pattern in zip(rows, plugin.denylist, strict=True):
            compiled, tail = _plugin_pattern(pattern, value_group)
            folded = bool(pattern.flags & re.I)
            gates = _GATES.get(kind, prefixes)
            if kind in _GATES:
                _STRESS[kind] = prefixes
            shapes.append(
                Shape(
                    kind,
                    compiled,
                    tuple(g.lower() for g in gates) if folded else gates,
                    folded,
                    widen=b"(?P<secret>" not in compiled.pattern,
                    tail=tail,
                )
            )
    return tuple(shapes)


def _plugin_pattern(pattern: re.Pattern[str], value_group: bool) -> tuple[Regexp, bool]:
    """A detect-secrets regex on RE2, and whether it ends in `_not_followed` (a `tail`)."""
    source = pattern.pattern
    if value_group and pattern.groups:
        source = re.sub(r"(?<!\\)\((?!\?)", "(?P<secret>", source, count=1)
    else:  # its groups only pick prefixes (`(ghp|gho)_...`): mask the whole match
        source = re.sub(r"(?<!\\)\((?!\?)", "(?:", source)
    end = ""
    if source.endswith("(?!\\w)"):
        source, end = source.removesuffix("(?!\\w)"), _not_followed(_WORD)
    source = source.replace("{50,1024}", "{50,}")
    flags = _python_flags(pattern.flags)
    return _compile(f"(?{flags}){source}{end}" if flags else f"{source}{end}"), bool(end)


_STRESS: dict[str, tuple[str, ...]] = {}
"""Shapes gated on a literal inside them: their own first characters, for the linear-time test."""


_BOUNDED_VALUE = r"[A-Za-z0-9_](?:[^\n\r\v'\"]*[^\n\r\v,'\"`])?"
"""The keyword detector's value, kept on one line (its own `[^\\v'"]*` runs
across newlines in a whole text). Values are not bounded in length: on RE2 a
bound costs time (a counted repeat multiplies the automaton's states), and
taking a long value whole masks more, never less."""
_QUOTE = r"['\"`]"


def _keyword_shapes() -> tuple[Shape, ...]:
    """detect-secrets' keyword detector (quoted values), each form that starts at its keyword.

    Left out: `"value" == password` (a comparison in code, not a value given).
    RE2 has no back-references: the closing quote is any quote.
    """
    shapes: list[Shape] = []
    for pattern, group in _keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
        if not pattern.pattern.startswith(_keyword.DENYLIST_REGEX):
            continue
        secret = f"({_keyword.SECRET})"
        assert secret in pattern.pattern, "detect-secrets' keyword SECRET changed"
        head, _, rest = pattern.pattern.partition(secret)
        assert _compile(head).groups == group - 1, "its value is no longer the group named"
        rest = re.sub(r"\(\\\d\)", f"({_QUOTE})", rest)
        assert rest in (f"({_QUOTE})", f"({_QUOTE});"), rest
        source = f"(?{_python_flags(pattern.flags)}){head}(?P<secret>{_BOUNDED_VALUE}){rest}"
        shapes.append(
            _valued("a secret assigned to a keyword", source, _DENYLIST_STARTS,
                    trail=len(rest) - len(_QUOTE) - 1, folded=True)
        )  # fmt: skip
    return tuple(shapes)


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
    "pass", "pgpass", "pwd", "secret", "api_?key", "app_?key", "application_?key", "access_?key",
    "private_?key", "auth_?key",
    "client_?secret", "token", "access_?token", "auth_?token", "refresh_?token", "credential",
)  # fmt: skip

_PLUGIN_SHAPES = _plugin_shapes()
_AWS_SECRET_KEY = _PLUGIN_SHAPES[1]
_ANYWHERE: tuple[Shape, ...] = tuple(s for s in _PLUGIN_SHAPES if s is not _AWS_SECRET_KEY)
DETECTORS: tuple[Shape, ...] = _PLUGIN_SHAPES + _keyword_shapes()
"""Everything taken from detect-secrets."""

_ENTROPY = Base64HighEntropyString()


def _secret_like(value: str) -> bool:
    """After `keyword:`, a value worth masking: not a plain word."""
    if len(value) < 6:
        return False
    if not value.isalpha():
        return True
    return _ENTROPY.calculate_shannon_entropy(value) >= 3.0


def _assigned(head: bytes) -> bool:
    """Whether a keyword's value follows `=` (taken as given), not `:` (prose, YAML)."""
    return head.rfind(b"=") > head.rfind(b":")


_AUTH_SCHEMES = (
    "basic", "digest", "token", "negotiate", "ntlm", "hoba", "mutual", "scram-sha-1",
    "scram-sha-256", "vapid", "aws4-hmac-sha256", "dpop", "gnap", "privatetoken", "concealed",
    "apikey", "api-key", "key", "sso-key", "oauth",
)  # fmt: skip
"""HTTP authentication schemes (IANA's registry, and a few vendors'): they stay,
the credential after them is masked."""
_SCHEMES = "|".join(re.escape(s) for s in _AUTH_SCHEMES)
_ESCAPED_QUOTE = r"(?:\\*['\"]|\\+u002[27])"
"""A quote, also escaped once or more in JSON text (`\\"`, `\\\\\\"`, `\\u0022`)."""

_HYPHENATED_NAME = (
    rf"[A-Za-z0-9\-]*(?:-[A-Za-z0-9]*(?:{_NAME_WORDS})|(?:{_NAME_WORDS})[A-Za-z0-9]*-)"
    r"[A-Za-z0-9\-]*"
)
"""A header name with a hyphen and a credential word (`Ocp-Apim-Subscription-Key`)."""

_IN_CONTEXT_SHAPES: tuple[Shape, ...] = (
    Shape(_AWS_SECRET_KEY.kind, _AWS_SECRET_KEY.pattern, ("aws",), folded=True),
    Shape(
        "an AWS secret access key",
        # Its AWS detector needs the secret access key in quotes (source code);
        # logs and env dumps write `AWS_SECRET_ACCESS_KEY=...`.
        _compile(
            r"(?i)aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[=:]\s*['\"]?"
            r"(?P<secret>[0-9a-zA-Z/+]{40})" + _not_followed(_B64_CHARS)
        ),
        ("aws",),
        folded=True,
    ),
    _valued(
        "a credential header",
        # `proxy-authorization` and `x-api-key` end in these names.
        rf"(?i)(?:authorization|api-key){_ESCAPED_QUOTE}?[ \t]*[:=][ \t]*{_ESCAPED_QUOTE}?"
        rf"(?:(?:{_SCHEMES})[ \t]+)?(?P<secret>[A-Za-z0-9+/._~\-][^\s'\",;\\]{{3,}})",
        ("authorization", "api-key"),
        folded=True,
        check=lambda _, secret: secret.lower().decode() not in ("bearer", *_AUTH_SCHEMES),
    ),
    _valued(
        "a registry auth value",
        # Docker's `"auth": "<base64 user:password>"`, npm's `_auth=<base64>`.
        rf"(?i)(?:[^A-Za-z0-9]|^)auth{_ESCAPED_QUOTE}?[ \t]*[:=][ \t]*{_ESCAPED_QUOTE}?"
        r"(?P<secret>[A-Za-z0-9+/]{12,}={0,2})",
        ("auth",),
        folded=True,
        after=_B64_CHARS | {ord("=")},
        check=lambda _, secret: _secret_like(secret.decode()),
    ),
    _valued(
        "a credential header",
        # `Cookie: a=1; b=2` and `Set-Cookie: ...`: from the first `name=` to the
        # end of the line, its quote or an escape (`xcookie:` is another name).
        r"(?i)(?:[^A-Za-z0-9]|^)[A-Za-z0-9]?cookie['\"]?[ \t]*[:=][ \t]*['\"]?"
        r"(?P<secret>[!#$%&*+\-.^_`|~0-9A-Za-z]+=[^\r\n'\"\\]+)",
        ("cookie",),
        folded=True,
    ),
    _valued(
        "a credential header",
        # Any header whose name holds a credential word (`Ocp-Apim-Subscription-Key:`,
        # `X-Functions-Key:`): a name with a hyphen, its value on the same line.
        rf"(?i){_HYPHENATED_NAME}{_ESCAPED_QUOTE}?[ \t]*:[ \t]*{_ESCAPED_QUOTE}?"
        r"(?P<secret>[A-Za-z0-9+/._~\-][^\s'\",;\\]{5,})",
        CREDENTIAL_NAME_WORDS,
        folded=True,
        check=lambda _, secret: _secret_like(secret.decode()) and not secret.isdigit(),
    ),
    _valued(
        "a secret given as a command-line flag",
        # `--token VALUE` on a command line (`--token=VALUE` is a keyword assignment).
        r"(?i)--(?:password|passwd|token|api-key|apikey|secret|client-secret|access-token"
        r"|auth-token|private-key)[ \t]+['\"]?(?P<secret>[A-Za-z0-9][^\s'\"`]{3,})",
        ("--",),
    ),
    Shape(
        "a credential header",
        # A YAML mapping key (a recorded header) whose value follows on the next lines.
        _compile(
            r"(?im)(?:^|\r)[ \t]*['\"]?(?:authorization|proxy-authorization|x-api-key|api-key"
            r"|cookie|set-cookie)['\"]?[ \t]*:[ \t]*(?:\r|$)"
        ),
        ("authorization", "api-key", "cookie"),
        folded=True,
    ),
    _valued(
        "a secret assigned to a keyword",
        # `DB_PASSWORD=hunter22`, `api_key: 9f...`: a value after a keyword, quoted
        # or not (`\"` and `\u0022` too: JSON inside a JSON string). Not inside a
        # word, but after `_`, `.`, `-` (`DB_PASSWORD`) or an escape (`\npassword`).
        # After `=` the value is taken; after `:` (prose, YAML) only when it is
        # secret-like (`_secret_like`).
        r"(?i)(?:\\[nrt]|\\u002[27]|[^A-Za-z0-9]|^)"
        r"(?:password|passwd|passphrase|pgpassword|pwd|pass|secret|secret_?key"
        r"|secret_?access_?key|api_?key|app_?key|application_?key|access_?key|private_?key"
        r"|auth_?key|client_?secret"
        r"|token|access_?token|auth_?token|refresh_?token|credentials?)"
        rf"{_ESCAPED_QUOTE}?[ \t]*[:=][ \t]*(?:{_ESCAPED_QUOTE}|`)?"
        r"(?P<secret>[^\s'\"`,;\\\[\]{}()<>]{4,})",
        _KEYWORD_STARTS,
        folded=True,
        check=lambda head, secret: _assigned(head) or _secret_like(secret.decode()),
    ),
)
"""Shapes that start with a keyword (case-insensitive): searched only in a text
holding one of their words."""

SECRET_SHAPES: tuple[Shape, ...] = (
    *HAND_SHAPES,
    *_ANYWHERE,
    *DETECTORS[len(_PLUGIN_SHAPES) :],
    *_IN_CONTEXT_SHAPES,
)
"""Every shape, each searched over the whole text on RE2 (the key blocks aside)."""

_KEY_BLOCKS: tuple[Shape, ...] = (
    Shape(
        "a private key block",
        _compile(
            r"(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*)"
        ),
        ("-----BEGIN",),
    ),
    Shape(
        "a private key block",
        _compile(
            r"(?s)---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
            r"(?:.*?---- END SSH2 ENCRYPTED PRIVATE KEY ----|.*)"
        ),
        ("---- BEGIN",),
    ),
    Shape(
        "a private key block",
        _compile(r"(?s)PuTTY-User-Key-File-\d+:(?:.*?Private-MAC:[ \t]*[0-9a-fA-F]*|.*)"),
        ("PuTTY-User-Key-File-",),
    ),
    Shape(
        "a private key block",
        _compile("|".join(p.pattern for p in PrivateKeyDetector.denylist)),
        ("BEGIN", "PuTTY"),
    ),
)
"""Whole key blocks, header to footer (to the end of the text when it has none).
detect-secrets' private-key plugin finds their headers (the last); the scan of
one line at a time still sees a header alone."""

_BASE64_RUN = Shape(
    "a secret inside base64",
    # kubeconfig `client-key-data`, `.dockerconfigjson`, a Secret's `data`:
    # the run is masked when what it encodes holds a secret.
    _compile(r"[A-Za-z0-9+/]{20,}={0,2}"),
    ("LS0t", "eyJ"),
    gated=False,
)


def shape_prefixes() -> tuple[str, ...]:
    """What every shape's match starts with: the linear-time test and the bench repeat each."""
    found: list[str] = []
    for shape in (*SECRET_SHAPES, *_KEY_BLOCKS, _BASE64_RUN):
        found += [*shape.prefixes, *_STRESS.get(shape.kind, ())]
    return tuple(dict.fromkeys(found))


_TRIM = frozenset(b" \t\r\n=:\"'")
_WIDEN = _compile(r"[A-Za-z0-9_\-.+/=]*")
"""A whole-match finding is widened over a token's characters (`sk_live_` keys
outgrew the plugin's 24 characters; its JWT pattern stops before the signature)."""
_KNOWN_KIND = "a configured secret"
_lock = threading.Lock()
_secrets: tuple[str, ...] = ()
_secrets_pattern: Regexp | None = None


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
        _secrets_pattern = _compile("|".join(re2.escape(known) for known in _secrets))
        _redacted_short.cache_clear()  # what it remembers was redacted without this one


def _shape_spans(shape: Shape, data: bytes) -> list[tuple[str, int, int]]:
    """`shape`'s findings in `data` as byte spans: its `secret` group, or its trimmed match.

    The next search starts past what a finding was widened over, and past the
    rest of a token too long for the shape (`after`): a megabyte made of one
    token's head is then a handful of searches, not one per head.
    """
    found: list[tuple[str, int, int]] = []
    group = shape.group
    size = len(data)
    position = 0
    while position <= size:
        match = shape.pattern.search(data, position)
        if match is None:
            break
        end_of_match = match.end()
        position = _search_on(data, match.start(), end_of_match)
        if shape.after and end_of_match < size and data[end_of_match] in shape.after:
            position = _run_end(data, end_of_match, shape.after)
            continue
        first, last = match.span(group)
        if shape.head is not None:
            head_end = shape.head.match(data, first).end()
            first, last, head = head_end, last - shape.trail, data[first:head_end]
        else:
            head = b""
        if shape.lead_escape and data[first] == 0x5C:  # `\n` before the token
            first += 2
        if shape.tail and (last < size or data[last - 1] not in _TOKEN_BYTES):
            last -= 1  # the byte `_not_followed` took (none at the end of the text)
        if shape.check is not None and not shape.check(head, data[first:last]):
            continue
        if shape.widen:
            last = _WIDEN.match(data, last).end()
            position = max(position, last)
            while first < last and data[first] in _TRIM:
                first += 1
            while last > first and data[last - 1] in _TRIM:
                last -= 1
        if last > first and data[first:last] not in _MASKS:
            found.append((shape.kind, first, last))
    return found


def _search_on(data: bytes, start: int, end: int) -> int:
    """Where the search goes on after a match of `data[start:end]`.

    Past it, one byte on for an empty one, and on its last byte when that is
    a CR: a lone CR that ended one header line also starts the next.
    """
    if end == start:
        return end + 1
    return end - 1 if end - 1 > start and data[end - 1] == 0x0D else end


def _run_end(data: bytes, position: int, chars: frozenset[int]) -> int:
    """Where the run of `chars` starting at `position` ends."""
    pattern = _RUNS.get(chars)
    if pattern is None:
        pattern = _RUNS[chars] = _compile(
            "[" + "".join(f"\\x{byte:02x}" for byte in sorted(chars)) + "]*"
        )
    end: int = pattern.match(data, position).end()
    return end


_RUNS: dict[frozenset[int], Regexp] = {}


def _gate_set(folded: bool) -> tuple[Any, tuple[bytes, ...]]:
    """One RE2 set of every shape's gates (case-insensitive ones apart), and the gates in order.

    One pass over the text tells which gates it holds: hundreds of `in` tests
    cost a millisecond each on a megabyte made of their first characters. The
    set is literals only, so its automaton stays small (memory is no bound
    that could make it give up).
    """
    gates = tuple(sorted({g for s in SECRET_SHAPES if s.folded == folded for g in s.gates}))
    found = re2.Set.SearchSet(_latin1(256 << 20))
    for gate in gates:
        found.Add((b"(?i)" if folded else b"") + re2.escape(gate))
    found.Compile()
    return found, gates


_GATE_SETS = (_gate_set(False), _gate_set(True))
_BY_GATE: dict[tuple[bool, bytes], list[int]] = {}
"""(folded, gate) -> the positions in `SECRET_SHAPES` of the shapes it opens."""
for _index, _shape in enumerate(SECRET_SHAPES):
    for _gate in _shape.gates:
        _BY_GATE.setdefault((_shape.folded, _gate), []).append(_index)
_UNGATED = [index for index, shape in enumerate(SECRET_SHAPES) if not shape.gated]


def _shapes_to_run(data: bytes) -> list[Shape]:
    """The shapes one of whose gates `data` holds, in table order."""
    chosen = set(_UNGATED)
    for folded, (found, gates) in zip((False, True), _GATE_SETS, strict=True):
        for index in found.Match(data) or ():
            chosen.update(_BY_GATE[(folded, gates[index])])
    return [SECRET_SHAPES[index] for index in sorted(chosen)]


def _byte_spans(data: bytes, *, blocks: bool, nested: bool) -> list[tuple[str, int, int]]:
    """Every shape's findings in `data` (UTF-8), as byte spans."""
    # Base64 runs first: a run that also matches a shape is named for what it encodes.
    found = [] if nested else _encoded_spans(data)
    pattern = _secrets_pattern
    if pattern is not None:
        found += [(_KNOWN_KIND, *m.span()) for m in pattern.finditer(data)]
    for shape in _shapes_to_run(data):
        found += _shape_spans(shape, data)
    if blocks:
        found += _key_block_spans(data)
    return found


def _key_block_spans(data: bytes) -> list[tuple[str, int, int]]:
    if b"PRIVATE" not in data and b"PuTTY" not in data:
        return []
    found: list[tuple[str, int, int]] = []
    for shape in _KEY_BLOCKS:
        found += [(shape.kind, *m.span()) for m in shape.pattern.finditer(data)]
    return found


def _encoded_spans(data: bytes) -> list[tuple[str, int, int]]:
    """Base64 runs whose decoded text holds a secret (searched once: no deeper)."""
    found: list[tuple[str, int, int]] = []
    for match in _BASE64_RUN.pattern.finditer(data):
        first, last = match.span()
        run = data[first:last]
        try:
            decoded = binascii.a2b_base64(run + b"=" * (-len(run.rstrip(b"=")) % 4))
            text = decoded.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        inner = text.encode("utf-8", "surrogatepass")
        if _byte_spans(inner, blocks=True, nested=True):
            found.append((_BASE64_RUN.kind, first, last))
    return found


def _char_spans(text: str, data: bytes, spans: list[tuple[str, int, int]]) -> list[SecretMatch]:
    """Byte spans of `data` (`text` in UTF-8) as character spans of `text` (whole characters)."""
    if len(data) == len(text):
        return [SecretMatch(kind, first, last) for kind, first, last in spans]
    size = len(data)

    def start(offset: int) -> int:
        while 0 < offset < size and 0x80 <= data[offset] < 0xC0:
            offset -= 1
        return offset

    def end(offset: int) -> int:
        while offset < size and 0x80 <= data[offset] < 0xC0:
            offset += 1
        return offset

    bounded = [(kind, start(first), end(last)) for kind, first, last in spans]
    offsets = sorted({offset for _, first, last in bounded for offset in (first, last)})
    chars: dict[int, int] = {}
    position = count = 0
    for offset in offsets:
        count += len(data[position:offset].decode("utf-8", "surrogatepass"))
        chars[offset] = count
        position = offset
    return [SecretMatch(kind, chars[first], chars[last]) for kind, first, last in bounded]


CUT_TAIL_BYTES = 4096
"""How far back from a cut its unfinished credential is looked for: longer than any credential."""
_CUT_KIND = "the start of a credential, cut"
_CUT_MIN_REST = 6
"""Characters after an issuer's prefix before a cut token counts as a credential's start:
fewer give away next to nothing, and a word that merely starts like a prefix is left."""
_CUT_TOKEN = r"[A-Za-z0-9_\-.+/=~%]"
_CUT_PREFIXES_ALSO = ("sk_live_", "rk_live_")
"""Stripe's plugin shape names `k_live_` (its pattern reads the `s` or `r` before it)."""
_NOT_A_START = frozenset({"-us"})
"""Mailchimp's `-us` ends its key: a text cut before it holds only hex."""


def _issuer_prefixes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The literals credential shapes start with that name the issuer (`sk-ant-`, `ghp_`).

    Those that start with a letter or digit (a token's start), and those that
    start with a sign (`:AA` after a Telegram bot's number, `.atlasv1.`).
    """
    found: set[str] = set(_CUT_PREFIXES_ALSO)
    for shape in (*SECRET_SHAPES, _BASE64_RUN):
        if not shape.folded:
            found.update(shape.prefixes)
    by_length = sorted(found - _NOT_A_START, key=len, reverse=True)
    words = tuple(prefix for prefix in by_length if prefix[:1].isalnum())
    signs = tuple(
        prefix
        for prefix in by_length
        if not prefix[:1].isalnum() and sum(map(str.isalpha, prefix)) >= 2
    )
    return words, signs


def _alternatives(prefixes: tuple[str, ...]) -> str:
    return "(?:" + "|".join(re2.escape(prefix) for prefix in prefixes) + ")"


_WORD_PREFIXES, _SIGN_PREFIXES = _issuer_prefixes()
_CUT_SHAPES: tuple[tuple[Regexp, bool], ...] = (
    # An issuer's prefix and enough of a token after it, up to the cut: one
    # that starts with a letter or digit starts a word, one with a sign may not.
    (
        _compile(
            f"(?:^|[^A-Za-z0-9])(?P<secret>{_alternatives(_WORD_PREFIXES)}"
            f" ?(?P<rest>{_CUT_TOKEN}{{{_CUT_MIN_REST},}}))\\z"
        ),
        True,
    ),
    (
        _compile(
            f"(?P<secret>{_alternatives(_SIGN_PREFIXES)}"
            f" ?(?P<rest>{_CUT_TOKEN}{{{_CUT_MIN_REST},}}))\\z"
        ),
        True,
    ),
    # A value being assigned to a credential name (`DB_PASSWORD=hunt`): any value.
    (
        _compile(
            rf"(?i)(?:{_NAME_WORDS})[A-Za-z0-9_.\-]*['\"]?[ \t]*[:=][ \t]*['\"]?"
            r"(?P<secret>(?P<rest>[^\s'\"]{4,}))\z"
        ),
        False,
    ),
    # The credential after an HTTP authentication scheme (`Bearer eyJ...`).
    (
        _compile(rf"(?i)\b(?:bearer|{_SCHEMES})[ \t]+(?P<secret>(?P<rest>[^\s'\"]{{4,}}))\z"),
        True,
    ),
)
"""What a text cut in the middle of a credential ends with: the credential's first
part, which no whole-credential shape matches (too short, or its end missing).
With True, what follows the prefix or scheme must look generated (`_generated`):
`path/to/file` starts like an Airtable token, `API-gateway` like an Octopus key."""
_DIGITS_AND_CAPITALS = _compile("[0-9A-Z]")


def _generated(rest: bytes) -> bool:
    """Whether a token's characters look generated: a digit or a capital among them.

    Six random characters of a key's alphabet have neither once in a few hundred;
    the ends of words and paths rarely have either.
    """
    return _DIGITS_AND_CAPITALS.search(rest) is not None


def _cut_spans(data: bytes) -> list[tuple[str, int, int]]:
    """The unfinished credential `data` ends with, as byte spans.

    Searched in its last `CUT_TAIL_BYTES` only: bounded time whatever the length.
    """
    start = max(0, len(data) - CUT_TAIL_BYTES)
    found: list[tuple[str, int, int]] = []
    for pattern, generated in _CUT_SHAPES:
        match = pattern.search(data, start)
        if match is None:
            continue
        rest = match.group(pattern.groupindex[b"rest"])
        if not generated or _generated(rest):
            found.append((_CUT_KIND, *match.span(pattern.groupindex[b"secret"])))
    secrets = _secrets
    tail = data[start:].decode("utf-8", "surrogatepass") if secrets else ""
    for secret in secrets:  # a configured key, cut: its first characters end the text
        for size in range(min(len(secret) - 1, len(tail)), MIN_SECRET_CHARS - 1, -1):
            if tail.endswith(secret[:size]):
                cut = len(secret[:size].encode("utf-8", "surrogatepass"))
                found.append((_KNOWN_KIND, len(data) - cut, len(data)))
                break
    return found


def find_secrets(
    text: str,
    *,
    extra: Iterable[str] = (),
    extra_kind: str = _KNOWN_KIND,
    blocks: bool = True,
    cut: bool = False,
) -> list[SecretMatch]:
    """Every secret in `text`: registered, in `extra`, credential-shaped or a key block.

    Spans may overlap (`redact` merges them); `extra` values (of any length)
    are reported as `extra_kind`. A span that is already `[redacted]` is not
    a finding, so redacting twice changes nothing. `blocks=False` leaves the
    key blocks out (`redact_many` finds them text by text). Every shape runs
    on RE2 over the text's UTF-8 bytes: time linear in the text.

    `cut=True` is for a text that stopped where it was cut (a cancelled or
    broken stream, a body read in part): it may end in the first part of a
    credential, which no shape matches whole, so what it ends with is a
    finding too when it starts like one (an issuer's prefix, a value
    assigned to a credential name or given after an auth scheme, the start
    of a configured key).
    """
    data = text.encode("utf-8", "surrogatepass")
    spans = _byte_spans(data, blocks=blocks, nested=False)
    if cut:
        spans += _cut_spans(data)
    found = _char_spans(text, data, spans)
    for value in extra:
        if value:
            start = text.find(value)
            while start != -1:
                found.append(SecretMatch(extra_kind, start, start + len(value)))
                start = text.find(value, start + 1)
    return found


def _key_blocks(text: str) -> list[SecretMatch]:
    data = text.encode("utf-8", "surrogatepass")
    return _char_spans(text, data, _key_block_spans(data))


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


def redact(text: str, *, extra: Iterable[str] = (), cut: bool = False) -> str:
    """`text` with every secret `find_secrets` sees replaced by `[redacted]` (`cut`: see there)."""
    matches = find_secrets(text, extra=extra, cut=cut)
    return _masked(text, matches) if matches else text


class Redacted(str):
    """Text that has been through `redact`: `RedactingFormatter` need not search it again.

    Made by `redacted`; built directly only from text the program makes from
    numbers and its own ids, which no secret can reach.
    """

    __slots__ = ()


_REMEMBERED_CHARS = 256
"""Texts up to this long are remembered by `redacted` (log fields: hints, routes, models)."""


def redacted(text: str, *, cut: bool = False) -> Redacted:
    """`text` redacted (`cut`: see `find_secrets`), marked as such.

    A short text is remembered (the same hints, routes and models come back
    in every stream's log line); registering a secret forgets them all.
    """
    if cut or len(text) > _REMEMBERED_CHARS:
        return Redacted(redact(text, cut=cut))
    return _redacted_short(text)


@functools.lru_cache(maxsize=1024)
def _redacted_short(text: str) -> Redacted:
    return Redacted(redact(text))


def _already_redacted(record: logging.LogRecord) -> bool:
    """True when `record`'s message is made only of redacted text.

    That is: a template `redact` leaves as it is, filled with numbers and
    `Redacted` texts. Each piece has been searched whole, so the line they
    make needs no search of its own: the per-stream line is then searched
    field by field, remembered ones for free, not once more whole.
    """
    args = record.args
    if not isinstance(args, tuple) or not args:
        return False
    if not all(type(arg) in _PLAIN_NUMBERS or isinstance(arg, Redacted) for arg in args):
        return False
    template = record.msg
    return type(template) is str and redacted(template) == template


_PLAIN_NUMBERS = (int, float)


def redact_cut_end(text: str) -> str:
    """`text`, cut where it stopped (a cancelled answer), with its unfinished credential masked.

    Only that: the rest is masked wherever it is written, as always.
    """
    data = text.encode("utf-8", "surrogatepass")
    spans = _cut_spans(data)
    return _masked(text, _char_spans(text, data, spans)) if spans else text


def _masked(text: str, matches: Iterable[SecretMatch]) -> str:
    pieces: list[str] = []
    position = 0
    for start, end, mask in _merged(matches):
        pieces.append(text[position:start])
        pieces.append(mask)
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def redact_pieces(pieces: list[str], *, extra: Iterable[str] = (), cut: bool = False) -> list[str]:
    """`pieces` redacted as one text (a streamed answer), still as many pieces.

    A secret split across pieces is masked: its first piece gets `[redacted]`
    and the others lose their part of it, so `"".join` of the result is
    `redact("".join(pieces))`.
    """
    text = "".join(pieces)
    spans = _merged(find_secrets(text, extra=extra, cut=cut))
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
    return _cut(redact(text), limit)


def _cut(text: str, limit: int) -> str:
    """`clip` without the redaction: for text that has just been redacted."""
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
        """Format `record`'s message as one redacted, escaped, bounded line.

        Redacted whole first (a key block spans lines), unless it is made
        only of redacted text (`Redacted` arguments, as the per-stream line
        is), then, only when there was something to escape, again: an escape
        can join what the first pass saw apart. Searching the per-stream line
        whole cost about 45 us of a gateway's CPU per request (issue 44).
        """
        text = record.message if _already_redacted(record) else redact(record.message)
        if _CONTROL.search(text):
            text = redact(_CONTROL.sub(_escape, text))
        record.message = _cut(text, self._max_chars)
        return super().formatMessage(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        """Format a traceback, redacted."""
        return redact(super().formatException(ei))


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{ord(char):02x}")
