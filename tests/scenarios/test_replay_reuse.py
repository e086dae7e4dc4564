"""What a replay reuses (a parse, a parsed body, a memory folder) changes no result."""

from __future__ import annotations

from pathlib import Path

import pytest
from vcr.request import Request

from navagent.fixtures.harness import load_cassette
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.cassettes._matching import brief_mismatches, make_json_body_matcher
from navagent.fixtures.harness.replay import _scratch
from tests.scenarios.conftest import CASSETTES


def test_vcrpy_gets_the_parse_once_and_parses_anything_else_afresh() -> None:
    loaded = load_cassette(CASSETTES / "openai" / "providers.yaml")
    assert loaded.serializer is not None
    fresh = _serializer.deserialize(loaded.text)
    first = loaded.serializer.deserialize(loaded.text)
    assert first == fresh
    second = loaded.serializer.deserialize(loaded.text)
    assert second == fresh and second is not first  # a second load is parsed again
    other = (CASSETTES / "anthropic" / "providers.yaml").read_text(encoding="utf-8")
    assert loaded.serializer.deserialize(other) == _serializer.deserialize(other)


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text((CASSETTES / "openai" / "providers.yaml").read_text(encoding="utf-8"))
    loaded = load_cassette(path)
    changed = loaded.text.replace("stream: true", "stream: false", 1)
    assert loaded.serializer is not None
    assert loaded.serializer.deserialize(changed) == _serializer.deserialize(changed)


def _request(body: bytes) -> Request:
    return Request("POST", "http://h/v1/x", body, {})


def test_the_matcher_gives_the_same_answers_with_brief_mismatches() -> None:
    matcher = make_json_body_matcher()
    recorded = _request(b'{"a": 1, "b": [1, 2]}')
    for _ in range(2):  # the second time from the kept bodies
        matcher(_request(b'{ "b": [1, 2], "a": 1 }'), recorded)
        with pytest.raises(AssertionError, match=r"^the JSON body differs:\n  b\[1\]: 2 -> 3$"):
            matcher(_request(b'{"a": 1, "b": [1, 3]}'), recorded)
        with brief_mismatches(), pytest.raises(AssertionError, match=r"^the JSON body differs$"):
            matcher(_request(b'{"a": 1, "b": [1, 3]}'), recorded)
        with brief_mismatches():
            matcher(_request(b'{"a": 1, "b": [1, 2]}'), recorded)


def test_replay_folders_go_to_memory_only_where_it_is_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    link = tmp_path / "link"
    link.symlink_to(shared, target_is_directory=True)
    cases = {
        (shared, 0o1777): str(shared),  # world-writable with the sticky bit
        (shared, 0o777): None,  # without it, others could swap what is made there
        (link, 0o1777): None,  # a link is never followed
        (tmp_path / "missing", 0o1777): None,
    }
    for (folder, mode), expected in cases.items():
        shared.chmod(mode)
        monkeypatch.setattr(_scratch, "MEMORY_FOLDERS", (folder,))
        _scratch.scratch_root.cache_clear()
        assert _scratch.scratch_root() == expected, (folder, oct(mode))
    _scratch.scratch_root.cache_clear()
