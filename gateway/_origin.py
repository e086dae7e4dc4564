"""Where opaque reasoning state may be sent back: `ThinkingPart.origin`.

Encrypted reasoning can only be read by the deployment that wrote it: OpenAI
rejects another organisation's (or Azure's) `encrypted_content` with
`invalid_encrypted_content`, and an Anthropic signature means nothing to
OpenAI. So the translator stamps every opaque part with the origin of the
route that produced it, and the request builder of the next request replays
only parts whose origin equals its own route's. A failover to another route
therefore drops the parts (every provider accepts a history without them)
instead of failing the turn. The origin is a digest, so no endpoint URL
reaches the client's history.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from navagent.core.messages import ThinkingPart
from navagent.gateway._urls import api_base

__all__ = ["own_payload", "route_origin"]


@functools.lru_cache(maxsize=256)
def route_origin(protocol: str, endpoint: str, model: str) -> str:
    """`<protocol>:<12 hex digits of endpoint and model>`; stable across runs.

    Cached: every request computes it twice (request and translator) for one
    of a few routes.
    """
    base = api_base(endpoint).lower()
    digest = hashlib.sha256(f"{base}\n{model.strip()}".encode()).hexdigest()[:12]
    return f"{protocol}:{digest}"


def own_payload(part: ThinkingPart, origin: str) -> dict[str, Any] | None:
    """The decoded payload of `part` when `origin` produced it, else None.

    A payload comes back from the client's history, so one that is not a JSON
    object is treated as absent (the part is dropped), never an error.
    """
    if not part.payload or part.origin != origin:
        return None
    try:
        payload = json.loads(part.payload)
    except ValueError:
        return None
    return payload if type(payload) is dict else None
