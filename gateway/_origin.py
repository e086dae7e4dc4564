"""Where opaque reasoning state may be sent back: `ThinkingPart.origin`.

Encrypted reasoning can only be read by the deployment that wrote it: OpenAI
rejects another organisation's (or Azure's) `encrypted_content` with
`invalid_encrypted_content`, and an Anthropic signature means nothing to
OpenAI. So the translator stamps every opaque part with the origin of the
route that produced it, and the request builder of the next request replays
only parts whose origin equals its own route's. A failover to another route
therefore drops the parts (every provider accepts a history without them)
instead of failing the turn. The route's key is part of its origin: one
endpoint and model behind the keys of two organisations are two origins, and a
key rotation drops the parts once. The origin is a digest, so no endpoint URL
or key reaches the client's history.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from navagent.core.messages import ThinkingPart
from navagent.gateway._urls import api_base

__all__ = ["own_payload", "route_origin"]


_KEY_SALT = b"navagent.gateway route origin: key fingerprint"
"""Fixed, so equal keys give equal fingerprints in every process and release."""


@functools.lru_cache(maxsize=256)
def route_origin(protocol: str, endpoint: str, model: str, api_key: str) -> str:
    """`<protocol>:<12 hex digits of endpoint, model and key>`; stable across runs.

    The key goes in as a fingerprint (`_key_fingerprint`), never itself, and
    so does a `user:password@` login in the endpoint (a proxy's). A route
    with neither (a local server) folds in nothing, so its origin is the one
    it had before credentials counted and its saved reasoning still goes back.

    Cached: every request computes it twice (request and translator) for one
    of a few routes. The key is then a cache key, which is no new exposure:
    the cache lives in the process that holds the route (and the key) anyway,
    and nothing reads or prints its entries.
    """
    base, login = _without_login(api_base(endpoint))
    route = f"{base.lower()}\n{model.strip()}"
    credential = "\n".join(part for part in (api_key, login) if part)
    if credential:  # a login in the URL is a credential too: never under the fast hash
        route += f"\n{_key_fingerprint(credential)}"
    digest = hashlib.sha256(route.encode()).hexdigest()[:12]
    return f"{protocol}:{digest}"


def _without_login(base: str) -> tuple[str, str]:
    """`base` without the `user:password@` of its authority, and that login ("" without one)."""
    scheme, separator, rest = base.partition("://")
    authority, slash, path = rest.partition("/")
    login, at, host = authority.rpartition("@")
    if not (separator and at):
        return base, ""
    return f"{scheme}://{host}{slash}{path}", login


@functools.lru_cache(maxsize=64)
def _key_fingerprint(api_key: str) -> str:
    """A slow, salted hash of `api_key` (scrypt, about 3 ms once per key and process).

    What an origin tells whoever holds the history (the client, a saved
    session): 48 bits of a hash of endpoint, model and key. That does not
    recover a key, and cannot single out a random provider key (over 128
    bits) from the 2^80 and more that share it; but it tells whether two
    answers came through the same key, and it would let anyone check guesses of
    a weak key (a local server's `changeme`) offline against a fast hash. So
    the key is stretched first: each guess costs a scrypt run, about a thousand
    SHA-256s. Not more: the first request through each key pays it on the
    serving loop, once per process, and every stream there waits that long
    (2**14 took 36 ms).
    """
    stretched = hashlib.scrypt(api_key.encode(), salt=_KEY_SALT, n=2**10, r=8, p=1, dklen=32)
    return stretched.hex()


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
