"""The distribution maps the top-level folders to `navagent.*` and nothing else."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

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


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, statically or through `importlib.import_module("...")`."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            modules.add(str(node.args[0].value))
    return modules


def test_core_imports_no_other_layer() -> None:
    # The wire-format registry names the other layers' plug-ins by import
    # path, as data; only an import counts.
    offenders = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in (ROOT / "core").rglob("*.py")
        for module in _imported_modules(path)
        if module.startswith(("navagent.gateway", "navagent.cli", "navagent.fixtures"))
    ]
    assert not offenders


_MAY_IMPORT = {
    "core": ("navagent.core",),
    "gateway": ("navagent.gateway", "navagent.core"),
    "fixtures": ("navagent.fixtures", "navagent.core"),
    "fixtures/harness": ("navagent.fixtures", "navagent.core", "navagent.gateway"),
}
"""Each layer and what it may import of the package: cli -> gateway, core, fixtures;
gateway -> core; fixtures -> core, but the replay harness runs the real gateway."""


@pytest.mark.parametrize("layer", sorted(_MAY_IMPORT))
def test_dependencies_point_one_way(layer: str) -> None:
    nested = [other for other in _MAY_IMPORT if other.startswith(f"{layer}/")]
    offenders = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in (ROOT / layer).rglob("*.py")
        if not any(path.is_relative_to(ROOT / other) for other in nested)
        for module in _imported_modules(path)
        if module.startswith("navagent.") and not module.startswith(_MAY_IMPORT[layer])
    ]
    assert not offenders


def test_typing_links_point_at_the_package_folders() -> None:
    for name in ("core", "gateway", "cli", "fixtures"):
        link = ROOT / ".typing" / "navagent" / name
        assert link.resolve() == (ROOT / name).resolve()
