"""Session store costs: one recorded message (runs inline on the event loop) and loading.

Run: .venv/bin/python bench/sessions.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from navagent.core.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from navagent.core.sessions import SessionStore


def turn(n: int) -> list[Message]:
    call = ToolCall(id=f"call_{n}", name="sandbox_list", arguments='{"cluster": "dev"}')
    return [
        UserMessage(content=f"question {n}: what is running?"),
        AssistantMessage(content="Let me check.", tool_calls=(call,)),
        ToolResultMessage(tool_call_id=call.id, content="NAME STATUS\n" + "web Running\n" * 40),
        AssistantMessage(content="Forty sandboxes are running. " * 5),
    ]


def main() -> None:
    header = ("messages", "record p50 ms", "record p99 ms", "load ms", "list ms")
    print(f"{header[0]:>9} {header[1]:>14} {header[2]:>14} {header[3]:>9} {header[4]:>9}")
    for turns in (25, 250, 2500):
        with tempfile.TemporaryDirectory() as folder, SessionStore(Path(folder) / "s.db") as store:
            session = store.create(name="bench")
            recorder = store.recorder(session.id)
            timings = []
            for n in range(turns):
                for message in turn(n):
                    start = time.perf_counter()
                    recorder.record_message(message)
                    timings.append(time.perf_counter() - start)
            start = time.perf_counter()
            history = store.load_history(session.id)
            load = time.perf_counter() - start
            start = time.perf_counter()
            store.list_sessions()
            listing = time.perf_counter() - start
            timings.sort()
            p99 = timings[int(len(timings) * 0.99) - 1]
            print(
                f"{len(history):>9} {statistics.median(timings) * 1e3:>14.3f}"
                f" {p99 * 1e3:>14.3f} {load * 1e3:>9.1f} {listing * 1e3:>9.2f}"
            )


if __name__ == "__main__":
    main()
