"""Stand-ins for the real world a recorded session came from: a provider and a `nav`.

`StandInProvider` is a local HTTP server that answers each request with the
next of a list of real recorded streams from the conformance corpus
(`shared/conformance/real`: recorded against the real APIs by public
projects; found as the conformance tests find it, and not copied into this
repository, so tests that need it skip without it). The only change made
to those bytes is the tool names, so the model calls this project's tools:
framing, chunking, ids and usage stay as the real provider sent them.

`write_stand_in_nav` writes a `nav` whose outputs are nothing like nav-sim's
(cluster `prod`, other sandboxes, a real-looking endpoint), with Navigator's
own cluster metadata and mTLS files, so a test can prove the replay needs
neither the provider nor the cluster, and that the endpoint and the
certificates never reach a cassette.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pytest

from tests.gateway.corpus import MISSING, REAL

STREAMS = REAL
"""The real corpus (None when it is not found: `MISSING` says why)."""
CLUSTER = "prod"
CLUSTER_ENDPOINT = "https://10.20.30.40:8080"
STAND_IN_KEY = "stand-in-route-key-not-a-credential-0001"
"""Not credential-shaped on purpose: only masking the route's own key keeps it out of a
recording (the shapes have their own tests in test_keyscan.py)."""
CERT_LINE = "MIIBszCCAVmgAwIBAgIUQ2VydGlmaWNhdGUtbWF0ZXJpYWwtc3RhbmQtaW4tMDAx"


@dataclass(frozen=True)
class Stream:
    """One recorded stream, with tool names replaced in order of appearance."""

    file: str
    renames: Sequence[tuple[str, str]] = ()
    """(recorded name, our tool): each pair replaces the next occurrence of the name."""

    def body(self) -> bytes:
        if STREAMS is None:
            pytest.skip(MISSING)
        data: dict[str, Any] = json.loads((STREAMS / self.file).read_text(encoding="utf-8"))
        text: str = data["sse"]
        position = 0
        for old, new in self.renames:
            quoted = f'"name":"{old}"'
            at = text.index(quoted, position)
            text = text[:at] + f'"name":"{new}"' + text[at + len(quoted) :]
            position = at + len(new)
        return text.encode("utf-8")


CONVERSATIONS: dict[str, tuple[Stream, ...]] = {
    "openai": (
        Stream(
            "openai/gpt4o-parallel-empty-args.json",
            (("get_country", "cluster_status"), ("get_product_name", "sandbox_list")),
        ),
        Stream("openai/gpt4o-mini-text-after-tool.json"),
        Stream("openai/gpt4-0613-text-usage.json"),
    ),
    "anthropic": (
        Stream(
            "anthropic/haiku45-two-tool-use-empty-input.json",
            (
                ("pelican_name_generator", "cluster_status"),
                ("pelican_name_generator", "sandbox_list"),
            ),
        ),
        Stream("anthropic/haiku45-text-after-tool-results.json"),
        Stream("anthropic/haiku35-text-no-ping.json"),
    ),
}
"""Per wire format: a turn that calls two tools then answers, then a turn answered in text."""
MODELS = {"openai": "gpt-4o", "anthropic": "claude-haiku-4-5"}


class StandInProvider:
    """Serves `bodies` in order, one per request, as `text/event-stream`; logs the requests."""

    def __init__(self, bodies: Sequence[bytes]) -> None:
        self._bodies = list(bodies)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                provider.requests.append((self.path, json.loads(self.rfile.read(length))))
                if not provider._bodies:
                    self.send_error(500, "the stand-in has no more recorded streams")
                    return
                body = provider._bodies.pop(0)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


_NAV = """
import sys

args = sys.argv[1:]
if args[:2] != ["--cluster", "prod"]:
    print("error: expected --cluster prod", file=sys.stderr)
    sys.exit(2)
command = args[2:]
if command == ["cluster", "status"]:
    print("Server Status\\n\\n  Cluster: prod\\n  Server: https://10.20.30.40:8080")
    print("  Status: Connected\\n  Version: 0.9.4")
elif command == ["sandbox", "list"]:
    print("NAME          NAMESPACE  CREATED              PHASE")
    print("train-7       ml         2026-11-20 09:14:02  Ready")
    print("etl-nightly   data       2026-11-24 23:00:00  Error")
else:
    print("error: the stand-in knows no " + " ".join(command), file=sys.stderr)
    sys.exit(1)
"""


def write_stand_in_nav(folder: Path) -> Path:
    """An executable `nav` for cluster `prod` (not nav-sim), written into `folder`."""
    path = folder / "nav"
    path.write_text(f"#!{shlex.quote(sys.executable)}\n{_NAV}", encoding="utf-8")
    path.chmod(0o755)
    return path


def write_navigator_config(config_home: Path) -> None:
    """Navigator's files for cluster `prod`: its endpoint and its mTLS material."""
    clusters = config_home / "navigator" / "clusters"
    (clusters / CLUSTER / "mtls").mkdir(parents=True)
    (clusters / f"{CLUSTER}_metadata.json").write_text(
        json.dumps({"name": CLUSTER, "gateway_endpoint": CLUSTER_ENDPOINT, "is_remote": True}),
        encoding="utf-8",
    )
    for name in ("ca.crt", "tls.crt"):
        (clusters / CLUSTER / "mtls" / name).write_text(
            f"-----BEGIN CERTIFICATE-----\n{CERT_LINE}\n-----END CERTIFICATE-----\n",
            encoding="utf-8",
        )


def routes_yaml(provider: StandInProvider, wire_format: str, protocol: str) -> str:
    """A routes file with one route to the stand-in, its key from `STAND_IN_KEY`."""
    return (
        "routes:\n"
        "  - routing_hint: agent\n"
        f"    endpoint: {provider.url}\n"
        f"    model: {MODELS[wire_format]}\n"
        f"    protocols: [{protocol}]\n"
        "    api_key_env: STAND_IN_KEY\n"
    )


def offline_env(home: Path) -> dict[str, str]:
    """No key, no tool binary, no cluster config, sessions under `home`: a CI machine."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NAV_", "NAVIGATOR_", "XDG_", "STAND_IN"))
    }
    return env | {"HOME": str(home), "NAV_AGENT_STATE_DIR": str(home / "state"), "NO_COLOR": "1"}


@dataclass(frozen=True)
class StandInWorld:
    """A user's machine with the stand-in cluster configured, and a project folder."""

    project: Path
    home: Path
    nav: Path
    """The stand-in `nav` (delete it to take the cluster away)."""

    @classmethod
    def make(cls, tmp_path: Path) -> StandInWorld:
        project, home = tmp_path / "project", tmp_path / "home"
        project.mkdir()
        (home / "config").mkdir(parents=True)
        write_navigator_config(home / "config")
        return cls(project=project, home=home, nav=write_stand_in_nav(tmp_path))

    def routes(self, provider: StandInProvider, wire_format: str, protocol: str) -> Path:
        """A routes file to `provider`."""
        path = self.home / "routes.yaml"
        path.write_text(routes_yaml(provider, wire_format, protocol), encoding="utf-8")
        return path

    def live_env(self, **extra: str) -> dict[str, str]:
        """The environment of a session on the stand-ins: the key, the nav, the cluster config."""
        return offline_env(self.home) | {
            "STAND_IN_KEY": STAND_IN_KEY,
            "NAV_AGENT_CLI": str(self.nav),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            **extra,
        }
