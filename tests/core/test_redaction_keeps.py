"""What redaction must leave alone, now that it knows more shapes (issue 39 §2).

Coverage by class widened what counts as a secret: names holding `key` or
`session`, base64 runs, hyphenated headers. Ordinary log text, ids, hashes,
signatures and recorded rate limits are not secrets and must survive as
they were, or recordings stop replaying and logs stop being read.
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid

import pytest

from navagent.core.redaction import REDACTED, redact
from navagent.fixtures.harness.cassettes._body_redaction import redact_headers

_RNG = random.Random(39)
KEPT = [
    "2026-11-26T06:00:00Z INFO sandbox dev-box is Ready, 3 pods",
    f"sha256:{hashlib.sha256(b'image').hexdigest()}",
    f"commit {hashlib.sha1(b'x').hexdigest()} by ops",
    f"request {uuid.UUID(int=_RNG.getrandbits(128))} finished",
    "pulled image ghcr.io/acme/api:v1.2.3 in 2.1s",
    "the key-value store is ready; session resumed; token count 1200",
    "x-request-id: req_011CUZ3JbTnD5h8x4Vg7K9wB",
    "monkey-patching the session-manager: done",
    "Content-Security-Policy: default-src 'self'",
    "GET /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1",
    # A thinking signature: base64 of bytes that are not text.
    "thoughtSignature: " + base64.b64encode(_RNG.randbytes(120)).decode(),
    # base64 of text that holds no secret.
    "data: " + base64.b64encode(b"plain configuration, nothing secret in here").decode(),
    "re-authentication: failed for user ops",
    "retry-after: 30",
]


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_ids_and_hashes_survive(text: str) -> None:
    assert redact(text) == text


def test_a_recorded_header_named_for_a_credential_is_masked_whatever_its_value() -> None:
    headers = {
        "ocp-apim-subscription-key": ["0a1b2c3d"],
        "x-functions-key": ["whatever"],
        "anthropic-ratelimit-tokens-remaining": ["40000"],
        "content-type": ["application/json"],
        "request-id": ["req_abc123"],
    }
    assert redact_headers(headers) == {
        "ocp-apim-subscription-key": [REDACTED],
        "x-functions-key": [REDACTED],
        "anthropic-ratelimit-tokens-remaining": ["40000"],
        "content-type": ["application/json"],
        "request-id": ["req_abc123"],
    }
