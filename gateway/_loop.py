"""The event loop the gateway runs on: uvloop when it is installed, else asyncio's own.

`settle` readies a serving process's heap before its first call (issue 44): a
gateway imports and configures tens of thousands of long-lived objects (grpc,
protobuf, pydantic, aiohttp, the routes), and every full collection of the
cyclic garbage collector walked all of them on the event loop: one 60-430 ms
stall in every run of 100 paced streams (bench/loop_stalls.py), every stream
on the loop waiting behind it. Frozen, they are out of every collection;
reference counting still frees them as usual.

uvloop (`pip install 'nav-agent[fast]'`) cut the gateway's CPU per paced delta
by about 14% and per request by about 6% in bench/gateway_scale.py, and
grpc.aio runs on it unchanged. It is optional because it does not build
everywhere pip runs (Windows, some interpreters); without it nothing changes.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["loop_name", "run", "settle"]

_T = TypeVar("_T")


def _uvloop() -> Any | None:
    try:
        return importlib.import_module("uvloop")
    except ImportError:
        return None


def loop_name() -> str:
    """Which loop `run` will use: "uvloop" or "asyncio"."""
    return "asyncio" if _uvloop() is None else "uvloop"


def run(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run(main)`, on uvloop when available."""
    uvloop = _uvloop()
    if uvloop is None:
        return asyncio.run(main)
    result: _T = uvloop.run(main)
    return result


def settle() -> None:
    """Move every object alive now out of the garbage collector's way (`gc.freeze`).

    Called once a serving process has loaded everything it keeps, just before
    it takes calls: what is garbage by then is collected first, so only live
    objects are frozen.
    """
    gc.collect()
    gc.freeze()
