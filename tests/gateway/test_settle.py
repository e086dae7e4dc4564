"""A serving gateway's heap is out of the garbage collector's way before its first call (issue 44).

Without it, a full collection walked every long-lived object on the event
loop: a 60-430 ms stall in every run of 100 paced streams (bench/loop_stalls.py).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import weakref
from collections.abc import Iterator

import pytest

from navagent.gateway._loop import settle
from navagent.gateway.server import serve
from navagent.gateway.settings import GatewaySettings
from tests.gateway.test_dispatch import route, table


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """The test process's heap as it was: the collector sees everything again afterwards."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Cycle:
    """An object only the cyclic collector can free: it refers to itself."""

    def __init__(self) -> None:
        self.me = self


def test_settle_collects_the_garbage_then_freezes_what_lives(unfrozen: None) -> None:
    garbage = _Cycle()
    dead = weakref.ref(garbage)
    del garbage
    alive = _Cycle()
    settle()
    assert dead() is None, "garbage left before settling must be collected, not frozen"
    assert gc.get_freeze_count() > 0
    assert not any(found is alive for found in gc.get_objects()), (
        "a live object must be out of every generation the collector walks"
    )


async def test_serve_settles_and_loads_the_upstream_client_before_it_is_ready(
    unfrozen: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "aiohttp", raising=False)  # as in a fresh process
    seen: list[tuple[int, bool]] = []

    def on_ready() -> None:
        seen.append((gc.get_freeze_count(), "aiohttp" in sys.modules))
        os.kill(os.getpid(), signal.SIGTERM)  # serve's own handler: a graceful stop

    await serve(GatewaySettings(listen="127.0.0.1:0"), table(route("a")), on_ready=on_ready)
    ((frozen, loaded),) = seen
    assert frozen > 0, "the heap must be frozen before the first call"
    assert loaded, "aiohttp must be imported before the first call, not during it"
