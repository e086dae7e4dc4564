"""The plugin installed beside the plugins a team already runs (issue 28, section 1).

Each test runs pytest in a subprocess on a small project with a
`@pytest.mark.vcr` test (pytest-recording), a syrupy snapshot test and a
scenario, with plugin autoloading off and the plugins named with `-p`
(their entry-point names) in a chosen order, so both registration orders
are run on purpose; one run autoloads, as a team's `pytest` does. CI runs
this file on the oldest and the newest pytest the project supports, from
the installed wheel (`.ci/run`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from navagent.fixtures.harness import load_cassette
from navagent.fixtures.harness.cassettes import _serializer
from navagent.fixtures.harness.record._record_modes import RECORD_MODES
from tests.scenarios.conftest import CASSETTES, SCENARIOS

pytestmark = pytest.mark.slow

PYPROJECT = """
[tool.pytest.ini_options]
nav_scenarios = ["scenarios"]
nav_formats = ["openai"]
filterwarnings = ["error"]
"""

# A team's own HTTP test: pytest-recording's `vcr` fixture over a local
# server that counts the requests that reach it. EXPECTED_MODE and
# EXPECTED_HITS come from the outer test, per run.
TEST_HTTP = """
import json
import os
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HITS = []


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        HITS.append(self.path)
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def vcr_config():
    return {"match_on": ["method", "path"]}  # the port changes from run to run


@pytest.mark.vcr
def test_fetch(server, vcr, record_mode):
    with urllib.request.urlopen(server + "/hello") as response:
        assert json.load(response) == {"path": "/hello"}
    assert record_mode == os.environ["EXPECTED_MODE"]
    # pytest-recording's rewrite: delete the cassette, then vcrpy's new_episodes
    assert vcr.record_mode == {"rewrite": "new_episodes"}.get(record_mode, record_mode)
    assert len(HITS) == int(os.environ["EXPECTED_HITS"])


def test_snapshot(snapshot):
    assert snapshot == {"answer": "dev-box"}
"""

# The plugins a team has, by entry-point name; nav's is `nav-scenarios`.
TEAM_PLUGINS = ("syrupy", "xdist")  # and randomly, where a test asks: `-p randomly`
NAV_FIRST = ("nav-scenarios", "recording")
RECORDING_FIRST = ("recording", "nav-scenarios")

# What the vcr test sees per mode, once its cassette exists: vcrpy's own meanings.
SERVER_HITS = {"none": 0, "once": 0, "new_episodes": 0, "all": 1, "rewrite": 1}


@pytest.fixture
def team(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A team's project: its HTTP test, a snapshot test and the `providers` scenario."""
    monkeypatch.delenv("CI", raising=False)  # recording modes are refused in CI
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_http=TEST_HTTP)
    (pytester.path / "scenarios").mkdir()
    shutil.copyfile(SCENARIOS / "providers.yaml", pytester.path / "scenarios" / "providers.yaml")
    nav_cassette = pytester.path / "cassettes" / "openai" / "providers.yaml"
    nav_cassette.parent.mkdir(parents=True)
    shutil.copyfile(CASSETTES / "openai" / "providers.yaml", nav_cassette)
    return pytester.path


def _run(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    order: tuple[str, ...],
    *args: str,
    mode: str | None = None,
    hits: int = 0,
    autoload: bool = False,
) -> pytest.RunResult:
    """pytest in a subprocess, with the plugins in `order` (autoloading off) and `args`."""
    if autoload:
        monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
        plugins: list[str] = ["-p", "no:asyncio"]  # the outer suite's; not a team's
    else:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        plugins = [arg for name in (*order, *TEAM_PLUGINS) for arg in ("-p", name)]
    monkeypatch.setenv("EXPECTED_MODE", mode or "none")
    monkeypatch.setenv("EXPECTED_HITS", str(hits))
    record = [f"--record-mode={mode}"] if mode is not None else []
    return pytester.runpytest_subprocess(*plugins, *record, *args, timeout=300)


def _vcr_interactions(root: Path) -> list[str]:
    data = _serializer.deserialize(
        (root / "cassettes" / "test_http" / "test_fetch.yaml").read_text(encoding="utf-8")
    )
    return [interaction["request"]["uri"] for interaction in data["interactions"]]


