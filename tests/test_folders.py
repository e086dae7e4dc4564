"""The folders show the architecture: each says what it may import; imports run one way.

`fixtures/harness/` and `fixtures/provider/` are split by job; each job's
`__init__` docstring ends with a `May import:` line naming the packages its
modules may import (besides its own modules and the standard library). These
tests hold every module to its folder's line, keep the folders small, and find
any import circle between modules anywhere in the package.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {
    "navagent.core": "core",
    "navagent.gateway": "gateway",
    "navagent.cli": "cli",
    "navagent.fixtures": "fixtures",
}
SPLIT = ("fixtures/harness", "fixtures/provider")
"""The folders split into one subpackage per job."""
MOST_MODULES = 12


def _module_name(path: Path) -> str:
    for package, folder in PACKAGE_DIRS.items():
        if path.is_relative_to(ROOT / folder):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join([package, *parts])
    raise AssertionError(f"{path} is in no package")


def _modules() -> dict[str, Path]:
    found = {}
    for folder in PACKAGE_DIRS.values():
        for path in (ROOT / folder).rglob("*.py"):
            if "_pb2" not in path.name:
                found[_module_name(path)] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """The navagent modules `path` imports, anywhere in it (a lazy import counts too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in MODULES else node.module)
    return {name for name in found if name.startswith("navagent.")}


def _subpackages() -> list[Path]:
    return sorted(init.parent for folder in SPLIT for init in (ROOT / folder).glob("*/__init__.py"))


def _may_import(package: Path) -> tuple[str, ...]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text("utf-8"))) or ""
    match = re.search(r"^May import:(.*?)(?:\n\n|\Z)", docstring, re.MULTILINE | re.DOTALL)
    assert match, f"{package.relative_to(ROOT)}/__init__.py's docstring has no 'May import:' line"
    return tuple(name.strip() for name in match.group(1).split(",") if name.strip())


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


@pytest.mark.parametrize("package", _subpackages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_subpackage_imports_only_what_its_docstring_names(package: Path) -> None:
    own = _module_name(package / "__init__.py")
    allowed = (own, *_may_import(package))
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(package.rglob("*.py"))
        for module in sorted(_imports(path))
        if not _within(module, allowed)
    ]
    assert not offenders, f"allowed: {allowed}"


@pytest.mark.parametrize("package", _subpackages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_subpackage_is_small_enough_to_read(package: Path) -> None:
    modules = [path for path in package.glob("*.py") if path.name != "__init__.py"]
    modules += [init.parent for init in package.glob("*/__init__.py")]
    assert 0 < len(modules) <= MOST_MODULES


def test_the_split_folders_keep_no_module_of_their_own_but_the_public_surface() -> None:
    for folder in SPLIT:
        loose = sorted(path.name for path in (ROOT / folder).glob("_*.py"))
        assert loose in ([], ["__init__.py"], ["__init__.py", "_markers.py", "_types.py"]), loose


def test_the_subpackages_name_each_other_one_way() -> None:
    graph = {
        _module_name(package / "__init__.py"): {
            name for name in _may_import(package) if name.startswith("navagent.fixtures")
        }
        for package in _subpackages()
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the circle


def test_no_import_circle_between_modules() -> None:
    graph = {name: _imports(path) & MODULES.keys() for name, path in MODULES.items()}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"import circle: {' -> '.join(error.args[1])}")


def test_the_circle_check_finds_a_circle(tmp_path: Path) -> None:
    # The check above must be able to fail: a lazy import back is a circle too.
    (tmp_path / "a.py").write_text("from navagent.core.b import x\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from navagent.core.a import y\n", "utf-8")
    graph = {
        "navagent.core.a": _imports(tmp_path / "a.py"),
        "navagent.core.b": _imports(tmp_path / "b.py"),
    }
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()


HARNESS_SURFACE = """
    CaptureMeta CapturedRoute CassetteError CassetteSource CassetteTransport ClusterError
    ClusterRun ExportError ExportResult Failure FilterError HIDDEN_ENDPOINT KeyFinding
    KnownWireFormat LoadedCassette MatchOptions ProjectSettings RECORDINGS_FOLDER RECORD_MODES
    RecordError RecordFilters RecordMode RecordModeError RecordResult RecordTarget ReplayJob
    ReplayResult RequestMismatch RequestShape SCENARIO_CLOCK Scenario ScenarioError
    SessionCapture SimulatedCluster TOOL_CASSETTE_FOLDER ToolCassette ToolCassetteError
    ToolInteraction ToolSource Transcript TranscriptTurn Turn TurnExpect cassette_path
    check_export_target check_record_mode compare_requests default_cassette_dir
    discover_scenarios export_capture find_capture find_nav_sim load_cassette load_scenario
    load_tool_cassette make_vcr needs_recording parse_scenario plan_replays
    project_scenario_folders project_settings read_capture real_target record_command
    record_scenario remove_captures render_transcript replay_all replay_scenario scan_file
    scan_files scan_text simulated_target tool_cassette_path
"""
PROVIDER_SURFACE = """
    Conversation Fault FaultKind FormatPlugin ModelFunction Plan PlannedCall PromptCache Reply
    RequestRecord Script ScriptedCall SimHTTPError SimRequest SimulatedProvider TOOL_NAMES
    parse_fault parse_marker parse_markers plan_reply plugin_for simulate
"""
"""What a team's code imports: the names exported before the folders were split."""


@pytest.mark.parametrize(
    ("package", "surface"),
    [
        ("navagent.fixtures.harness", HARNESS_SURFACE),
        ("navagent.fixtures.provider", PROVIDER_SURFACE),
    ],
)
def test_the_public_surface_did_not_move(package: str, surface: str) -> None:
    module = importlib.import_module(package)
    assert set(surface.split()) <= set(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_every_module_path_the_readmes_name_imports() -> None:
    text = "".join(
        (ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "scenarios/README.md")
    )
    named = set(re.findall(r"`(navagent(?:\.\w+)+)(?::\w+)?`", text))
    named |= set(re.findall(r"python -m (navagent(?:\.\w+)+)", text))
    assert "navagent.fixtures.harness.pytest_plugin" in named
    for dotted in sorted(named):
        importlib.import_module(dotted)
    paths = set(re.findall(r"`((?:core|gateway|cli|fixtures)/[\w/]+\.py)`", text))
    assert paths, "the READMEs name no source file"
    missing = sorted(path for path in paths if not (ROOT / path).is_file())
    assert not missing
