"""Upstream URL and request construction shared by the request builders."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from navagent.gateway._types import UpstreamRequest

__all__ = ["api_base", "api_url", "openai_style_request"]

_VERSION = re.compile(r"/v\d+(?:(?:alpha|beta)\d*)?$")
"""An API version segment at the end of a base URL: `/v1`, `/v1beta`, `/v2alpha1`."""


def api_base(endpoint: str) -> str:
    """A route's base URL without a trailing `/` or API version segment (`/v1`, `/v1beta`)."""
    base = endpoint.strip().rstrip("/")
    return _VERSION.sub("", base)


@functools.lru_cache(maxsize=1024)  # a route's URL is the same on every request
def api_url(endpoint: str, path: str, *, query: str = "") -> str:
    """Join a route's base URL and an API path.

    Routes name the base URL as operators copy it from provider docs, with or
    without a trailing `/` and with or without the version suffix. A `path`
    starting with `/` is the registry row's whole path, version included
    (`/v1beta/models/m:streamGenerateContent`); a relative one goes under
    `/v1`. So `https://api.openai.com`, `https://api.openai.com/` and
    `https://api.openai.com/v1/` all give `https://api.openai.com/v1/<path>`.
    `query` (the row's `stream_query`, say) is appended when not empty.
    """
    full = path if path.startswith("/") else f"/v1/{path}"
    url = f"{api_base(endpoint)}{full}"
    return f"{url}?{query}" if query else url


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
