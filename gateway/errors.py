"""Upstream failure classification, shared by both providers.

Every provider reports failures the same two ways: an HTTP status with a JSON
body `{"error": {"type": ..., "message": ..., "code": ...}}` before the
stream starts, or the same `error` object as an SSE event once it has
started (Anthropic's `event: error`, an OpenAI data line `{"error": {...}}`).
`classify_error` maps the status and the provider's `type`/`code` names to a
stable `ErrorCode` plus a retryable flag; `chat_error` builds the `ChatError`
with the provider's own message, redacted and shortened by the one redaction
path (`navagent.core.redaction.clip`: every configured key and anything shaped
like one, masked before the cut). Request bodies never reach an error text.

References: https://docs.anthropic.com/en/api/errors and
https://platform.openai.com/docs/guides/error-codes.
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

from navagent.core.events import ChatError, ErrorCode
from navagent.core.redaction import clip

__all__ = [
    "MAX_MESSAGE_CHARS",
    "chat_error",
    "classify_error",
    "clean_message",
    "error_from_payload",
    "error_from_response",
    "malformed_stream_error",
    "truncated_stream_error",
]

MAX_MESSAGE_CHARS = 1000
"""Longer provider messages are cut here (at a word, never inside a URL): a
ChatError is shown to users and logged."""

_BY_STATUS: dict[int, tuple[ErrorCode, bool]] = {
    400: ("invalid_request", False),
    401: ("auth", False),
    403: ("auth", False),
    404: ("invalid_request", False),
    408: ("timeout", True),
    413: ("invalid_request", False),
    422: ("invalid_request", False),
    429: ("rate_limited", True),
    500: ("upstream_unavailable", True),
    502: ("upstream_unavailable", True),
    503: ("upstream_unavailable", True),
    504: ("upstream_unavailable", True),
    529: ("overloaded", True),
}

_BY_NAME: dict[str, tuple[ErrorCode, bool]] = {
    # Anthropic `error.type`.
    "overloaded_error": ("overloaded", True),
    "rate_limit_error": ("rate_limited", True),
    "api_error": ("upstream_unavailable", True),
    "timeout_error": ("timeout", True),
    "authentication_error": ("auth", False),
    "permission_error": ("auth", False),
    "billing_error": ("auth", False),
    "invalid_request_error": ("invalid_request", False),
    "not_found_error": ("invalid_request", False),
    "request_too_large": ("invalid_request", False),
    # OpenAI `error.type` / `error.code`.
    "server_error": ("upstream_unavailable", True),
    "rate_limit_exceeded": ("rate_limited", True),
    "requests": ("rate_limited", True),
    "tokens": ("rate_limited", True),
    "insufficient_quota": ("rate_limited", False),
    "invalid_api_key": ("auth", False),
    "invalid_organization": ("auth", False),
    "model_not_found": ("invalid_request", False),
    "context_length_exceeded": ("invalid_request", False),
    # Google `error.status` (https://ai.google.dev/gemini-api/docs/troubleshooting).
    "INVALID_ARGUMENT": ("invalid_request", False),
    "FAILED_PRECONDITION": ("invalid_request", False),
    "NOT_FOUND": ("invalid_request", False),
    "UNAUTHENTICATED": ("auth", False),
    "PERMISSION_DENIED": ("auth", False),
    "RESOURCE_EXHAUSTED": ("rate_limited", True),
    "INTERNAL": ("upstream_unavailable", True),
    "UNAVAILABLE": ("overloaded", True),
    "DEADLINE_EXCEEDED": ("timeout", True),
}

# Names that say more than the status they come with: a 429 for an exhausted
# quota will not clear by retrying, and "overloaded" is more precise than 5xx.
_OVERRIDE_STATUS = frozenset({"insufficient_quota", "billing_error", "overloaded_error"})

_WHITESPACE = re.compile(r"\s+")


def classify_error(
    *, status: int | None = None, names: tuple[str | None, ...] = ()
) -> tuple[ErrorCode, bool]:
    """Return `(code, retryable)` for an upstream failure.

    Args:
        status: The HTTP status, or None for an error event inside a stream.
        names: The provider's error names, most specific first (OpenAI
            `error.code` then `error.type`; Anthropic `error.type`).

    The status decides when it is a known one, except for the few names that
    are more precise than their status. Unknown 4xx are invalid requests,
    unknown 5xx are retryable upstream failures, and an unknown error event
    with no status is a non-retryable upstream failure.
    """
    by_name = next((_BY_NAME[name] for name in names if name in _BY_NAME), None)
    if any(name in _OVERRIDE_STATUS for name in names) and by_name is not None:
        return by_name
    if status is not None:
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if by_name is not None:
            return by_name
        if 400 <= status < 500:
            return ("invalid_request", False)
        if status >= 500:
            return ("upstream_unavailable", True)
    return by_name or ("upstream_unavailable", False)


def clean_message(text: str) -> str:
    """Collapse whitespace, redact secrets, then cut to `MAX_MESSAGE_CHARS`."""
    return clip(_WHITESPACE.sub(" ", text).strip(), MAX_MESSAGE_CHARS)


def chat_error(
    message: str, *, status: int | None = None, names: tuple[str | None, ...] = ()
) -> ChatError:
    """Build a classified `ChatError` carrying the provider's (cleaned) message."""
    code, retryable = classify_error(status=status, names=names)
    return ChatError(
        message=clean_message(message), status_code=status, code=code, retryable=retryable
    )


