"""Cassettes are parsed once per content: the cache is right, private and never in the way."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from navagent.fixtures.harness.cassettes import _cassette, _parse_cache, _serializer
from tests.scenarios.conftest import CASSETTES

CASSETTE = CASSETTES / "openai" / "diagnose-failing.yaml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache" / "cassettes"
    monkeypatch.setenv(_parse_cache.CACHE_DIR_ENV, str(folder))
    return folder


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parses: list[str] = []
    real = _serializer.deserialize

    def counted(text: str) -> dict[str, Any]:
        parses.append(text)
        return real(text)

    monkeypatch.setattr(_serializer, "deserialize", counted)
    return parses


def test_a_cassette_read_again_is_not_parsed_again(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = _serializer.deserialize(CASSETTE.read_text("utf-8"))
    parses = _counting(monkeypatch)
    first = _cassette.load_cassette(CASSETTE)
    again = _cassette.load_cassette(CASSETTE)
    assert len(parses) == 1
    assert (again.source, again.requests) == (first.source, first.requests)
    assert again.serializer is not None
    assert again.serializer.deserialize(again.text) == reference  # what vcrpy replays

    changed = tmp_path / "changed.yaml"
    changed.write_text(CASSETTE.read_text("utf-8").replace("gpu-trainer", "gpu-trainor"), "utf-8")
    assert "gpu-trainor" in repr(_cassette.load_cassette(changed).requests)
    assert len(parses) == 2, "another text is another key: never a stale parse"


def test_the_cache_is_private(cache: Path) -> None:
    _cassette.load_cassette(CASSETTE)
    (kept,) = cache.iterdir()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_a_broken_or_unwritable_cache_is_ignored(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _cassette.load_cassette(CASSETTE).requests
    (kept,) = cache.iterdir()
    kept.write_text("{not json", "utf-8")
    assert _cassette.load_cassette(CASSETTE).requests == expected
    kept.unlink()
    cache.chmod(0o500)
    monkeypatch.setattr(_parse_cache, "write_private", _refuse)
    assert _cassette.load_cassette(CASSETTE).requests == expected


def _refuse(path: Path, data: str | bytes) -> None:
    raise PermissionError(f"cannot write {path}")


def test_a_parse_json_cannot_hold_exactly_is_not_kept(cache: Path) -> None:
    value = {"body": b"\x00raw", "when": (1, 2)}
    assert _parse_cache.parsed("some text", lambda _text: value) is value
    assert not cache.exists() or not list(cache.iterdir())
