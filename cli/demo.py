"""`nav agent --demo`: the whole product running locally, simulated.

`DemoStack` starts, inside this process, the simulated LLM provider (real HTTP
SSE on a free localhost port) and the real gateway (gRPC on another free port)
with one route to it, and prepares `nav-sim` with a fresh temporary cluster
state as the tool binary. No keys, no network: the route's key is a fixed
placeholder the simulator accepts. Leaving the `async with` stops both
servers and deletes the temporary files.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from navagent.cli.embedded import EmbeddedGateway
from navagent.core.wire_formats import FORMAT_IDS, WireFormatId, wire_format
from navagent.fixtures.harness import CapturedRoute
from navagent.fixtures.provider import SimulatedProvider
from navagent.gateway.routes import parse_routes

__all__ = [
    "DEMO_CLUSTER",
    "DEMO_PROMPTS",
    "DemoStack",
    "demo_banner",
    "find_nav_sim",
]

DEMO_CLUSTER = "demo"
"""The cluster `nav-sim` seeds with three sandboxes (dev-box, gpu-trainer, py-worker)."""
DEMO_PROMPTS = (
    "list my sandboxes",
    "why is gpu-trainer failing? show its logs",
    "create a sandbox named scratch running echo hello",
    "delete py-worker",
    "list the providers and inference routes",
)
"""Example requests the banner shows; tests/cli/test_demo_prompts.py runs each one."""
_PLACEHOLDER_KEY = "sim-demo-key"  # the simulator accepts any non-empty key


def find_nav_sim(scratch: Path) -> Path:
    """The `nav-sim` executable: next to this Python, else on PATH, else a wrapper.

    The wrapper (written into `scratch`) runs the simulator with this
    interpreter, for installs whose scripts directory is not where expected.
    """
    beside = Path(sys.executable).with_name("nav-sim")
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("nav-sim")
    if found is not None:
        return Path(found)
    wrapper = scratch / "nav-sim"
    code = "import sys; from navagent.fixtures.nav_sim import main; sys.exit(main())"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(code)} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    return wrapper


class DemoStack:
    """The simulated provider, an in-process gateway and `nav-sim`, started together.

    After `async with DemoStack() as demo:` use `demo.address` as the gateway,
    `demo.nav_sim` as the tool binary with `demo.tool_env` as its environment,
    `DEMO_CLUSTER` as the cluster and `demo.sessions_db` for throwaway sessions.
    """

    def __init__(
        self,
        *,
        provider: WireFormatId = FORMAT_IDS[0],
        routing_hint: str = "agent",
        pacing_ms: float = 15.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Configure the stack; nothing starts before `async with`.

        Args:
            provider: Which wire format the simulated model speaks (a registry id);
                its route asks for the format's `demo_model`.
            routing_hint: The hint the demo route answers (the agent's `--routing-hint`).
            pacing_ms: Delay between streamed events, so streaming is visible.
            transport: The gateway's upstream transport (a capture's, to record
                the session); None: the gateway's own.

        Raises:
            UnknownWireFormatError: `provider` is not a registered wire format.
        """
        row = wire_format(provider)
        self._format = row.id
        self._protocol = row.protocol
        self._model = row.demo_model
        self._routing_hint = routing_hint
        self._pacing_ms = pacing_ms
        self._transport = transport
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._provider: SimulatedProvider | None = None
        self._gateway: EmbeddedGateway | None = None
        self.address = ""
        self.nav_sim = Path()
        self.tool_env: dict[str, str] = {}
        self.sessions_db = Path()

    @property
    def route(self) -> CapturedRoute:
        """The demo's one route, as a capture keeps it.

        Raises:
            RuntimeError: the stack is not running.
        """
        return CapturedRoute(
            routing_hint=self._routing_hint,
            endpoint=self.provider.base_url,
            model=self._model,
            provider=self._format,
        )

    @property
    def provider(self) -> SimulatedProvider:
        """The running simulated provider (its request log shows what reached it).

        Raises:
            RuntimeError: the stack is not running.
        """
        if self._provider is None:
            raise RuntimeError("the demo stack is not running")
        return self._provider

    async def __aenter__(self) -> Self:
        try:
            await self._start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _start(self) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="nav-agent-demo-")
        scratch = Path(self._scratch.name)
        # Nothing reads the demo's requests back, and each holds the whole
        # conversation: kept, they would grow with the square of the turns.
        self._provider = SimulatedProvider(pacing_ms=self._pacing_ms, keep_bodies=False).start()
        routes = parse_routes(
            {
                "routes": [
                    {
                        "routing_hint": self._routing_hint,
                        "endpoint": self._provider.base_url,
                        "model": self._model,
                        "protocols": [self._protocol],
                        "api_key": _PLACEHOLDER_KEY,
                    }
                ]
            },
            source="nav agent --demo",
            environ={},
        )
        self._gateway = await EmbeddedGateway(routes, transport=self._transport).__aenter__()
        self.address = self._gateway.address
        self.nav_sim = find_nav_sim(scratch)
        self.tool_env = {**os.environ, "NAV_SIM_STATE": str(scratch / "cluster.json")}
        self.sessions_db = scratch / "sessions.db"

    async def aclose(self) -> None:
        """Stop the gateway and the provider and delete the temporary files; idempotent."""
        # The provider first: it closes its connections itself, so the
        # gateway's HTTP client never resets one under a waiting handler.
        provider, self._provider = self._provider, None
        if provider is not None:
            provider.stop()
        gateway, self._gateway = self._gateway, None
        if gateway is not None:
            await gateway.aclose()
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            scratch.cleanup()


def demo_banner(*, provider: WireFormatId) -> str:
    """The text shown when the demo starts: what it is, and what to type."""
    tries = "\n".join(f"    {prompt}" for prompt in DEMO_PROMPTS)
    return (
        f"nav agent --demo: a simulation. The model ({provider} wire format), the gateway and"
        f' the cluster "{DEMO_CLUSTER}" all run inside this process: no API keys, no network.\n'
        f"Try:\n{tries}\n"
        "Type /help for commands; Ctrl-C cancels a turn; Ctrl-D leaves."
    )