def error_from_payload(
    payload: Any,
    *,
    provider: str,
    status: int | None = None,
    fields: tuple[str, ...] = ("code", "type"),
) -> ChatError:
    """Build a `ChatError` from a provider's `error` value (usually a dict).

    Accepts whatever shape arrived: a dict with `message` and the naming
    `fields` (the registry row's `error_fields`: `code`/`type`, Google's
    `status`), a bare string, or anything else (then only the provider name
    and status are reported).
    """
    names: tuple[str | None, ...] = ()
    message = ""
    if isinstance(payload, dict):
        values = [payload.get(name) for name in fields]
        names = tuple(str(value) for value in values if isinstance(value, str | int))
        raw = payload.get("message")
        message = raw if isinstance(raw, str) else ""
    elif isinstance(payload, str):
        message = payload
    if not message:
        message = f"{provider} reported an error" + (f" ({names[-1]})" if names else "")
    return chat_error(message, status=status, names=names)


def error_from_response(
    status: int, body: bytes, *, provider: str, fields: tuple[str, ...] = ("code", "type")
) -> ChatError:
    """Build a `ChatError` from a failed HTTP response (status >= 400) and its body.

    Copes with JSON error bodies of both providers, JSON without an `error`
    object, plain text, HTML error pages from proxies and empty bodies: the
    message is then the status line, plus short plain text when there was
    some. HTML is never copied into the message. `fields` as in
    `error_from_payload`. A JSON array holding one error object (what Google
    sends for a failed `streamGenerateContent` without `alt=sse`) is read as it.
    """
    text = body.decode("utf-8", "replace").strip()
    payload: Any = None
    if text[:1] in ("{", "["):
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
    if isinstance(payload, list) and len(payload) == 1:
        payload = payload[0]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict | str) and error:
            return error_from_payload(error, provider=provider, status=status, fields=fields)
        if isinstance(payload.get("message"), str):
            return error_from_payload(payload, provider=provider, status=status, fields=fields)
    summary = f"{provider} returned HTTP {status} {_reason(status)}".rstrip()
    if text and payload is None and not _looks_like_html(text):
        summary = f"{summary}: {text}"
    return chat_error(summary, status=status)


def truncated_stream_error(provider: str, terminator: str) -> ChatError:
    """The body ended before the provider's terminator: retryable, never a success."""
    return ChatError(
        message=f"{provider} stream ended before {terminator}",
        code="upstream_unavailable",
        retryable=True,
    )


def malformed_stream_error(provider: str, problem: str) -> ChatError:
    """The provider sent something we cannot read; `problem` says what and where."""
    return ChatError(
        message=clean_message(f"{provider} stream: {problem}"),
        code="upstream_unavailable",
        retryable=False,
    )


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _looks_like_html(text: str) -> bool:
    head = text[:200].lower()
    return head.startswith("<") or "<html" in head or "<!doctype" in head
