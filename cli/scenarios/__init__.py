"""The replay harness: scenario files, cassettes, replay and record.

A scenario (`scenarios/<id>.yaml`) is one multi-turn conversation with its
expectations; a cassette (`cassettes/<provider>/<id>.yaml`) is what a
provider answered when it was recorded. A replay runs the real agent loop
against the real gateway, in process, with vcrpy playing the cassette and
nav-sim as the cluster, and checks the expectations. `nav scenario` is the
command line over this package; the tests call the same entry points.

    discover_scenarios / load_scenario   YAML -> Scenario (errors name file, line, path)
    plan_replays -> replay_all           scenario x provider -> ReplayResult
    record_scenario                      write a cassette (--sim or a real API)
    scan_file / scan_files               find anything that looks like a key
"""

from __future__ import annotations

from navagent.cli.scenarios._cassette import (
    CassetteError,
    CassetteSource,
    LoadedCassette,
    cassette_path,
    load_cassette,
    make_vcr,
)
from navagent.cli.scenarios._cluster import (
    SCENARIO_CLOCK,
    ClusterError,
    ClusterRun,
    SimulatedCluster,
    find_nav_sim,
)
from navagent.cli.scenarios._keyscan import KeyFinding, scan_file, scan_files, scan_text
from navagent.cli.scenarios._loader import (
    ScenarioError,
    discover_scenarios,
    load_scenario,
    parse_scenario,
)
from navagent.cli.scenarios._matching import RequestMismatch, RequestShape, compare_requests
from navagent.cli.scenarios._model import PROVIDERS, Provider, Scenario, Turn, TurnExpect
from navagent.cli.scenarios._recorder import (
    RecordError,
    RecordResult,
    RecordTarget,
    real_target,
    record_scenario,
    simulated_target,
)
from navagent.cli.scenarios._runner import (
    ReplayJob,
    ReplayResult,
    default_cassette_dir,
    plan_replays,
    replay_all,
    replay_scenario,
)
from navagent.cli.scenarios._transcript import Transcript, TranscriptTurn

__all__ = [
    "PROVIDERS",
    "SCENARIO_CLOCK",
    "CassetteError",
    "CassetteSource",
    "ClusterError",
    "ClusterRun",
    "KeyFinding",
    "LoadedCassette",
    "Provider",
    "RecordError",
    "RecordResult",
    "RecordTarget",
    "ReplayJob",
    "ReplayResult",
    "RequestMismatch",
    "RequestShape",
    "Scenario",
    "ScenarioError",
    "SimulatedCluster",
    "Transcript",
    "TranscriptTurn",
    "Turn",
    "TurnExpect",
    "cassette_path",
    "compare_requests",
    "default_cassette_dir",
    "discover_scenarios",
    "find_nav_sim",
    "load_cassette",
    "load_scenario",
    "make_vcr",
    "parse_scenario",
    "plan_replays",
    "real_target",
    "record_scenario",
    "replay_all",
    "replay_scenario",
    "scan_file",
    "scan_files",
    "scan_text",
    "simulated_target",
]
