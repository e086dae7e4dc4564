"""Cassettes are parsed once per content: the cache is right, private and never in the way."""

from __future__ import annotations

import hashlib
import json
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


def _broken_cassette(tmp_path: Path) -> tuple[Path, str]:
    """A copy of `CASSETTE` whose metadata block is gone: loading it must fail."""
    broken = tmp_path / "broken.yaml"
    text = CASSETTE.read_text("utf-8")
    start, end = text.index("metadata:"), text.index("version: 1")
    broken.write_text(text[:start] + text[end:], "utf-8")
    return broken, broken.read_text("utf-8")


def _plant(folder: Path, text: str, data: dict[str, Any], *, digest: str | None = None) -> Path:
    """An entry for `text` as an attacker would write it: the right name, a forged parse."""
    real = hashlib.sha256(text.encode()).hexdigest()
    name = hashlib.blake2b(f"{_parse_cache._VERSION}\0{real}".encode(), digest_size=20)
    entry = {"version": _parse_cache._VERSION, "text_sha256": digest or real, "data": data}
    path = folder / f"{name.hexdigest()}.json"
    path.write_text(json.dumps(entry), "utf-8")
    return path


def test_a_planted_entry_in_a_folder_open_to_others_is_ignored_and_said_once(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken, text = _broken_cassette(tmp_path)
    good = _serializer.deserialize(CASSETTE.read_text("utf-8"))
    cache.mkdir(parents=True)
    cache.chmod(0o777)  # as another user's world-writable folder would be
    _plant(cache, text, good)

    for _ in range(2):
        with pytest.raises(_cassette.CassetteError, match="no `metadata: source:` block"):
            _cassette.load_cassette(broken)

    said = capsys.readouterr().err
    assert said.count("not using the parse cache") == 1
    assert "its mode is 0777, not 0700" in said
    assert stat.S_IMODE(cache.stat().st_mode) == 0o777  # not ours to change


def test_a_cache_folder_that_is_a_link_is_not_used(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken, text = _broken_cassette(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.parent.mkdir(parents=True)
    cache.symlink_to(elsewhere)
    _plant(elsewhere, text, _serializer.deserialize(CASSETTE.read_text("utf-8")))

    with pytest.raises(_cassette.CassetteError):
        _cassette.load_cassette(broken)
    assert "it is a symbolic link" in capsys.readouterr().err


def test_an_entry_that_is_not_the_parse_of_this_text_is_ignored(
    cache: Path, tmp_path: Path
) -> None:
    broken, text = _broken_cassette(tmp_path)
    _cassette.load_cassette(CASSETTE)  # makes the folder (ours, 0700) and the good entry
    (good_entry,) = cache.iterdir()
    with pytest.raises(_cassette.CassetteError, match="no `metadata: source:` block"):
        _cassette.load_cassette(broken)  # its parse is kept too, under its own name
    (broken_entry,) = set(cache.iterdir()) - {good_entry}
    # Planted: the broken text's entry now holds the good cassette's (a valid parse, and
    # a valid entry, of another text).
    broken_entry.write_bytes(good_entry.read_bytes())

    with pytest.raises(_cassette.CassetteError, match="no `metadata: source:` block"):
        _cassette.load_cassette(broken)
    # A link in place of an entry is not followed either.
    broken_entry.unlink()
    target = tmp_path / "forged.json"
    _plant(tmp_path, text, _serializer.deserialize(CASSETTE.read_text("utf-8"))).rename(target)
    broken_entry.symlink_to(target)
    with pytest.raises(_cassette.CassetteError, match="no `metadata: source:` block"):
        _cassette.load_cassette(broken)
