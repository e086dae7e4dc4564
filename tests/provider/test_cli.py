"""`nav sim provider` runs the simulator standalone; the package surface stays tidy."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

import navagent.fixtures.provider as provider_package
from navagent.cli.app import app
from navagent.cli.sim_cmd import parse_listen
from tests.provider import _helpers as h

ROOT = Path(__file__).resolve().parents[2]


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:8787") == ("127.0.0.1", 8787)
    assert parse_listen("[::1]:0") == ("::1", 0)
    for bad in ("8787", "localhost:", "host:port", "h:70000"):
        with pytest.raises(typer.BadParameter, match="expected HOST:PORT"):
            parse_listen(bad)


def test_bad_listen_value_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["sim", "provider", "--listen", "nowhere"])
    assert result.exit_code == 2, result.output
    assert "expected HOST:PORT" in result.output


@pytest.mark.parametrize("explain", [False, True])
def test_nav_sim_provider_serves_until_sigterm(explain: bool) -> None:
    command = "from navagent.cli.app import main; main()"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            command,
            "sim",
            "provider",
            "--listen",
            "127.0.0.1:0",
            "--pacing-ms",
            "1",
            *(["--explain"] if explain else []),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        match = re.search(
            r"listening on (http://127\.0\.0\.1:\d+) \(OpenAI base URL (\S+),", banner
        )
        assert match, banner
        response = httpx.post(
            match.group(2) + "/chat/completions",
            json=h.openai_body([h.user("list providers")]),
            headers={"authorization": "Bearer sk-test"},
        )
        assert h.fold_openai(response.content)["calls"][0]["name"] == "provider_list"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=5)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "Simulated provider stopped." in out
    assert ("rule providers-noun -> providers for 'list providers'" in err) is explain, err


def test_package_exports_are_sorted_and_exist() -> None:
    names = provider_package.__all__
    assert list(names) == sorted(names, key=lambda n: (not n.isupper(), n))
    assert all(hasattr(provider_package, name) for name in names)


def test_provider_package_depends_on_core_only() -> None:
    for path in (ROOT / "fixtures" / "provider").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "navagent.gateway" not in text and "navagent.cli" not in text, path
        assert "import openai" not in text and "import anthropic" not in text, path


def test_provider_help_explains_markers_fire_once_per_conversation() -> None:
    result = CliRunner().invoke(app, ["sim", "provider", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "[sim-fault: http-429]" in text
    assert "fires once per conversation" in text and "times=N" in text
