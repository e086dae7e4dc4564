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

import hashlib

__all__ = ["route_origin"]


def route_origin(protocol: str, endpoint: str, model: str) -> str:
    """`<protocol>:<12 hex digits of endpoint and model>`; stable across runs."""
    base = endpoint.strip().rstrip("/").removesuffix("/v1").lower()
    digest = hashlib.sha256(f"{base}\n{model.strip()}".encode()).hexdigest()[:12]
    return f"{protocol}:{digest}"
