"""The wire-format registry, and every layer listing exactly the registered formats.

Issue 22: a format used to be spelled in about twenty modules; a layer that
kept its own list silently missed a new format. Each test here reads one
layer's list and compares it with `WIRE_FORMATS`, so adding a row without its
plug-ins (or a plug-in without its row) fails here, naming the layer.
"""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st

from navagent.cli.agent_cmd import agent_app
from navagent.cli.demo import DemoStack
from navagent.cli.scenario_cmd import FORMAT_CHOICES, formats_chosen, scenario_app
from navagent.core.messages import ChatRequest, UserMessage
from navagent.core.wire_formats import (
    FORMAT_IDS,
    ROUTE_PROTOCOLS,
    WIRE_FORMATS,
    UnknownWireFormatError,
    formats_with,
    protocol_precedence,
    streamed_text,
    wire_format,
)
from navagent.fixtures.harness import (
    Scenario,
    ScenarioError,
    cassette_path,
    discover_scenarios,
    parse_scenario,
)
from navagent.fixtures.harness.cassettes._cassette import (
    REQUEST_HEADERS_KEPT,
    RESPONSE_HEADERS_KEPT,
)
from navagent.fixtures.provider import SimulatedProvider, simulate
from navagent.fixtures.provider.wire import _format
from navagent.fixtures.provider.wire._format import plugin_for
from navagent.fixtures.provider.wire._kit import kit_for
from navagent.gateway.protocols import PROTOCOLS
from navagent.gateway.routes import CHAT_PROTOCOLS

ROOT = Path(__file__).resolve().parents[2]
ROWS = list(WIRE_FORMATS.values())
UNREGISTERED = "no-such-format"
"""A format id no row has (the example was once `gemini`, before it had a row)."""


def _choices(app: typer.Typer, option: str, command: str | None = None) -> tuple[str, ...]:
    group: Any = typer.main.get_command(app)
    params = group.commands[command].params if command else group.params
    (param,) = [param for param in params if param.name == option]
    return tuple(param.type_descriptor.choices)


# --- the registry itself --------------------------------------------------------


def test_registry_ids_paths_and_keys_are_unique() -> None:
    assert FORMAT_IDS == tuple(row.id for row in ROWS)
    for field in ("id", "sim_path", "models_key", "cassette_folder"):
        values = [getattr(row, field) for row in ROWS]
        assert len(set(values)) == len(values), field


@pytest.mark.parametrize("row", WIRE_FORMATS.values(), ids=FORMAT_IDS)
def test_every_format_says_where_its_streamed_text_lives(row) -> None:
    """Issue 39: a recording joins a format's streamed pieces where its row says they are."""
    events = kit_for(row.id).text(("first piece", "second piece")).deltas
    pieces = []
    for event in events:
        for line in event.decode().splitlines():
            if line.startswith("data:"):
                pieces += [p for p, v in _strings(json.loads(line[5:]), ()) if "piece" in v]
    assert len(pieces) == 2 and all(streamed_text(path) for path in pieces), (row.id, pieces)


def _strings(value: Any, path: tuple[str | int, ...]):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def test_each_route_protocol_has_one_gateway_package_and_one_precedence() -> None:
    for protocol in ROUTE_PROTOCOLS:
        rows = [row for row in ROWS if row.protocol == protocol]
        assert len({row.gateway for row in rows}) == 1, protocol
        assert len({row.route_precedence for row in rows}) == 1, protocol
    assert protocol_precedence("embeddings") is None


def test_an_unknown_format_is_an_error_that_lists_the_known_ones() -> None:
    with pytest.raises(UnknownWireFormatError, match="'anthorpic'.*openai, openai-responses"):
        wire_format("anthorpic")


# --- every layer lists exactly the registered formats ------------------------------


def test_the_gateway_speaks_exactly_the_registered_route_protocols() -> None:
    assert tuple(PROTOCOLS) == ROUTE_PROTOCOLS == CHAT_PROTOCOLS
    assert all(protocol.name == name for name, protocol in PROTOCOLS.items())


@pytest.mark.parametrize("row", ROWS, ids=FORMAT_IDS)
def test_the_gateway_posts_to_the_registered_path_with_the_registered_auth_header(row) -> None:
    request = ChatRequest(messages=(UserMessage(content="hi"),))
    upstream = PROTOCOLS[row.protocol].build_request(
        request, endpoint="https://api.example", model="m", api_key="k"
    )
    url = "https://api.example" + row.request_path("m")
    assert upstream.url == (f"{url}?{row.stream_query}" if row.stream_query else url)
    assert row.auth_header in {name.lower() for name in upstream.headers}


def test_cli_choices_are_the_registered_formats() -> None:
    assert _choices(agent_app, "demo_provider") == FORMAT_IDS
    for command in ("replay", "record"):
        assert _choices(scenario_app, "provider", command) == FORMAT_CHOICES
    assert FORMAT_CHOICES == (*FORMAT_IDS, "both", "all")
    assert formats_chosen("all") == FORMAT_IDS
    assert set(formats_chosen("both")) < set(FORMAT_IDS)


def test_the_demo_refuses_an_unregistered_format_at_once() -> None:
    with pytest.raises(UnknownWireFormatError):
        DemoStack(provider=UNREGISTERED)


def test_the_simulator_answers_every_registered_format_on_its_path() -> None:
    with SimulatedProvider() as sim, httpx.Client(base_url=sim.base_url) as client:
        for row in ROWS:
            # No credentials: the format's own refusal (its kit says which), never a 404.
            status = client.post(row.sim_prefix + row.request_path("m"), content=b"{}").status_code
            assert status == kit_for(row.id).missing_key_status, row.id
        assert client.post("/v1/unknown", content=b"{}").status_code == 404
    assert [record.provider for record in sim.requests] == [*FORMAT_IDS, None]


