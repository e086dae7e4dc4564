"""Settings for the whole suite."""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(optionalhook=True)  # `-p no:xdist` still runs the suite
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the CPUs.

    About a quarter of the suite's time is spent waiting on the processes and
    terminals it drives (nav, nav-sim, gateways, ptys); a spare worker fills it.
    """
    del config
    return (os.cpu_count() or 1) + 1
