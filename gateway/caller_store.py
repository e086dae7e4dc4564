"""Callers' stream limits counted on Redis, so they hold across gateway replicas.

A caller's `max_concurrent_streams` is counted in the gateway's own slots
(`callers.admit_caller`): across its workers, not across replicas. With
`--caller-store URL` every replica also counts the caller's streams in one
Redis sorted set per caller, a lease per stream scored by its expiry in the
server's clock (the pattern rate limiters use, e.g. Envoy's and LiteLLM's):

- acquire is one Lua script, so it is atomic on the server: drop the expired
  leases, refuse at the limit, else add this one. Two replicas cannot both
  take the last slot.
- a lease lives `LEASE_S` (30 s); a replica refreshes every lease it holds
  every third of that, so a replica that dies (SIGKILL, lost node) gives its
  caller's slots back within 30 s, while a stream that runs for an hour keeps
  its slot.
- release removes the lease; it runs in the background after the stream ends
  (the stream's own `finally` never waits on the network) and after any
  refresh already sent, so a late refresh cannot bring a released lease back.

It fails open: when the store cannot be reached (refused, timed out after
`TIMEOUT_S`, or answering errors) a call is admitted by the replica's own
count, as without a store, so each replica still holds a caller to its limit
and a store outage never refuses a call. The limits guard fairness between
callers, not the gateway (`--max-concurrent-streams` still does), and an
outage of an auxiliary store should not take down every caller that has a
limit; Envoy's rate-limit filter and LiteLLM fail open the same way. The
outage is logged once, and its end once; meanwhile the store is asked again
every `RETRY_S` (5 s) by one call, and the streams admitted meanwhile are
counted in it from the next refresh, so the shared count is whole again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from navagent.core.redaction import clip, register_secret

if TYPE_CHECKING:
    import redis.asyncio

__all__ = [
    "KEY_PREFIX",
    "LEASE_S",
    "RETRY_S",
    "SCHEMES",
    "TIMEOUT_S",
    "CallerStore",
    "StoreLease",
    "store_address",
    "store_url_problem",
]

LEASE_S = 30.0
"""How long a lease lives unless refreshed: a dead replica's slots come back within it."""
RETRY_S = 5.0
"""After the store failed, how long calls are counted per replica before it is asked again."""
TIMEOUT_S = 0.5
"""Longest one store command may take (connect or answer) before the call fails open."""
KEY_PREFIX = "nav-gateway:caller-streams:"
"""Each caller's sorted set is this plus its name."""
SCHEMES = ("redis", "rediss", "unix")

# Milliseconds on the server's clock: every replica agrees on when a lease expires.
_NOW_MS = (
    "local t = redis.call('TIME') "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
)
_ACQUIRE = (
    _NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
)
"""KEYS[1] the caller's set; ARGV limit, lease ms, lease id. 1 taken, 0 at the limit."""
_REFRESH = (
    _NOW_MS
    + """
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return #ARGV - 1
"""
)
"""KEYS[1] the caller's set; ARGV lease ms, then the ids of the streams still running
here (re-added if they expired meanwhile, or were admitted while the store was down)."""

log = logging.getLogger("navagent.gateway.caller_store")


def store_url_problem(url: str) -> str | None:
    """What is wrong with a `--caller-store` URL, never quoting it (it may hold a password)."""
    try:
        parts = urlsplit(url.strip())
        _ = parts.port  # a port out of range raises here
    except ValueError:
        return "it is not a URL (a port out of range?)"
    expected = "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss://... (TLS) or unix:///PATH"
    if parts.scheme not in SCHEMES:
        return f"expected {expected}, got a URL with scheme {parts.scheme or 'none'!r}"
    if parts.scheme == "unix" and not parts.path:
        return f"expected {expected}: the unix:// URL names no socket path"
    if parts.scheme != "unix" and not parts.hostname:
        return f"expected {expected}: the URL names no host"
    return None


def store_address(url: str) -> str:
    """The store as logs show it: scheme, host, port and database, never a user or password."""
    parts = urlsplit(url.strip())
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path or ''}"


@dataclass(eq=False)
class StoreLease:
    """One stream's lease in a caller's set, from `CallerStore.acquire` until `release`."""

    store: CallerStore
    key: str
    id: str
    released: bool = False

    def release(self) -> None:
        """Give the slot back (once; the store removes it in the background)."""
        if not self.released:
            self.released = True
            self.store._release(self)


