"""One made-up secret of every kind the redaction path detects, as it shows up in text.

Every value is random (from the given `random.Random`), built from its
prefix at run time: none is, or was, a real credential, and this file holds
no credential-shaped string. `Planted.text` is how the secret appears (an
env line, a URL, a header, a key block); `Planted.parts` are the pieces of
it that must never be written anywhere (for a key block: every line of its
body and its END line, not only the header).
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

from navagent.core._secret_shapes import VENDOR_TOKENS

__all__ = ["Planted", "planted_secrets"]

_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_UPPER_ALNUM = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


@dataclass(frozen=True)
class Planted:
    """A secret as it appears in text, what kind the scan calls it, and what must vanish."""

    kind: str
    text: str
    parts: tuple[str, ...]
    multiline: bool = False


def _pick(rng: random.Random, alphabet: str, count: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


def _b64url(data: dict[str, object]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _key_block(rng: random.Random, label: str, *, pgp: bool = False) -> Planted:
    body = [_pick(rng, _B64, 64) for _ in range(4)] + [_pick(rng, _B64, 24)]
    lines = [f"-----BEGIN {label}-----"]
    if pgp:
        lines += ["Version: GnuPG v2", ""]
    lines += body
    if pgp:
        lines.append("=" + _pick(rng, _B64, 4))
    lines.append(f"-----END {label}-----")
    return Planted("a private key block", "\n".join(lines), (*body, f"END {label}"), multiline=True)


def planted_secrets(rng: random.Random) -> list[Planted]:
    """One secret of each detected kind (two forms where the detector has two)."""
    jwt = ".".join(
        (
            _b64url({"alg": "HS256", "typ": "JWT"}),
            _b64url({"sub": _pick(rng, _ALNUM, 12), "iat": rng.randrange(10**9, 2 * 10**9)}),
            _pick(rng, _ALNUM + "-_", 43),
        )
    )
    aws_secret = _pick(rng, _B64, 40)
    url_password = _pick(rng, _ALNUM, 10) + "!$&" + _pick(rng, _ALNUM, 6)
    route_password = _pick(rng, _ALNUM, 14)
    env_password = _pick(rng, _ALNUM, 16)
    quoted_password = _pick(rng, _ALNUM, 18)
    api_key = _pick(rng, _HEX, 32)
    bearer = _pick(rng, _ALNUM, 40)
    ibm = _pick(rng, _HEX, 48)
    cloudant = _pick(rng, _HEX, 64)
    softlayer = _pick(rng, _LOWER_ALNUM, 64)
    npm = "npm" + "_" + _pick(rng, _ALNUM, 36)
    basic = base64.b64encode(f"ops:{_pick(rng, _ALNUM, 14)}".encode()).decode()
    cookie = _pick(rng, _URLSAFE, 32)
    registry = base64.b64encode(f"ci:{_pick(rng, _ALNUM, 20)}".encode()).decode()
    flag = _pick(rng, _ALNUM, 32)
    pg_password = _pick(rng, _ALNUM, 16)
    simple = {
        "a JSON Web Token": jwt,
        "an AWS access key id": "AK" + "IA" + _pick(rng, _UPPER_ALNUM, 16),
        "a GitHub token": "gh" + "p_" + _pick(rng, _ALNUM, 36),
        "a GitLab token": "gl" + "pat-" + _pick(rng, _ALNUM + "_-", 20),
        "a Stripe key": "sk" + "_live_" + _pick(rng, _ALNUM, 24),
        "a Hugging Face token (hf_...)": "hf" + "_" + _pick(rng, _ALNUM, 34),
        "a Slack token": "xo" + f"xb-{rng.randrange(10**11, 10**12)}-"
        + f"{rng.randrange(10**12, 10**13)}-" + _pick(rng, _LOWER_ALNUM, 24),
        "a SendGrid key": "SG" + "." + _pick(rng, _ALNUM, 22) + "." + _pick(rng, _ALNUM, 43),
        "a Twilio key": "S" + "K" + _pick(rng, _HEX, 32),
        "a Mailchimp key": _pick(rng, _HEX, 32) + "-us" + str(rng.randrange(1, 20)),
        "a Discord bot token": "M" + _pick(rng, _ALNUM, 23) + "." + _pick(rng, _ALNUM, 6)
        + "." + _pick(rng, _ALNUM, 27),
        "a PyPI token": "py" + "pi-AgEIcHlwaS5vcmc" + _pick(rng, _ALNUM, 70),
        "a Square OAuth secret": "sq0" + "csp-" + _pick(rng, _ALNUM, 43),
        "an Anthropic API key (sk-ant-...)": "sk-" + "ant-api03-" + _pick(rng, _ALNUM, 40),
        "an OpenAI-style secret key (sk-...)": "sk-" + "proj-" + _pick(rng, _ALNUM, 40),
        "a Google API key": "AI" + "za" + _pick(rng, _ALNUM, 35),
        "a Google OAuth access token": "ya" + "29." + _pick(rng, _URLSAFE, 60),
        "a Groq API key": "gs" + "k_" + _pick(rng, _ALNUM, 52),
        "an xAI API key": "xa" + "i-" + _pick(rng, _ALNUM, 80),
        "a DigitalOcean token": "do" + "p_v1_" + _pick(rng, _HEX, 64),
        "a HashiCorp Vault token": "hv" + "s." + _pick(rng, _URLSAFE, 90),
        "a Shopify token": "sh" + "pat_" + _pick(rng, _HEX, 32),
        "a Linear API key": "lin" + "_api_" + _pick(rng, _ALNUM, 40),
        "a Notion token": "nt" + "n_" + _pick(rng, _ALNUM, 46),
        "an Atlassian API token": "ATA" + "TT3" + _pick(rng, _URLSAFE, 180),
        "a Databricks token": "da" + "pi" + _pick(rng, _HEX, 32),
        "a Pulumi token": "pu" + "l-" + _pick(rng, _HEX, 40),
        "a Mailgun key": "ke" + "y-" + _pick(rng, _HEX, 32),
        "a Doppler token": "dp" + ".pt." + _pick(rng, _ALNUM, 43),
        "an age secret key": "AGE-" + "SECRET-KEY-1" + _pick(rng, _BECH32, 58),
        "a Telegram bot token": f"{rng.randrange(10**8, 10**10)}:" + "AA"
        + _pick(rng, _URLSAFE, 33),
        "an Azure storage account key": "AccountKey=" + _pick(rng, _ALNUM, 88),
    }  # fmt: skip
    found = [Planted(kind, value, (value,)) for kind, value in simple.items()]
    found[-1] = Planted(found[-1].kind, found[-1].text, (found[-1].text[len("AccountKey=") :],))
    found += [
        Planted("an AWS secret access key", f"AWS_SECRET_ACCESS_KEY={aws_secret}", (aws_secret,)),
        Planted(
            "a password in a URL",
            f"postgres://app:{url_password}@db.internal:5432/app",
            (url_password, url_password[:10]),
        ),
        Planted(
            "a password in a URL",
            f"https://ops:{route_password}@example.invalid/",
            (route_password,),
        ),
        Planted("a secret assigned to a keyword", f"DB_PASSWORD={env_password}", (env_password,)),
        Planted(
            "a secret assigned to a keyword", f'password = "{quoted_password}"', (quoted_password,)
        ),
        Planted("a secret assigned to a keyword", f"api_key: {api_key}", (api_key,)),
        Planted("a bearer token", f"Authorization: Bearer {bearer}", (bearer,)),
        Planted("a credential header", f"Authorization: Basic {basic}", (basic,)),
        Planted("a credential header", f"Cookie: theme=dark; sid={cookie}", (cookie,)),
        Planted(
            "a registry auth value",
            f'{{"auths": {{"registry.example.invalid": {{"auth": "{registry}"}}}}}}',
            (registry,),
        ),
        Planted("a secret given as a command-line flag", f"nav login --token {flag}", (flag,)),
        Planted("a secret assigned to a keyword", f"PGPASSWORD={pg_password} psql", (pg_password,)),
        Planted("a secret assigned to a keyword", f"cos_hmac_secret_access_key = {ibm}", (ibm,)),
        Planted("a secret assigned to a keyword", f"cloudant_password = {cloudant}", (cloudant,)),
        Planted("a secret assigned to a keyword", f"softlayer_api_key = {softlayer}", (softlayer,)),
        Planted("an npm token", f"//registry.npmjs.org/:_authToken={npm}", (npm,)),
        _key_block(rng, "RSA PRIVATE KEY"),
        _key_block(rng, "OPENSSH PRIVATE KEY"),
        _key_block(rng, "PGP PRIVATE KEY BLOCK", pgp=True),
    ]
    return found + _vendor_tokens(rng) + _by_name(rng) + _embedded(rng)


def _vendor_tokens(rng: random.Random) -> list[Planted]:
    """A random token of every row of the vendor table, and every prefix of the plugins' own."""
    found = []
    for kind, literal, rest, _ in VENDOR_TOKENS:
        value = literal + _sample(rng, rest)
        found.append(Planted(kind, value, (value,)))
    gl = "gl"  # split: this file holds no credential-shaped literal
    more = {
        "a GitHub token": [
            *(p + _pick(rng, _ALNUM, 36) for p in ("gho_", "ghu_", "ghs_", "ghr_")),
            "github" + "_pat_" + _pick(rng, _ALNUM + "_", 82),
        ],
        "a GitLab token": [
            *(
                p + _pick(rng, _ALNUM + "_-", 24)
                for p in (*(gl + k for k in ("dt-", "ft-", "soat-", "rt-", "cbt-")), "GR1348941")
            ),
            gl + "imt-" + _pick(rng, _ALNUM, 25),
            gl + "ptt-" + _pick(rng, _ALNUM, 40),
            gl + "agent-" + _pick(rng, _ALNUM, 60),
            gl + "oas-" + _pick(rng, _ALNUM, 64),
        ],
        "an AWS access key id": [
            p + _pick(rng, _UPPER_ALNUM, 16) for p in ("AS" + "IA", "AB" + "IA", "AC" + "CA")
        ],
        "a Twilio key": ["A" + "C" + _pick(rng, _HEX, 32)],
        "a Stripe key": ["rk" + "_live_" + _pick(rng, _ALNUM, 30)],
        "a HashiCorp Vault token": ["hv" + f"{k}." + _pick(rng, _URLSAFE, 40) for k in "br"],
        "a DigitalOcean token": ["do" + f"{k}_v1_" + _pick(rng, _HEX, 64) for k in "or"],
        "a PyPI token": ["py" + "pi-AgENdGVzdC5weXBpLm9yZw" + _pick(rng, _ALNUM, 70)],
        "a Slack token": ["xo" + "xp-" + _pick(rng, _ALNUM, 40)],
        "an Anthropic API key (sk-ant-...)": ["sk-" + "ant-admin01-" + _pick(rng, _URLSAFE, 60)],
        "an OpenAI-style secret key (sk-...)": [
            "sk-" + "or-v1-" + _pick(rng, _HEX, 64),
            "sk-" + "svcacct-" + _pick(rng, _URLSAFE, 60),
        ],
        "a Notion token": ["sec" + "ret_" + _pick(rng, _ALNUM, 43)],
        "a Shopify token": ["sh" + f"p{k}_" + _pick(rng, _HEX, 32) for k in ("ca", "pa", "ss")],
        "an Azure AD client secret": [
            _pick(rng, _ALNUM, 3) + str(rng.randrange(10)) + "Q" + "~"
            + _pick(rng, _ALNUM + "_~.-", 34)
        ],
        "a Terraform Cloud token": [
            _pick(rng, _ALNUM, 14) + ".atlas" + "v1." + _pick(rng, _URLSAFE, 66)
        ],
    }  # fmt: skip
    for kind, values in more.items():
        found += [Planted(kind, value, (value,)) for value in values]
    return found