def _check_apart(root: Path) -> None:
    """nav's cassettes and the vcr fixture's each hold only their own."""
    folders = {path.parent.name for path in (root / "cassettes").rglob("*.yaml")}
    assert folders == {"openai", "test_http"}
    assert [path.name for path in (root / "cassettes" / "openai").iterdir()] == ["providers.yaml"]
    assert [p.name for p in (root / "cassettes" / "test_http").iterdir()] == ["test_fetch.yaml"]
    uris = _vcr_interactions(root)
    assert uris and all(uri.endswith("/hello") for uri in uris), uris
    nav = load_cassette(root / "cassettes" / "openai" / "providers.yaml")
    assert nav.source.kind == "simulated" and len(nav.requests) >= 4


@pytest.mark.parametrize(
    "order", [NAV_FIRST, RECORDING_FIRST], ids=["nav-first", "recording-first"]
)
def test_one_record_mode_means_the_same_to_both_plugins_in_either_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, team: Path, order: tuple[str, ...]
) -> None:
    # once, with no vcr cassette yet: vcrpy records it (one request reaches the
    # server); nav replays its cassette; syrupy writes its snapshot
    first = _run(pytester, monkeypatch, order, "--snapshot-update", mode="once", hits=1)
    first.assert_outcomes(passed=3)
    first.stdout.fnmatch_lines(["nav scenarios: record mode once, formats openai"])

    for mode in (m for m in RECORD_MODES if m != "once"):
        result = _run(pytester, monkeypatch, order, "-v", mode=mode, hits=SERVER_HITS[mode])
        result.assert_outcomes(passed=3)
        result.stdout.fnmatch_lines_random(
            [
                f"nav scenarios: record mode {mode}, formats openai",
                "*test_http.py::test_fetch PASSED*",
                "*test_http.py::test_snapshot PASSED*",
                "*scenarios/providers.yaml::openai PASSED*",
            ]
        )
        _check_apart(team)


def test_side_by_side_under_xdist_and_randomly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, team: Path
) -> None:
    # no vcr cassette yet: new_episodes records it, rewrite records it again
    for order, mode in ((NAV_FIRST, "new_episodes"), (RECORDING_FIRST, "rewrite")):
        result = _run(
            pytester,
            monkeypatch,
            order,
            *("-n", "2", "-p", "randomly", "-k", "not test_snapshot"),
            mode=mode,
            hits=1,
        )
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines_random(
            [
                "*Using --randomly-seed=*",
                "*created: 2/2 workers*",
                f"nav scenarios: record mode {mode}, formats openai",
            ]
        )
        _check_apart(team)


def test_autoloaded_as_installed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, team: Path
) -> None:
    """As a team runs it: every installed plugin autoloaded, in whatever order."""
    result = _run(
        pytester,
        monkeypatch,
        (),
        "-p",
        "randomly",
        "--snapshot-update",
        mode="once",
        hits=1,
        autoload=True,
    )
    result.stderr.no_fnmatch_line("*conflicting option*")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines_random(
        ["*Using --randomly-seed=*", "nav scenarios: record mode once, formats openai"]
    )
    _check_apart(team)


def test_either_plugin_can_be_disabled(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, team: Path
) -> None:
    # without pytest-recording, --record-mode is nav's alone, with the same choices
    alone = _run(pytester, monkeypatch, ("nav-scenarios",), "scenarios", mode="new_episodes")
    alone.assert_outcomes(passed=1)
    alone.stdout.fnmatch_lines(["nav scenarios: record mode new_episodes, formats openai"])
    bad = _run(pytester, monkeypatch, ("nav-scenarios",), "scenarios", mode="sometimes")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--record-mode: invalid choice: 'sometimes'*"])

    # without nav: no scenario items; pytest warns about the nav_* keys it no
    # longer knows, as for any disabled plugin's settings
    recording = _run(
        pytester,
        monkeypatch,
        ("recording",),
        "-W",
        "ignore:Unknown config option:pytest.PytestConfigWarning",
        "--snapshot-update",
        mode="once",
        hits=1,
    )
    recording.assert_outcomes(passed=2)
    recording.stdout.no_fnmatch_line("*providers.yaml*")
    recording.stdout.no_fnmatch_line("nav scenarios:*")
    _check_apart(team)


def test_loaded_from_a_conftest_after_pytest_recording(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, team: Path
) -> None:
    """A project that names the plugin in its conftest.py: it registers last, and defers."""
    pytester.makeconftest('pytest_plugins = ["navagent.fixtures.harness.pytest_plugin"]\n')
    result = _run(pytester, monkeypatch, ("recording",), "--snapshot-update", mode="once", hits=1)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["nav scenarios: record mode once, formats openai"])
    alone = _run(pytester, monkeypatch, (), "scenarios", mode="new_episodes")
    alone.assert_outcomes(passed=1)
    alone.stdout.fnmatch_lines(["nav scenarios: record mode new_episodes, formats openai"])