@pytest.mark.parametrize("row", ROWS, ids=FORMAT_IDS)
def test_each_format_has_its_simulator_plugin(row) -> None:
    assert plugin_for(row.id).wire is row


def test_a_format_without_a_registry_row_cannot_be_simulated() -> None:
    # Issue 22: the shared code once answered any format it did not know as Responses.
    with pytest.raises(UnknownWireFormatError, match=UNREGISTERED):
        simulate(UNREGISTERED, {"model": "m", "input": "hi"})


def test_a_row_whose_module_has_no_plugin_fails_naming_both(monkeypatch) -> None:
    row = replace(
        WIRE_FORMATS["openai"], id="flavour", simulator="navagent.fixtures.provider.wire._ids"
    )
    monkeypatch.setattr(_format, "wire_format", lambda format_id: row)
    with pytest.raises(LookupError, match=r"_ids exports no PLUGIN for the wire format 'flavour'"):
        _format.plugin_for.__wrapped__("flavour")


SHARED_SIMULATOR_MODULES = sorted(
    str(path.relative_to(ROOT / "fixtures" / "provider"))
    for folder in ("wire", "model")
    for path in (ROOT / "fixtures" / "provider" / folder).glob("*.py")
)
"""Every module of the simulator but the format plug-ins: the pipeline and the model."""


@pytest.mark.parametrize("module", SHARED_SIMULATOR_MODULES)
def test_shared_simulator_code_names_no_format(module) -> None:
    names = {word for row in ROWS for word in (row.id, row.protocol, row.path, row.sim_path)}
    tree = ast.parse((ROOT / "fixtures" / "provider" / module).read_text(encoding="utf-8"))
    spelled = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert spelled == []


def test_cassette_and_transcript_folders_are_the_registered_formats() -> None:
    folders = {row.cassette_folder for row in ROWS}
    assert {path.name for path in (ROOT / "cassettes").iterdir() if path.is_dir()} == folders
    assert {path.name for path in (ROOT / "fixtures" / "sse").iterdir()} == set(FORMAT_IDS)
    for scenario in discover_scenarios([ROOT / "scenarios"]):
        for row in ROWS:  # every format the scenario is for has its cassette, no other
            cassette = cassette_path(ROOT / "cassettes", row.id, scenario.id)
            assert cassette.is_file() == (row.id in scenario.formats), cassette


def test_cassettes_keep_each_formats_request_id_and_version_headers() -> None:
    for row in ROWS:
        assert set(row.request_headers) <= REQUEST_HEADERS_KEPT
        assert set(row.response_headers) <= RESPONSE_HEADERS_KEPT
        assert row.auth_header not in REQUEST_HEADERS_KEPT  # a key never reaches a cassette


def _scenario(**fields: Any) -> Scenario:
    return parse_scenario(json.dumps({"id": "x", "description": "d", **fields}), source="x.yaml")


def test_scenario_files_take_every_registered_format_and_no_other() -> None:
    turns = [{"user": "hi", "expect": {"thinking": list(FORMAT_IDS), "cached": []}}]
    models = {row.models_key: f"model-{row.id}" for row in ROWS}
    scenario = _scenario(models=models, turns=turns)
    assert [scenario.model_for(row.id) for row in ROWS] == [f"model-{row.id}" for row in ROWS]
    default = _scenario(turns=turns)
    assert [default.model_for(row.id) for row in ROWS] == [row.default_model for row in ROWS]
    with pytest.raises(ScenarioError, match=f"unknown wire format '{UNREGISTERED}'"):
        _scenario(models={UNREGISTERED: "g"}, turns=turns)
    with pytest.raises(ScenarioError, match=f"unknown wire format '{UNREGISTERED}'"):
        _scenario(turns=[{"user": "hi", "expect": {"thinking": [UNREGISTERED]}}])


# --- what a row says about its API -----------------------------------------------


def test_a_row_with_the_model_in_its_path_reads_it_back() -> None:
    for row in ROWS:
        path = row.sim_prefix + row.request_path("some-model")
        assert row.match_path(path) == ("some-model" if row.model_in_path else "")
        assert row.match_path(path + "/more") is None
        others = [other for other in ROWS if other.match_path(path) is not None]
        assert others[:1] == [row], row.id


@settings(max_examples=200)
@given(model=st.text(min_size=1, max_size=40))
def test_a_model_in_the_path_never_changes_which_url_is_asked_for(model: str) -> None:
    # `../x`, `m?key=...`, `m#frag`, `a/b`: the model stays one path segment.
    for row in (row for row in ROWS if row.model_in_path):
        url = httpx.URL("https://api.example" + row.request_path(model))
        assert url.host == "api.example" and not url.query and not url.fragment
        template = httpx.URL("https://api.example" + row.request_path("m"))
        assert url.raw_path.count(b"/") == template.raw_path.count(b"/")  # as sent, encoded
        assert row.match_path(row.sim_prefix + row.request_path(model)) == model


def test_capabilities_name_formats_instead_of_lists() -> None:
    assert formats_with("reasons") == tuple(row.id for row in ROWS if row.reasons)
    assert set(formats_with("caches_prompts")) <= set(FORMAT_IDS)
    with pytest.raises(ValueError, match="unknown capability 'thinks'"):
        formats_with("thinks")
