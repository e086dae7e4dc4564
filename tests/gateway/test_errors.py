"""Upstream failure classification shared by both providers."""

from __future__ import annotations

import pytest

from navagent.core.wire_formats import FORMAT_IDS, wire_format
from navagent.fixtures.provider.wire._kit import kit_for
from navagent.gateway.errors import (
    MAX_MESSAGE_CHARS,
    classify_error,
    clean_message,
    error_from_payload,
)
from navagent.gateway.protocols import PROTOCOLS


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, ("invalid_request", False)),
        (401, ("auth", False)),
        (403, ("auth", False)),
        (404, ("invalid_request", False)),
        (408, ("timeout", True)),
        (413, ("invalid_request", False)),
        (422, ("invalid_request", False)),
        (429, ("rate_limited", True)),
        (500, ("upstream_unavailable", True)),
        (502, ("upstream_unavailable", True)),
        (503, ("upstream_unavailable", True)),
        (504, ("upstream_unavailable", True)),
        (529, ("overloaded", True)),
        (418, ("invalid_request", False)),
        (599, ("upstream_unavailable", True)),
    ],
)
def test_classify_error_by_status(status: int, expected: tuple[str, bool]) -> None:
    assert classify_error(status=status) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Anthropic error.type
        ("overloaded_error", ("overloaded", True)),
        ("rate_limit_error", ("rate_limited", True)),
        ("api_error", ("upstream_unavailable", True)),
        ("authentication_error", ("auth", False)),
        ("permission_error", ("auth", False)),
        ("invalid_request_error", ("invalid_request", False)),
        ("not_found_error", ("invalid_request", False)),
        ("request_too_large", ("invalid_request", False)),
        ("timeout_error", ("timeout", True)),
        # OpenAI error.type / error.code
        ("server_error", ("upstream_unavailable", True)),
        ("rate_limit_exceeded", ("rate_limited", True)),
        ("insufficient_quota", ("rate_limited", False)),
        ("invalid_api_key", ("auth", False)),
        ("context_length_exceeded", ("invalid_request", False)),
        # Unknown, mid-stream (no status): a failure we should not blindly retry.
        ("brand_new_error", ("upstream_unavailable", False)),
    ],
)
def test_classify_error_by_provider_name_mid_stream(name: str, expected: tuple[str, bool]) -> None:
    assert classify_error(names=(name,)) == expected


def test_classify_error_status_wins_over_generic_names() -> None:
    # OpenAI reports a bad key as a 401 with type invalid_request_error.
    assert classify_error(status=401, names=(None, "invalid_request_error")) == ("auth", False)


def test_classify_error_precise_names_win_over_status() -> None:
    # An exhausted quota is a 429, but retrying will not help.
    assert classify_error(status=429, names=("insufficient_quota",)) == ("rate_limited", False)
    assert classify_error(status=500, names=("overloaded_error",)) == ("overloaded", True)


def test_classify_error_openai_code_before_type() -> None:
    names = ("invalid_api_key", "invalid_request_error")
    assert classify_error(names=names) == ("auth", False)


def test_clean_message_truncates_and_masks_keys() -> None:
    long = "Incorrect API key provided: sk-proj-fakeAbCdEf1234567890xyz. " + "x" * 1000
    cleaned = clean_message(long)
    assert len(cleaned) == MAX_MESSAGE_CHARS and cleaned.endswith("…")
    assert "AbCdEf1234567890" not in cleaned
    assert cleaned.startswith("Incorrect API key provided: [redacted]. ")
    assert clean_message("Bearer abcdef123456 rejected") == "Bearer [redacted] rejected"
    assert clean_message("  many\n\n  spaces\t") == "many spaces"


# Each format's own error body (its kit's), with the provider's message, kept whole.
@pytest.mark.parametrize("format_id", FORMAT_IDS)
def test_error_from_response_uses_the_provider_message(format_id: str) -> None:
    message = "Rate limit reached for gpt-4o in organization org-x on tokens per min."
    body = kit_for(format_id).error_body(429, message)
    error = PROTOCOLS[wire_format(format_id).protocol].error_from_response(429, body)
    assert error.message == message
    assert (error.status_code, error.code, error.retryable) == (429, "rate_limited", True)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "OpenAI returned HTTP 502 Bad Gateway"),
        (b"   ", "OpenAI returned HTTP 502 Bad Gateway"),
        (
            b"<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>",
            "OpenAI returned HTTP 502 Bad Gateway",
        ),
        (b"<!DOCTYPE html>\n<html>...", "OpenAI returned HTTP 502 Bad Gateway"),
        (b"upstream connect error", "OpenAI returned HTTP 502 Bad Gateway: upstream connect error"),
        (b"{not json", "OpenAI returned HTTP 502 Bad Gateway: {not json"),
        (b"[1, 2]", "OpenAI returned HTTP 502 Bad Gateway"),
        (b'{"detail": "nope"}', "OpenAI returned HTTP 502 Bad Gateway"),
        (b'{"message": "gateway says no"}', "gateway says no"),
        (b'{"error": "plain string error"}', "plain string error"),
        (b'{"error": {"type": "server_error"}}', "OpenAI reported an error (server_error)"),
        (b"\xff\xfe bad bytes", "OpenAI returned HTTP 502 Bad Gateway: \ufffd\ufffd bad bytes"),
    ],
)
def test_error_from_response_copes_with_any_body(body: bytes, message: str) -> None:
    error = PROTOCOLS["openai_chat_completions"].error_from_response(502, body)
    assert error.message == message
    assert (error.status_code, error.code, error.retryable) == (502, "upstream_unavailable", True)


def test_error_from_response_overloaded_529_without_body() -> None:
    error = PROTOCOLS["anthropic_messages"].error_from_response(529, b"")
    assert error.message == "Anthropic returned HTTP 529 Overloaded"
    assert (error.code, error.retryable) == ("overloaded", True)


def test_error_from_response_long_html_is_not_copied() -> None:
    body = b"<html>" + b"<div>secret internal page</div>" * 200 + b"</html>"
    error = PROTOCOLS["anthropic_messages"].error_from_response(503, body)
    assert "secret" not in error.message and len(error.message) < 100


def test_error_from_payload_for_a_non_dict_payload() -> None:
    error = error_from_payload(None, provider="Anthropic")
    assert (error.message, error.status_code) == ("Anthropic reported an error", None)
