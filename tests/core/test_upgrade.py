"""A newer build replaces an older one: versions come from git, so `pip install -U` upgrades.

Before, every build was `nav_agent-0.1.0` and pip kept the installed code
("already satisfied"). Here two wheels are built from a copy of this tree in a
git repository of its own: one at a tag, one a commit later (a `.dev`
version between tags), and the newer one is installed over the older as the
README says to upgrade, offline (`--no-index`, `--no-deps`, no build
isolation: setuptools and setuptools-scm come from the test environment).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "core", "gateway", "cli", "fixtures")
MARK = "# built second\n"

pytestmark = pytest.mark.slow


def run(*argv: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done.stdout


def git(repo: Path, *argv: str) -> str:
    return run("git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *argv, cwd=repo)


def build(repo: Path, wheels: Path) -> Path:
    before = set(wheels.glob("*.whl"))
    pip = (sys.executable, "-m", "pip")
    run(*pip, "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation", "-w", wheels, repo)
    (wheel,) = set(wheels.glob("*.whl")) - before
    return wheel


def test_pip_install_upgrade_replaces_an_older_build(tmp_path: Path) -> None:
    repo = tmp_path / "nav-agent"
    repo.mkdir()
    tracked = run(
        "git", "ls-files", "-z", "-co", "--exclude-standard", "--", *SOURCES, cwd=ROOT
    ).split("\0")
    for name in filter(None, tracked):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ROOT / name).read_bytes())
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "release")
    git(repo, "tag", "v1.0.0")
    wheels = tmp_path / "wheels"
    older = build(repo, wheels)
    module = repo / "core" / "version.py"
    module.write_text(module.read_text(encoding="utf-8") + MARK, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "a fix after the release")
    newer = build(repo, wheels)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert older.name.startswith("nav_agent-1.0.0-")
    version = newer.name.split("-")[1]
    release, _, commit = version.partition("+g")
    assert release == "1.0.1.dev1" and head.startswith(commit)  # a .dev between tags

    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
    site = Path(str(site).strip())
    # The dependencies come from this environment (after the env's own packages, so the
    # installed nav-agent is the one imported); nav-agent alone is installed there.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    pip = (sys.executable, "-m", "pip", "--python", python)
    run(*pip, "install", "-q", "--no-deps", "--no-index", older)
    assert run(env / "bin" / "nav", "--version") == "nav 1.0.0\n"

    # README, "Upgrading": pip install -U with the newer build (here its wheel).
    run(*pip, "install", "-q", "-U", "--no-deps", "--no-index", newer)
    assert run(env / "bin" / "nav", "--version") == f"nav {version}\n"
    installed = site / "navagent" / "core" / "version.py"
    assert installed.read_text(encoding="utf-8").endswith(MARK)  # the new code, not the old
    assert [path.name for path in site.glob("nav_agent-*.dist-info")] == [
        f"nav_agent-{version}.dist-info"
    ]
