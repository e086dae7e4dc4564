"""What may record in CI: one rule, said the same by the docs, the plugin and the CLI, and done.

`nav scenario record --sim` records in CI (no network, no key); a real API
recording is refused; a pytest run refuses any --record-mode but none.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from navagent.cli.app import app
from navagent.core.ci import CI_RULE
from navagent.fixtures.harness.record._record_modes import RecordModeError, check_record_mode
from tests.scenarios.conftest import ROOT, CopyCase


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("doc", ["README.md", "scenarios/README.md"])
def test_the_docs_state_the_rule_in_its_words(doc: str) -> None:
    assert flat(CI_RULE) in flat((ROOT / doc).read_text(encoding="utf-8"))


def test_the_cli_help_and_the_plugins_refusal_state_it() -> None:
    result = CliRunner().invoke(app, ["scenario", "record", "--help"], env={"COLUMNS": "200"})
    assert flat(CI_RULE) in flat(result.output)
    with pytest.raises(RecordModeError) as refused:
        check_record_mode("once", environ={"CI": "true"})
    assert flat(CI_RULE) in flat(str(refused.value))
    assert check_record_mode("none", environ={"CI": "true"}) == "none"


def test_in_ci_the_simulator_records_and_a_real_api_is_refused(
    copy_case: CopyCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_case("providers", providers=())
    monkeypatch.chdir(folder.parent)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-0123456789")
    runner = CliRunner()

    real = runner.invoke(app, ["scenario", "record", "providers", "--provider", "openai"])
    assert real.exit_code == 2
    assert "refusing to record against a real provider in CI" in real.output
    assert not (folder.parent / "cassettes").exists()

    simulated = runner.invoke(
        app, ["scenario", "record", "providers", "--provider", "openai", "--sim"]
    )
    assert simulated.exit_code == 0, simulated.output
    assert (folder.parent / "cassettes" / "openai" / "providers.yaml").is_file()