class CallerStore:
    """Each caller's streams across replicas, counted in Redis (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        lease_s: float = LEASE_S,
        retry_s: float = RETRY_S,
        timeout_s: float = TIMEOUT_S,
        key_prefix: str = KEY_PREFIX,
    ) -> None:
        """Set up the client; nothing connects until the first call.

        Raises:
            ValueError: `url` is not a Redis URL (the text never quotes it).
        """
        problem = store_url_problem(url)
        if problem is not None:
            raise ValueError(f"--caller-store: {problem}")
        # Imported here: ~60 ms that a gateway without a store (and every
        # in-process one: the demo, the harness) should not pay at start.
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError

        self._failures = (RedisError, OSError, TimeoutError)
        """What a store that is down or broken raises: the call fails open."""
        parts = urlsplit(url.strip())
        if parts.password:
            register_secret(parts.password)  # no log line or error may carry it
        self.address = store_address(url)
        self.lease_s = lease_s
        self._lease_ms = max(1, round(lease_s * 1000))
        self._retry_s = retry_s
        self._prefix = key_prefix
        # One try per command, briefly: a store that is down must cost a call
        # at most `timeout_s`, not redis-py's default ten retries.
        self._client: redis.asyncio.Redis = redis.asyncio.Redis.from_url(
            url.strip(),
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        self._acquire = self._client.register_script(_ACQUIRE)
        self._refresh = self._client.register_script(_REFRESH)
        self._held: dict[str, set[str]] = {}
        """The ids of this replica's leases by caller key: what every refresh re-adds."""
        self.reachable = True
        """False from a failure until the store answers again."""
        self._ask_again_at = 0.0
        self._refresher: asyncio.Task[None] | None = None
        self._refreshing: asyncio.Future[None] | None = None
        self._releases: set[asyncio.Task[None]] = set()

    def key(self, caller: str) -> str:
        """The sorted set holding `caller`'s leases."""
        return self._prefix + caller

    async def acquire(self, caller: str, limit: int) -> StoreLease | None:
        """A lease on one of `caller`'s `limit` streams across replicas; None at the limit.

        While the store cannot be reached, the lease is this replica's alone
        (fail open: the caller's own slots in this gateway still hold it to
        `limit` here), and it is added to the store from the next refresh.
        """
        lease = StoreLease(self, self.key(caller), uuid.uuid4().hex)
        if self._asking():
            try:
                args: list[int | str] = [limit, self._lease_ms, lease.id]
                taken = await self._acquire(keys=[lease.key], args=args)
            except asyncio.CancelledError:
                self._remove_later(lease)  # the script may have run: no lease left behind
                raise
            except self._failures as exc:
                self._failed(exc)
            else:
                self._answered()
                if not taken:
                    return None
        self._held.setdefault(lease.key, set()).add(lease.id)
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_forever())
        return lease

    def held(self, caller: str) -> int:
        """This replica's leases for `caller` now."""
        return len(self._held.get(self.key(caller), ()))

    async def refresh(self) -> None:
        """Push every held lease's expiry forward by `lease_s` (and re-add any lost)."""
        held = {key: sorted(ids) for key, ids in self._held.items() if ids}
        if not held or not self._asking():
            return
        done = asyncio.get_running_loop().create_future()
        self._refreshing = done
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for key, ids in held.items():
                    await self._refresh(keys=[key], args=[self._lease_ms, *ids], client=pipe)
                await pipe.execute()
        except self._failures as exc:
            self._failed(exc)
        else:
            self._answered()
        finally:
            self._refreshing = None
            done.set_result(None)

    async def aclose(self) -> None:
        """Stop refreshing, let the releases under way finish (briefly), close the client."""
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
            self._refresher = None
        if self._releases:
            await asyncio.wait(set(self._releases), timeout=2.0)
        await self._client.aclose()

    async def _refresh_forever(self) -> None:
        while self._held:
            await asyncio.sleep(self.lease_s / 3)
            await self.refresh()

    def _release(self, lease: StoreLease) -> None:
        ids = self._held.get(lease.key)
        if ids is not None:
            ids.discard(lease.id)
            if not ids:
                del self._held[lease.key]
        self._remove_later(lease)

    def _remove_later(self, lease: StoreLease) -> None:
        task = asyncio.get_running_loop().create_task(self._remove(lease))
        self._releases.add(task)  # keep a reference until it is done
        task.add_done_callback(self._releases.discard)

    async def _remove(self, lease: StoreLease) -> None:
        # A refresh already sent may carry this lease: remove it after that one lands.
        if self._refreshing is not None:
            await asyncio.shield(self._refreshing)
        try:
            await self._client.zrem(lease.key, lease.id)
        except self._failures as exc:
            self._failed(exc)  # the lease expires by itself within `lease_s`
        else:
            self._answered()

    def _asking(self) -> bool:
        """Whether to ask the store now: it is reachable, or it is time to try it again."""
        if self.reachable:
            return True
        now = time.monotonic()
        if now < self._ask_again_at:
            return False
        self._ask_again_at = now + self._retry_s  # one call tries; the others count here
        return True

    def _failed(self, exc: BaseException) -> None:
        self._ask_again_at = time.monotonic() + self._retry_s
        if self.reachable:
            self.reachable = False
            log.warning(
                "caller store %s unreachable (%s): each replica counts callers' "
                "max_concurrent_streams on its own until it answers (failing open); "
                "asking again every %gs",
                self.address,
                clip(type(exc).__name__ + (f": {exc}" if str(exc) else ""), 300),
                self._retry_s,
            )

    def _answered(self) -> None:
        if not self.reachable:
            self.reachable = True
            log.info(
                "caller store %s answers again: callers' max_concurrent_streams are "
                "counted across replicas",
                self.address,
            )
