"""A stopped worker: how long until it is replaced, and what health probes see meanwhile.

Starts `nav gateway serve --workers 2 --worker-timeout T`, stops one worker
with SIGSTOP, and probes gRPC health on a fresh connection every 100 ms (each
with a 0.5 s deadline) until the replacement serves, then for 5 s more.
Issue 21 measured 17 failed probes of 27 over 30 s before the watchdog
existed (the stopped worker was never replaced).

    .venv/bin/python bench/gateway_watchdog.py [--worker-timeout 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

NAV = str(Path(sys.executable).with_name("nav"))
ROUTES = (
    "routes:\n  - routing_hint: agent\n    endpoint: http://127.0.0.1:9\n    model: m\n"
    "    protocols: [openai_chat_completions]\n    api_key: bench-key-0123456789\n"
)


def probe(port: int) -> str:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=0.5
            )
        except grpc.RpcError as exc:
            return str(exc.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker-timeout", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        routes = Path(folder) / "routes.yaml"
        routes.write_text(ROUTES, encoding="utf-8")
        process = subprocess.Popen(
            [NAV, "gateway", "serve", "--listen", "127.0.0.1:0", "--routes", str(routes),
             "--workers", "2", "--worker-timeout", str(args.worker_timeout)],
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        lines: list[str] = []
        stderr = process.stderr
        assert stderr is not None
        threading.Thread(
            target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True
        ).start()
        try:
            deadline = time.monotonic() + 60
            while not any("gateway ready on" in line for line in lines):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit("the gateway did not start:\n" + "".join(lines))
                time.sleep(0.05)
            ready = next(line for line in lines if "gateway ready on" in line)
            port = int(re.search(r"127\.0\.0\.1:(\d+)", ready).group(1))  # type: ignore[union-attr]
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text("ascii")
            victim = next(
                int(pid)
                for pid in children.split()
                if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
            )
            mark = len(lines)
            stopped = time.monotonic()
            os.kill(victim, signal.SIGSTOP)
            results: list[tuple[float, str]] = []
            killed_at = serving_at = None
            deadline = time.monotonic() + 60 + args.worker_timeout
            while serving_at is None or time.monotonic() < serving_at + 5:
                if time.monotonic() > deadline:
                    raise SystemExit("no replacement:\n" + "".join(lines))
                results.append((time.monotonic() - stopped, probe(port)))
                recent = lines[mark:]
                if killed_at is None and any("sent no heartbeat" in line for line in recent):
                    killed_at = time.monotonic() - stopped
                if serving_at is None and any("health says SERVING" in line for line in recent):
                    serving_at = time.monotonic()
                time.sleep(0.1)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    assert serving_at is not None
    failed = [r for r in results if r[1] != "SERVING"]
    print(f"worker timeout:            {args.worker_timeout:g} s")
    print(f"stopped worker killed at:  {killed_at:.2f} s after SIGSTOP")
    print(f"all workers serving at:    {serving_at - stopped:.2f} s after SIGSTOP")
    print(f"probes not SERVING:        {len(failed)} of {len(results)}")
    print(f"  of which NOT_SERVING:    {sum(1 for r in failed if r[1] == 'NOT_SERVING')}")
    print(f"last probe not SERVING at: {max((t for t, _ in failed), default=0):.2f} s")


if __name__ == "__main__":
    main()