def _by_name(rng: random.Random) -> list[Planted]:
    """Credential headers and query parameters, known by their names whatever the value's shape."""
    found = []
    for header in (
        "Ocp-Apim-Subscription-Key", "X-Functions-Key", "X-Auth-Token", "X-Api-Secret",
        "DD-API-KEY", "X-Session-Token", "X-Amz-Security-Token", "X-Vault-Token",
        "Private-Token", "X-Admin-Password", "X-Client-Credential", "X-Hub-Signature",
    ):  # fmt: skip
        value = _pick(rng, _ALNUM, 32)
        found.append(Planted("a credential header", f"{header}: {value}", (value,)))
    for name in (
        "sig", "X-Goog-Signature", "X-Amz-Signature", "Signature", "oauth_signature",
        "session_id", "sessionid", "subscription-key", "hmac_sig", "jwt_sig",
    ):  # fmt: skip
        value = _pick(rng, _ALNUM + "%", 40)
        url = f"https://store.example.invalid/c/b?sv=2024-01-01&{name}={value}&se=2026"
        found.append(Planted("a credential in a URL's query", url, (value,)))
    # Names that are keywords too: the value ends the URL (both shapes take the same span).
    for name in (
        "access_token", "client_secret", "password", "token", "X-Amz-Credential",
        "X-Goog-Credential",
    ):  # fmt: skip
        value = _pick(rng, _ALNUM, 40)
        url = f"https://store.example.invalid/c/b?sv=2024-01-01&{name}={value}"
        found.append(Planted("a credential in a URL's query", url, (value,)))
    return found


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _embedded(rng: random.Random) -> list[Planted]:
    """Secrets inside base64 (kubeconfig, docker config, a Secret) and inside escaped JSON."""
    key = _key_block(rng, "RSA PRIVATE KEY")
    registry_auth = _b64(f"ci:{_pick(rng, _ALNUM, 24)}")
    docker = _b64(json.dumps({"auths": {"ghcr.example.invalid": {"auth": registry_auth}}}))
    api_key = "sk-" + "proj-" + _pick(rng, _ALNUM, 40)
    secret_value = _b64(api_key)
    url_password = _pick(rng, _ALNUM, 18)
    dsn = _b64(f"postgres://app:{url_password}@db.internal:5432/app")
    escaped_password = _pick(rng, _ALNUM, 20)
    escaped_url = _pick(rng, _ALNUM, 16)
    unicode_key = _pick(rng, _HEX, 40)
    kube = _b64(key.text)
    return [
        Planted("a secret inside base64", f"client-key-data: {kube}", (kube, *key.parts)),
        Planted("a secret inside base64", f'{{".dockerconfigjson": "{docker}"}}', (docker,)),
        Planted(
            "a secret inside base64",
            f'{{"kind": "Secret", "data": {{"OPENAI_KEY": "{secret_value}"}}}}',
            (secret_value,),
        ),
        Planted("a secret inside base64", f"DATABASE_URL: {dsn}", (dsn,)),
        Planted(
            "a secret assigned to a keyword",
            f'{{"body": "{{\\"password\\": \\"{escaped_password}\\"}}"}}',
            (escaped_password,),
        ),
        Planted(
            "a password in a URL",
            f'{{"url": "https:\\/\\/ops:{escaped_url}@db.example.invalid\\/x"}}',
            (escaped_url,),
        ),
        Planted(
            "a secret assigned to a keyword",
            f"{{\\u0022api_key\\u0022: \\u0022{unicode_key}\\u0022}}",
            (unicode_key,),
        ),
    ]


