"""Upstream URL and request construction shared by the request builders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from navagent.gateway._types import UpstreamRequest

__all__ = ["api_url", "openai_style_request"]


def api_url(endpoint: str, path: str) -> str:
    """Join a route's base URL and an API path under `/v1`.

    Routes name the base URL as operators copy it from provider docs, with or
    without a trailing `/` and with or without the `/v1` suffix; all of
    `https://api.openai.com`, `https://api.openai.com/` and
    `https://api.openai.com/v1/` give `https://api.openai.com/v1/<path>`.
    """
    base = endpoint.strip().rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return f"{base}/v1/{path.lstrip('/')}"


def openai_style_request(
    endpoint: str, path: str, *, api_key: str, body: Mapping[str, Any]
) -> UpstreamRequest:
    """A streaming JSON POST to an OpenAI API path, authorised with a bearer key."""
    return UpstreamRequest(
        url=api_url(endpoint, path),
        headers={
            "authorization": f"Bearer {api_key}",
            "content-type": "application/json",
            "accept": "text/event-stream",
        },
        body=dict(body),
    )
