"""Recording cassettes: reproducible from the simulator, keys scrubbed, bad runs not kept.

Real-API recording cannot run here (no network, no keys): the "real" tests
point the real-endpoint path at a simulated provider on localhost with a
fake key, which exercises everything but the remote host.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from navagent.core.wire_formats import FORMAT_IDS, wire_format
from navagent.fixtures.harness import (
    RecordError,
    SimulatedCluster,
    load_cassette,
    load_scenario,
    parse_scenario,
    real_target,
    record_scenario,
    replay_scenario,
    scan_file,
    simulated_target,
)
from navagent.fixtures.harness.cassettes._cassette import keep_earlier_build
from navagent.fixtures.provider import SimulatedProvider
from tests.scenarios.conftest import CASSETTES, SCENARIOS, without_recorder


def fake_key(variable: str) -> str:
    """A fake key for a key variable (`WireFormat.key_env`), no two alike, not key-shaped:
    only the recorder's own handling of the key can keep it out of the cassette."""
    return f"Fake{variable.title().replace('_', '')}0123456789"


@pytest.mark.parametrize(
    ("scenario_id", "provider"),
    [
        ("thinking-round-trip", "anthropic"),
        ("provider-error-mid-stream", "openai"),
        ("non-ascii", "anthropic"),
        ("resume-session", "openai"),
        *[
            (scenario_id, provider)
            for scenario_id in (
                "provider-reset-mid-stream",
                "provider-stall",
                "cluster-tool-timeout",
            )
            for provider in FORMAT_IDS
        ],
    ],
)
async def test_sim_recording_reproduces_the_committed_cassette_byte_for_byte(
    scenario_id, provider, tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = load_scenario(SCENARIOS / f"{scenario_id}.yaml")
    result = await record_scenario(
        scenario, provider, cassette_dir=tmp_path, target=simulated_target(), cluster=cluster
    )
    assert result.written and result.problems == ()
    committed = (CASSETTES / provider / f"{scenario_id}.yaml").read_text(encoding="utf-8")
    recorded = result.path.read_text(encoding="utf-8")
    # The one line that names the build differs between builds, and only it.
    assert f"\n  recorded_by: nav-agent {version('nav-agent')}\n" in recorded
    assert without_recorder(recorded) == without_recorder(committed)
    assert list(result.path.parent.iterdir()) == [result.path]  # no partial file left


async def test_a_recording_names_the_build_and_the_same_build_records_the_same_bytes(
    tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = load_scenario(SCENARIOS / "providers.yaml")
    paths = []
    for folder in ("first", "second"):
        result = await record_scenario(
            scenario,
            "openai",
            cassette_dir=tmp_path / folder,
            target=simulated_target(),
            cluster=cluster,
        )
        assert result.written
        paths.append(result.path)
    first, second = (path.read_bytes() for path in paths)
    assert first == second
    assert load_cassette(paths[0]).recorded_by == f"nav-agent {version('nav-agent')}"
    # A cassette written before versions came from git has no such line: it loads and replays.
    older = tmp_path / "older"
    older_path = older / paths[0].relative_to(tmp_path / "first")
    older_path.parent.mkdir(parents=True)
    older_path.write_text(without_recorder(first.decode("utf-8")), encoding="utf-8")
    assert b"recorded_by" not in older_path.read_bytes()
    assert load_cassette(older_path).recorded_by is None
    replayed = await replay_scenario(scenario, "openai", cassette_dir=older, cluster=cluster)
    assert replayed.passed, replayed.report


async def test_a_re_record_of_the_same_bytes_keeps_the_build_that_first_recorded_them(
    tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = load_scenario(SCENARIOS / "providers.yaml")

    async def record() -> Path:
        result = await record_scenario(
            scenario, "openai", cassette_dir=tmp_path, target=simulated_target(), cluster=cluster
        )
        assert result.written
        return result.path

    path = await record()
    ours = f"  recorded_by: nav-agent {version('nav-agent')}\n"
    earlier = "  recorded_by: nav-agent 0.1.1.dev3+gabc1234\n"
    path.write_text(path.read_text(encoding="utf-8").replace(ours, earlier), encoding="utf-8")
    before = path.read_bytes()

    await record()  # nothing the file holds changes: not even the build line
    assert path.read_bytes() == before

    # A change to what was recorded names the build that recorded it.
    path.write_text(
        path.read_text(encoding="utf-8").replace("nvidia", "nvidia-old", 1), encoding="utf-8"
    )
    await record()
    assert ours in path.read_text(encoding="utf-8")


def test_keep_earlier_build_touches_only_an_otherwise_identical_file() -> None:
    old = "metadata:\n  recorded_by: nav-agent 0.1\n  source: x\n"
    same = "metadata:\n  recorded_by: nav-agent 0.2\n  source: x\n"
    changed = "metadata:\n  recorded_by: nav-agent 0.2\n  source: y\n"
    assert keep_earlier_build(same, old) == old
    assert keep_earlier_build(changed, old) == changed
    assert keep_earlier_build(same, None) == same
    assert keep_earlier_build(same, "metadata:\n  source: x\n") == same  # an older file


@pytest.mark.parametrize("provider", FORMAT_IDS)
async def test_a_real_endpoint_recording_keeps_no_key_and_replays(
    provider, tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = load_scenario(SCENARIOS / "providers.yaml")
    variable = wire_format(provider).key_env
    key = fake_key(variable)
    with SimulatedProvider() as remote:
        endpoint = remote.base_url
        target = real_target(provider, endpoint=endpoint, environ={variable: key})
        result = await record_scenario(
            scenario, provider, cassette_dir=tmp_path, target=target, cluster=cluster
        )
        sent = remote.requests
    assert result.written, result.problems
    # Every request went to the endpoint, which refuses requests without a key...
    assert len(sent) == 4
    # ...and appears nowhere in what was written.
    text = result.path.read_text(encoding="utf-8")
    assert key not in text and wire_format(provider).auth_header not in text.lower()
    assert "authorization" not in text.lower() and "x-api-key" not in text
    assert scan_file(result.path, secrets=[key]) == []
    source = load_cassette(result.path).source
    assert (source.kind, source.endpoint, source.model) == (
        "real",
        endpoint,
        scenario.model_for(provider),
    )
    assert source.note.startswith(f"Recorded from the real API at {endpoint}")
    replayed = await replay_scenario(scenario, provider, cassette_dir=tmp_path, cluster=cluster)
    assert replayed.passed, replayed.problems


def test_a_real_recording_needs_the_key_from_the_environment() -> None:
    with pytest.raises(
        RecordError,
        match=r"OPENAI_API_KEY is not set: .* \(or record from the simulated provider with --sim\)",
    ):
        real_target("openai", environ={"OPENAI_API_KEY": "  "})
    target = real_target("anthropic", environ={"ANTHROPIC_API_KEY": "k"}, model="claude-x")
    assert (target.endpoint, target.model) == ("https://api.anthropic.com", "claude-x")
    assert "k" not in repr(target).replace("kind", "")


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_real_recording_refuses_to_run_in_ci(ci: str) -> None:
    with pytest.raises(RecordError, match="refusing to record against a real provider in CI"):
        real_target("openai", environ={"CI": ci, "OPENAI_API_KEY": "k"})


async def test_a_scenario_with_fault_markers_records_only_from_the_simulator(
    tmp_path: Path,
) -> None:
    scenario = load_scenario(SCENARIOS / "provider-error-mid-stream.yaml")
    target = real_target("openai", endpoint="http://127.0.0.1:9", environ={"OPENAI_API_KEY": "k"})
    with pytest.raises(
        RecordError, match=r"relies on simulator fault markers .* record it with --sim"
    ):
        await record_scenario(scenario, "openai", cassette_dir=tmp_path, target=target)
    assert not (tmp_path / "openai").exists()


SAMPLE = """\
id: sample
description: A recording whose expectation the simulated model does not meet.
turns:
  - user: What providers do I have?
    expect:
      answer:
        contains: [{word}]
"""


async def test_a_recording_that_misses_its_expectations_is_not_kept_without_force(
    tmp_path: Path, cluster: SimulatedCluster
) -> None:
    scenario = parse_scenario(SAMPLE.format(word="unicorns"), source=str(tmp_path / "sample.yaml"))
    existing = tmp_path / "openai" / "sample.yaml"
    existing.parent.mkdir()
    existing.write_text("the good old cassette\n", encoding="utf-8")

    kept = await record_scenario(
        scenario, "openai", cassette_dir=tmp_path, target=simulated_target(), cluster=cluster
    )
    assert not kept.written
    assert kept.problems == (
        "turn 1: the answer does not contain 'unicorns': 'You have 3 providers: anthropic"
        " (claude), gh (github), nvidia (nvidia).'",
    )
    assert existing.read_text(encoding="utf-8") == "the good old cassette\n"
    assert sorted(path.name for path in existing.parent.iterdir()) == ["sample.yaml"]

    forced = await record_scenario(
        scenario,
        "openai",
        cassette_dir=tmp_path,
        target=simulated_target(),
        force=True,
        cluster=cluster,
    )
    assert forced.written and forced.problems == kept.problems
    assert load_cassette(existing).source.scenario == "sample"


async def test_a_scenario_whose_turns_hold_a_key_is_not_recorded(
    tmp_path: Path, cluster: SimulatedCluster
) -> None:
    text = SAMPLE.format(word="providers").replace(
        "What providers do I have?",
        "What providers do I have? My key is sk-proj-" + "Zy9xWv8uTs7rQp6oNm5lKj4i",
    )
    scenario = parse_scenario(text, source=str(tmp_path / "sample.yaml"))
    with pytest.raises(
        RecordError,
        match=r"turns hold what looks like a key;.*\n  .*sample.yaml, turn 1:1: looks like an Op",
    ):
        await record_scenario(
            scenario, "openai", cassette_dir=tmp_path, target=simulated_target(), cluster=cluster
        )
    assert list(tmp_path.rglob("*.yaml")) == []
