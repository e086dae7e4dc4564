"""A cassette from a pull request expands nothing before a bound, and breaks only itself."""

from __future__ import annotations

import gzip
import re
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.fixtures.harness import (
    CassetteError,
    SimulatedCluster,
    load_cassette,
    load_scenario,
    replay_scenario,
)
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.cassettes._cassette import MAX_DECODED_BODY
from tests.gateway.fault_upstream import gzip_bomb
from tests.scenarios.conftest import CopyCase

DEPTH = 600


def edit_cassette(path: Path, edit) -> None:
    data = _serializer.deserialize(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(_serializer.serialize(data), encoding="utf-8")


def compress_first_answer(body: bytes | None = None):
    def edit(data) -> None:
        response = data["interactions"][0]["response"]
        original = response["body"]["string"]
        plain = original.encode() if isinstance(original, str) else original
        response["body"]["string"] = gzip.compress(plain) if body is None else body
        response["headers"]["content-encoding"] = ["gzip"]

    return edit


async def test_a_gzip_body_in_a_cassette_is_decoded_and_replays(
    copy_case: CopyCase, cluster: SimulatedCluster
) -> None:
    folder = copy_case("diagnose-failing", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "diagnose-failing.yaml"
    edit_cassette(cassette, compress_first_answer())
    assert "!!binary" in cassette.read_text(encoding="utf-8")

    result = await replay_scenario(
        load_scenario(folder / "diagnose-failing.yaml"), "openai", cluster=cluster
    )

    assert result.passed, result.report


def test_a_gzip_bomb_in_a_cassette_is_refused_at_load_within_the_bound(
    copy_case: CopyCase,
) -> None:
    folder = copy_case("diagnose-failing", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "diagnose-failing.yaml"
    bomb = gzip_bomb()  # 128 KB of gzip that inflates to 128 MiB
    edit_cassette(cassette, compress_first_answer(bomb))

    tracemalloc.start()
    try:
        with pytest.raises(CassetteError) as refused:
            load_cassette(cassette)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    message = str(refused.value)
    line = next(
        number
        for number, text in enumerate(cassette.read_text().splitlines(), start=1)
        if text.strip() == "response:"
    )
    assert message.startswith(f"{cassette}:{line}: a compressed response body")
    assert f"more than {MAX_DECODED_BODY:,} bytes" in message
    # Decoding stopped at the bound (plus a piece), not at the 128 MiB it inflates to.
    assert peak < MAX_DECODED_BODY * 2.2, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize(
    ("encoding", "says"), [(["gzip", "gzip"], "2 times over"), (["br"], "'br' is not one")]
)
def test_a_stacked_or_unknown_encoding_in_a_cassette_is_refused(
    copy_case: CopyCase, encoding: list[str], says: str
) -> None:
    folder = copy_case("diagnose-failing", providers=("openai",))
    cassette = folder.parent / "cassettes" / "openai" / "diagnose-failing.yaml"

    def edit(data) -> None:
        compress_first_answer()(data)
        data["interactions"][0]["response"]["headers"]["content-encoding"] = encoding

    edit_cassette(cassette, edit)
    with pytest.raises(CassetteError, match=rf"^{re.escape(str(cassette))}:\d+: .*{says}"):
        load_cassette(cassette)


def nest_first_request(path: Path) -> int:
    """Interaction 1's request body gets a value nested `DEPTH` levels deep; its line number."""
    text = path.read_text(encoding="utf-8")
    model = "    parsed_body:\n      model: gpt-4.1-mini\n"
    assert model in text
    deep = "      deep: " + "[" * DEPTH + "]" * DEPTH + "\n"
    path.write_text(text.replace(model, model + deep, 1), encoding="utf-8")
    return text[: text.index(model) + len(model)].count("\n") + 1


def test_a_deeply_nested_body_fails_its_replay_and_the_others_run(
    copy_case: CopyCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_case("diagnose-failing", "providers", providers=("openai",))
    line = nest_first_request(folder.parent / "cassettes" / "openai" / "diagnose-failing.yaml")
    monkeypatch.chdir(folder.parent)

    result = CliRunner().invoke(app, ["scenario", "replay", "--provider", "openai"])

    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert not isinstance(result.exception, RecursionError), result.exception
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("PASS  providers[openai]") for line in lines), result.output
    assert any(line.startswith("FAIL  diagnose-failing[openai]") for line in lines)
    assert (
        f"diagnose-failing.yaml:{line}: not valid YAML: a value nested more than" in result.output
    )
    assert re.search(r"1 passed, 1 failed in", result.output)
