"""Every YAML file the package reads refuses an alias bomb, with the file and line (issue 27, 4).

A "billion laughs" placed where each format holds free-form data (a
scenario's tool `arguments`, a cassette's `parsed_body`, a tool cassette's
output, a route's or caller's entry) is refused by the one loader
(`core/safe_yaml.py`) before anything is built from it, naming the file and
the line of the alias, in bounded memory.
"""

from __future__ import annotations

import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from navagent.core.errors import NavAgentError
from navagent.fixtures.harness import load_scenario
from navagent.fixtures.harness.cassettes._cassette import load_cassette
from navagent.fixtures.harness.cassettes._tool_cassette import load_tool_cassette
from navagent.gateway.callers import load_callers
from navagent.gateway.routes import load_routes

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "create-confirmed-delete-declined"


def bomb(levels: int = 6) -> str:
    """A flow mapping whose last level repeats 9**levels strings (531,441 by default)."""
    parts = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    parts += [f"l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "{" + ", ".join(parts) + "}"


def scenario(tmp: Path) -> tuple[Path, int]:
    path = tmp / f"{SCENARIO}.yaml"
    text = (ROOT / "scenarios" / f"{SCENARIO}.yaml").read_text("utf-8")
    old = "arguments: {name: web-2, command: echo hello}"
    path.write_text(text.replace(old, f"arguments: {bomb()}"), "utf-8")
    return path, text[: text.index(old)].count("\n") + 1


def provider_cassette(tmp: Path) -> tuple[Path, int]:
    path = tmp / f"{SCENARIO}.yaml"
    text = (ROOT / "cassettes" / "openai" / f"{SCENARIO}.yaml").read_text("utf-8")
    old = "    parsed_body:\n      model: gpt-4.1-mini\n"
    path.write_text(text.replace(old, old + f"      metadata: {bomb()}\n", 1), "utf-8")
    return path, text[: text.index(old)].count("\n") + 3


def tool_cassette(tmp: Path) -> tuple[Path, int]:
    path = tmp / "tools.yaml"
    path.write_text(
        "metadata:\n  source: {kind: recorded, cluster: demo}\ninteractions:\n"
        f"- args: [sandbox, list]\n  stdout: {bomb()}\n",
        "utf-8",
    )
    return path, 5


def routes_file(tmp: Path) -> tuple[Path, int]:
    path = tmp / "routes.yaml"
    path.write_text(
        "routes:\n- routing_hint: agent\n  endpoint: http://127.0.0.1:9\n  model: m\n"
        f"  protocols: [openai_chat_completions]\n  note: {bomb()}\n",
        "utf-8",
    )
    return path, 6


def callers_file(tmp: Path) -> tuple[Path, int]:
    path = tmp / "callers.yaml"
    path.write_text(
        f"callers:\n- name: ci\n  token_hash: {'0' * 64}\n  routing_hints: {bomb()}\n", "utf-8"
    )
    return path, 4


KINDS: dict[str, tuple[Callable[[Path], tuple[Path, int]], Callable[[Path], object]]] = {
    "scenario arguments": (scenario, load_scenario),
    "cassette parsed_body": (provider_cassette, load_cassette),
    "tool cassette output": (tool_cassette, load_tool_cassette),
    "routes file": (routes_file, load_routes),
    "callers file": (callers_file, load_callers),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_alias_bomb_is_refused_with_file_and_line_in_bounded_memory(
    tmp_path: Path, kind: str
) -> None:
    write, load = KINDS[kind]
    path, line = write(tmp_path)
    tracemalloc.start()
    try:
        with pytest.raises(NavAgentError) as info:
            load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert f"{path}:{line}" in message or f"{path}: not valid YAML at line {line}," in message
    assert "the alias *l" in message and "write the repeated part out" in message
    assert "\n" not in message.strip(), "one sentence"
    assert peak < 16 * 2**20, f"{kind}: refusing took {peak:,} bytes"


def test_a_replay_of_a_bombed_cassette_fails_with_the_cassette_named(tmp_path: Path) -> None:
    import asyncio

    from navagent.fixtures.harness import replay_scenario

    cassettes = tmp_path / "cassettes" / "openai"
    cassettes.mkdir(parents=True)
    path, line = provider_cassette(cassettes)
    shutil.copy(ROOT / "scenarios" / f"{SCENARIO}.yaml", tmp_path / f"{SCENARIO}.yaml")
    loaded = load_scenario(tmp_path / f"{SCENARIO}.yaml")
    result = asyncio.run(replay_scenario(loaded, "openai", cassette_dir=tmp_path / "cassettes"))
    assert not result.passed
    assert f"{path}:{line}: the alias *l" in result.report
