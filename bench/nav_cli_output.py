"""How fast the nav runner drains big outputs, and how much memory it holds meanwhile.

Runs a program that writes N bytes to stdout through `run_process` with the
default 32 KiB cap and prints wall time, throughput and the peak of Python
allocations (tracemalloc) during the run. The peak should stay flat as N
grows: only the cap (plus one read chunk and asyncio's pipe buffer) is held.

    .venv/bin/python bench/nav_cli_output.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from navagent.core._process import run_process
from navagent.core.nav_cli import DEFAULT_OUTPUT_CAP_BYTES

WRITER = """
import sys
size = int(sys.argv[1])
block = (b"x" * 99 + b"\\n") * 655
out = sys.stdout.buffer
while size >= len(block):
    out.write(block)
    size -= len(block)
out.write(block[:size])
"""


async def measure(program: Path, size: int) -> tuple[float, int, int]:
    tracemalloc.start()
    started = time.perf_counter()
    result = await run_process(
        [sys.executable, str(program), str(size)],
        timeout_s=300,
        output_cap_bytes=DEFAULT_OUTPUT_CAP_BYTES,
    )
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.stdout.total == size
    return elapsed, peak, len(result.stdout.text().encode())


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        program = Path(directory) / "writer.py"
        program.write_text(WRITER, encoding="utf-8")
        print(f"{'output':>10}  {'wall s':>7}  {'MB/s':>7}  {'peak KiB':>9}  {'kept B':>7}")
        for size in (10_000, 1_000_000, 10_000_000, 100_000_000, 500_000_000):
            elapsed, peak, kept = await measure(program, size)
            print(
                f"{size:>10,}  {elapsed:>7.2f}  {size / elapsed / 1e6:>7.1f}  "
                f"{peak / 1024:>9.0f}  {kept:>7,}"
            )


if __name__ == "__main__":
    asyncio.run(main())
