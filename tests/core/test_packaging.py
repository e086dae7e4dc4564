"""The distribution maps the top-level folders to `navagent.*` and nothing else."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    mapping = config["setuptools"]["package-dir"]
    listed = set(config["setuptools"]["packages"])
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *relative.parts]))
    assert found == listed, f"pyproject packages out of date: missing {found - listed}"
    assert all(name.startswith("navagent.") for name in listed)


def test_core_imports_no_other_layer() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "core").rglob("*.py")
        for layer in ("navagent.gateway", "navagent.cli", "navagent.fixtures")
        if layer in path.read_text(encoding="utf-8")
    ]
    assert not offenders


def test_typing_links_point_at_the_package_folders() -> None:
    for name in ("core", "gateway", "cli", "fixtures"):
        link = ROOT / ".typing" / "navagent" / name
        assert link.resolve() == (ROOT / name).resolve()
