"""`write_new_file`, behind `/export FILE` and `sessions export -o FILE` (issue 27, section 4).

Like `--record`, an export never replaces what is there and never writes
through a symbolic link; a name no file can have is one clear sentence.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from navagent.cli.new_file import NewFileError, free_name, write_new_file


def test_a_new_file_is_written_private(tmp_path: Path) -> None:
    target = tmp_path / "run.md"
    write_new_file(target, "# run\n")
    assert target.read_text("utf-8") == "# run\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize("occupant", ["file", "link to a file", "dangling link", "folder"])
def test_whatever_is_at_the_name_is_left_alone_and_another_name_suggested(
    tmp_path: Path, occupant: str
) -> None:
    target, victim = tmp_path / "run.md", tmp_path / "victim.txt"
    victim.write_text("keep me", "utf-8")
    if occupant == "file":
        target.write_text("earlier export", "utf-8")
    elif occupant == "link to a file":
        target.symlink_to(victim)
    elif occupant == "dangling link":
        target.symlink_to(tmp_path / "made-through-the-link.md")
    else:
        target.mkdir()
    kind = {"file": "a file", "folder": "a folder"}.get(occupant, "a symbolic link")
    expected = rf"run\.md already exists \({kind}\).*e\.g\. .*run-2\.md"
    with pytest.raises(NewFileError, match=expected):
        write_new_file(target, "new text")
    assert victim.read_text("utf-8") == "keep me"
    assert not (tmp_path / "made-through-the-link.md").exists()
    if occupant == "file":
        assert target.read_text("utf-8") == "earlier export"


def test_the_suggested_name_is_free(tmp_path: Path) -> None:
    for name in ("run.md", "run-2.md", "run-3.md"):
        (tmp_path / name).write_text("x", "utf-8")
    (tmp_path / "run-4.md").symlink_to(tmp_path / "nowhere")
    assert free_name(tmp_path / "run.md") == tmp_path / "run-5.md"


@pytest.mark.parametrize("name", ["run\x00.md", "\ud800.md"])
def test_a_name_no_file_can_have_is_one_sentence(tmp_path: Path, name: str) -> None:
    with pytest.raises(NewFileError, match="is not a usable file name") as info:
        write_new_file(tmp_path / name, "text")
    assert "\x00" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    with pytest.raises(NewFileError, match="cannot write"):
        write_new_file(tmp_path / "run.md", "fine so far \ud800 then not")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(NewFileError, match="cannot write .*out/run.md: No such file or directory"):
        write_new_file(tmp_path / "out" / "run.md", "text")