# --- the corpus: every shape's own kinds, and the classes of issue 39 -------------


def _class_chars(spec: str) -> str:
    """The characters of a class body such as `A-Za-z0-9_\\-` (no negation)."""
    chars: list[str] = []
    index = 0
    while index < len(spec):
        char = spec[index]
        if char == "\\":
            chars.append({"d": string.digits}.get(spec[index + 1], spec[index + 1]))
            index += 2
            continue
        if index + 2 < len(spec) and spec[index + 1] == "-":
            chars += [chr(c) for c in range(ord(char), ord(spec[index + 2]) + 1)]
            index += 3
            continue
        chars.append(char)
        index += 1
    return "".join(chars)


def _sample(rng: random.Random, pattern: str) -> str:
    """A random string the RE2 pattern `pattern` matches whole.

    Only the syntax of the shape table: literals, escapes, classes, groups
    with alternatives, `?`, `+`, `*` and `{n}`, `{n,}`, `{n,m}`. Hand-written:
    hypothesis' `from_regex` draws only inside a test, and this corpus is
    built once, from a seed, for many tests.
    """
    out, _ = _sample_seq(rng, pattern, 0)
    return out


def _sample_seq(rng: random.Random, pattern: str, index: int) -> tuple[str, int]:
    alternatives: list[str] = [""]
    while index < len(pattern) and pattern[index] != ")":
        char = pattern[index]
        if char == "|":
            alternatives.append("")
            index += 1
            continue
        if char == "(":
            index += 3 if pattern.startswith("(?:", index) else 1
            atom: list[str] | str = []
            sub, index = _sample_group(rng, pattern, index)
            atom = sub
            index += 1  # the `)`
        elif char == "[":
            end = pattern.index("]", index + 1)
            atom = list(_class_chars(pattern[index + 1 : end]))
            index = end + 1
        elif char == "\\":
            atom = list(string.digits) if pattern[index + 1] == "d" else pattern[index + 1]
            index += 2
        else:
            atom = char
            index += 1
        low, high, index = _repeat(pattern, index)
        count = rng.randint(low, high)
        if isinstance(atom, list):
            alternatives[-1] += "".join(rng.choice(atom) for _ in range(count))
        else:
            alternatives[-1] += atom * count
    return rng.choice(alternatives), index


def _sample_group(rng: random.Random, pattern: str, index: int) -> tuple[str, int]:
    return _sample_seq(rng, pattern, index)


def _repeat(pattern: str, index: int) -> tuple[int, int, int]:
    if index >= len(pattern):
        return 1, 1, index
    char = pattern[index]
    if char == "?":
        return 0, 1, index + 1
    if char == "+":
        return 1, 6, index + 1
    if char == "*":
        return 0, 6, index + 1
    if char == "{":
        end = pattern.index("}", index)
        low, _, high = pattern[index + 1 : end].partition(",")
        if "," not in pattern[index + 1 : end]:
            high = low
        top = int(high) if high else int(low) + 8
        return int(low), min(top, int(low) + 8), end + 1
    return 1, 1, index
