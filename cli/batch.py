"""`nav agent` without a terminal: one-shot (`-p`), piped stdin and `--json`.

Each line of input is one message; nothing is printed but the answers (or,
with `--json`, the event stream) on stdout, so scripts can use the output as
is. Tool traces and errors go to stderr. The exit status is 0 when every turn
ended with an answer and 1 when any did not (error, timeout, iteration limit,
refusal, pause); later lines are still answered after a failure.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TextIO

from navagent.core.agent_events import TurnFinished
from navagent.core.errors import ChatFailedError

__all__ = ["read_lines", "run_lines", "single_line"]

SendTurn = Callable[[str], Awaitable[TurnFinished]]


async def read_lines(stream: TextIO) -> AsyncIterator[str]:
    """Yield the lines of `stream` without blocking the event loop.

    A daemon thread does the blocking reads: it works for pipes and regular
    files alike (the loop's pipe transports refuse regular files) and never
    holds up interpreter exit on Ctrl-C.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        try:
            for line in stream:
                loop.call_soon_threadsafe(queue.put_nowait, line)
        except (OSError, ValueError):
            pass  # stdin closed under us: treat as the end
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="nav-agent-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line


async def run_lines(
    send: SendTurn,
    lines: AsyncIterator[str],
    *,
    report: Callable[[str], None],
) -> int:
    """Send each non-blank line as one message; return the exit status.

    Args:
        send: Runs one turn (`AgentSession.send`); its sink prints the answer.
        lines: The messages, one per line (a trailing newline is dropped).
        report: Prints an unexpected error in one line (completion failures
            were already shown by the sink).
    """
    failed = False
    async for line in lines:
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        try:
            finished = await send(text)
        except ChatFailedError:
            failed = True
        except Exception as exc:  # one broken turn must not end a script's session
            failed = True
            report(f"{type(exc).__name__}: {exc}")
        else:
            failed = failed or finished.reason != "answered"
    return 1 if failed else 0


async def single_line(text: str) -> AsyncIterator[str]:
    """`-p "message"` as a one-line input."""
    yield text
