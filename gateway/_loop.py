"""The event loop the gateway runs on: uvloop when it is installed, else asyncio's own.

uvloop (`pip install 'nav-agent[fast]'`) cut the gateway's CPU per paced delta
by about 14% and per request by about 6% in bench/gateway_scale.py, and
grpc.aio runs on it unchanged. It is optional because it does not build
everywhere pip runs (Windows, some interpreters); without it nothing changes.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["loop_name", "run"]

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
