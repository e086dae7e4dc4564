"""No secret reaches a written file: recordings, captures, sessions.db, exports (issue 27 §1).

The class under test: whatever a credential looks like (every kind the one
redaction path detects, `secret_kinds.planted_secrets`), and wherever it
comes from (a tool's output, the model's answer streamed in pieces, a
provider's response header, a route endpoint's password), no file nav-agent
writes holds it: not the scenario, the provider or tool cassette, the
capture under `recordings/`, `sessions.db`, nor an exported transcript. The
scan refuses, with file, line and kind, what the redaction would have masked.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navagent.core.redaction import (
    REDACTED,
    REDACTED_IN_URL,
    RedactingFormatter,
    find_secrets,
    redact,
    redact_many,
    redact_pieces,
)
from navagent.core.wire_formats import FORMAT_IDS
from navagent.fixtures.harness import load_scenario, scan_text
from navagent.fixtures.harness.cassettes._body_redaction import redact_sse
from navagent.fixtures.harness.cassettes._wire import CassetteTransport
from navagent.fixtures.harness.record._capture import SessionCapture
from navagent.fixtures.harness.record._recorder import RecordTarget
from navagent.fixtures.harness.record._recorder import _source as recorder_source
from navagent.fixtures.nav_sim._seed import log_line
from navagent.fixtures.provider import SimulatedProvider
from navagent.fixtures.provider.wire._kit import kit_for
from tests.cli.harness import run_nav
from tests.scenarios.conftest import SCENARIOS
from tests.scenarios.secret_kinds import Planted, planted_secrets

KINDS = planted_secrets(random.Random(27))
KIND_IDS = [f"{index}-{planted.kind}" for index, planted in enumerate(KINDS)]
_FILLER = st.text(alphabet=st.sampled_from("abc XYZ 019 .:,;()[]{}\"'\n\t-_/é"), max_size=40)


def _leaks(text: str, planted: Planted) -> list[str]:
    return [part for part in planted.parts if part in text]


# --- the detector: every kind, anywhere in a text, in any pieces ----------------


@pytest.mark.parametrize("planted", KINDS, ids=KIND_IDS)
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_FILLER, after=_FILLER)
def test_every_kind_is_redacted_whole_at_any_offset(
    planted: Planted, before: str, after: str
) -> None:
    text = f"{before} {planted.text}\n{after}"
    redacted = redact(text)
    assert _leaks(redacted, planted) == []
    assert REDACTED in redacted or REDACTED_IN_URL in redacted
    assert redact(redacted) == redacted  # twice changes nothing: a recording stays replayable


@pytest.mark.parametrize("planted", [p for p in KINDS if p.multiline], ids=lambda p: p.text[:40])
def test_a_key_block_goes_from_begin_to_end_and_an_unterminated_one_to_the_end(
    planted: Planted,
) -> None:
    redacted = redact(f"kept before\n{planted.text}\nkept after")
    assert redacted == f"kept before\n{REDACTED}\nkept after"
    cut = planted.text.rsplit("\n", 2)[0]  # no END line: everything after BEGIN is key
    assert redact(f"kept before\n{cut}\nmore key?") == f"kept before\n{REDACTED}"


@pytest.mark.parametrize("planted", KINDS, ids=KIND_IDS)
def test_the_scan_names_file_line_and_kind_without_repeating_the_secret(planted: Planted) -> None:
    first_line = planted.text.split("\n")[0]
    text = f"interactions:\n- note: |\n    logs say {first_line} here\n"
    (finding,) = scan_text(text, source="cassettes/tools/x.yaml")
    assert (finding.source, finding.line, finding.kind) == (
        "cassettes/tools/x.yaml",
        3,
        planted.kind,
    )
    assert all(part not in str(finding) for part in planted.parts if len(part) > 7)


@settings(max_examples=60)
@given(
    data=st.data(),
    index=st.integers(min_value=0, max_value=len(KINDS) - 1),
    before=_FILLER,
)
def test_a_secret_split_across_streamed_pieces_is_masked_as_the_whole_text(
    data: st.DataObject, index: int, before: str
) -> None:
    planted = KINDS[index]
    text = f"{before} {planted.text} done"
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]

    redacted = redact_pieces(pieces)

    assert len(redacted) == len(pieces)
    assert "".join(redacted) == redact(text)
    # The same through an SSE stream (OpenAI chat deltas), as a cassette holds it.
    events = "".join(
        "data: "
        + json.dumps({"id": "c1", "choices": [{"index": 0, "delta": {"content": piece}}]})
        + "\n\n"
        for piece in pieces
    )
    stream = redact_sse(events + "data: [DONE]\n\n")
    assert stream.count("\n\n") == len(pieces) + 1  # as many events as were sent
    assert _leaks(stream, planted) == []
    said = "".join(
        json.loads(line[6:])["choices"][0]["delta"]["content"]
        for line in stream.splitlines()
        if line.startswith("data: {")
    )
    assert said == redact(text)


@pytest.mark.parametrize("format_id", FORMAT_IDS)
def test_a_secret_split_across_two_stream_events_is_masked_in_every_wire_format(
    format_id: str,
) -> None:
    """Issue 39: only paths under `delta` were joined; Gemini streams `parts[].text`.

    The registry row says where a format's streamed text lives; every kind,
    cut in half between two events of the format's own stream, is masked.
    """
    kit = kit_for(format_id)
    for planted in (p for p in KINDS if not p.multiline):
        text = f"the logs say {planted.text} there"
        cut = len("the logs say ") + len(planted.text) // 2
        halves = (text[:cut], text[cut:])
        body = b"".join(kit.text(halves).events).decode("utf-8")

        redacted = redact_sse(body)

        assert _leaks(redacted, planted) == [], planted.kind
        for part in planted.parts:
            head, tail = part[: len(part) // 2], part[len(part) // 2 :]
            assert [h for h in (head, tail) if len(h) >= 8 and h in redacted] == [], planted.kind
        assert redacted.count("[redacted]") + redacted.count(REDACTED_IN_URL) >= 1


@settings(max_examples=60)
@given(
    texts=st.lists(
        st.one_of(
            _FILLER,
            st.sampled_from([p.text for p in KINDS]),
            st.sampled_from([p.text.split("\n")[0] for p in KINDS]),  # a key block's header
            st.sampled_from(
                ["DB_PASSWORD=", "password: ", "Bearer ", "-----END RSA PRIVATE KEY-----"]
            ),
        ),
        max_size=12,
    )
)
def test_many_texts_searched_at_once_are_redacted_each_as_on_its_own(texts: list[str]) -> None:
    """A JSON document's strings are searched in one pass; no finding crosses two of them."""
    assert redact_many(texts) == [redact(text) for text in texts]


# --- headers and URIs of recorded traffic -----------------------------------------


async def test_headers_uri_and_bodies_of_recorded_traffic_are_redacted(tmp_path: Path) -> None:
    jwt = next(p for p in KINDS if p.kind == "a JSON Web Token").text
    route = next(p for p in KINDS if p.text.startswith("https://ops:"))
    answer = " ".join(p.text for p in KINDS)

    def provider(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "application/json", "x-request-id": jwt},
            json={"echo": request.content.decode(), "answer": answer},
        )

    transport = CassetteTransport(httpx.MockTransport(provider))
    capture = SessionCapture(
        tmp_path / "recordings",
        kind="real",
        cluster="prod",
        routes=[],
        transport=transport,
        secrets=[],
        max_iterations=5,
        compaction=None,
        confirmation="ask",
    )
    await capture.begin()
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(
            route.text.rstrip("/") + "/v1/chat/completions",
            headers={"content-type": "application/json", "accept": jwt},
            json={"model": "m", "messages": [{"role": "user", "content": answer}]},
        )
        assert response.status_code == 200
    await capture.end()

    written = _all_written(tmp_path)
    assert "provider.yaml" in {path.name for path in written}
    _assert_nothing_leaks(written, KINDS)


# --- the whole path, as a user runs it ----------------------------------------------


def _all_written(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and not path.is_symlink()]


def _assert_nothing_leaks(paths: list[Path], planted: list[Planted]) -> None:
    leaks = []
    for path in paths:
        data = path.read_bytes()
        for secret in planted:
            for part in secret.parts:
                for form in {part, json.dumps(part)[1:-1]}:  # as written, or JSON-escaped
                    if form.encode() in data:
                        leaks.append(f"{path}: {secret.kind}: {part[:6]}...")
    assert leaks == []


def _seed_cluster(state: Path, env: dict[str, str], nav_sim: str, lines: list[str]) -> None:
    """nav-sim's demo cluster, with `lines` as gpu-trainer's last ERROR log lines."""
    subprocess.run(
        [nav_sim, "--cluster", "demo", "sandbox", "list"], env=env, check=True, capture_output=True
    )
    data = json.loads(state.read_text("utf-8"))
    sandbox = next(s for s in data["clusters"]["demo"]["sandboxes"] if s["name"] == "gpu-trainer")
    last = sandbox["logs"][-1]["ts_ms"]
    for offset, text in enumerate(lines, start=1):
        sandbox["logs"].append(log_line(last + offset, "gateway", "ERROR", "sandbox", text))
    state.write_text(json.dumps(data), "utf-8")


@pytest.mark.slow
def test_a_recorded_session_writes_no_secret_anywhere(tmp_path: Path) -> None:
    """Tool output, the streamed answer and the route endpoint carry secrets; none is written."""
    nav_sim = str(Path(sys.executable).with_name("nav-sim"))
    nav_sim = nav_sim if Path(nav_sim).exists() else shutil.which("nav-sim") or "nav-sim"
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NAV_", "XDG_"))}
    env |= {
        "HOME": str(home),
        "NAV_AGENT_STATE_DIR": str(home / "state"),
        "NAV_SIM_STATE": str(home / "cluster.json"),
        "NAV_AGENT_CLI": nav_sim,
        "NO_COLOR": "1",
    }
    one_line = [p for p in KINDS if not p.multiline]
    blocks = [p for p in KINDS if p.multiline]
    # Every block in the tool output; every one-line kind in the last ERROR line,
    # which the simulated model quotes in its (streamed) answer.
    _seed_cluster(
        home / "cluster.json",
        env,
        nav_sim,
        [*(p.text for p in blocks), " ".join(p.text for p in one_line)],
    )
    route = next(p for p in KINDS if p.text.startswith("https://ops:"))
    password = route.parts[0]
    with SimulatedProvider(pacing_ms=0) as provider:
        endpoint = provider.base_url.replace("http://", f"http://ops:{password}@")
        routes = home / "routes.yaml"
        routes.write_text(
            "routes:\n  - routing_hint: agent\n"
            f"    endpoint: {endpoint}\n    model: sim-model\n"
            "    protocols: [anthropic_messages]\n    api_key: sim-key-not-secret\n",
            "utf-8",
        )
        run = run_nav(
            "agent", "--routes", str(routes), "--cluster", "demo", "--record", "leak-check",
            env=env, cwd=project, timeout=120,
            stdin="why is gpu-trainer failing? show its logs\n",
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "recorded scenarios/leak-check.yaml" in run.stderr, run.stderr
    (database,) = (home / "state").rglob("sessions.db")
    with sqlite3.connect(database) as db:
        (session_id,) = db.execute("SELECT id FROM sessions").fetchone()
    # `sessions export` and the REPL's `/export` write the same transcripts.
    for form in ("--json", "--no-json"):
        exported = run_nav(
            "agent", "sessions", "export", session_id, *([form] if form == "--json" else []),
            "-o", str(project / f"session{form}.out"), env=env, cwd=project,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr
    written = _all_written(project) + _all_written(home / "state")
    names = {path.name for path in written}
    assert {"leak-check.yaml", "turns.jsonl", "tools.jsonl", "provider.yaml"} <= names, names
    assert {"sessions.db", "session--json.out", "session--no-json.out"} <= names, names
    _assert_nothing_leaks(written, KINDS)
    # The secrets were there to leak: the answer quoted them, the endpoint carried one.
    scenario = (project / "scenarios" / "leak-check.yaml").read_text("utf-8")
    assert "its logs say why: `[redacted]" in scenario
    cassette = (project / "cassettes" / "anthropic" / "leak-check.yaml").read_text("utf-8")
    assert f"endpoint: http://ops:{REDACTED_IN_URL}@127.0.0.1" in cassette
    # The request itself went without them (as Basic auth, which is never kept).
    assert "uri: http://127.0.0.1" in cassette and "uri: http://ops" not in cassette
    assert REDACTED in (project / "session--no-json.out").read_text("utf-8")
    # What was found in the answer is still said, redacted: the replay matched it.
    assert not find_secrets((project / "scenarios" / "leak-check.yaml").read_text("utf-8"))


def test_a_log_line_is_redacted_whole_before_it_is_escaped_and_cut() -> None:
    """Logs take the same path: a key block spanning lines, a URL password, any kind."""
    block = next(p for p in KINDS if p.multiline)
    url = next(p for p in KINDS if p.kind == "a password in a URL")
    message = f"upstream said: {block.text}\nthen {url.text} and " + " ".join(
        p.text for p in KINDS if not p.multiline
    )
    record = logging.LogRecord("nav", logging.WARNING, __file__, 1, message, None, None)

    line = RedactingFormatter("%(message)s", max_chars=100_000).format(record)

    assert "\n" not in line and REDACTED in line
    assert _leaks(line, block) == [] and _leaks(line, url) == []
    assert all(_leaks(line, planted) == [] for planted in KINDS)


def test_a_recorded_cassette_names_its_endpoint_without_the_password() -> None:
    """`nav scenario record --endpoint https://user:pass@host`: metadata and note are masked."""
    url = next(p for p in KINDS if p.text.startswith("https://ops:"))
    scenario = load_scenario(SCENARIOS / "providers.yaml")
    target = RecordTarget(kind="real", endpoint=url.text, model="m", api_key="k")

    source = recorder_source(scenario, "openai", target, "m", "2026-11-26")

    assert _leaks(source.model_dump_json(), url) == []
    assert source.endpoint == f"https://ops:{REDACTED_IN_URL}@example.invalid/"
    assert REDACTED_IN_URL in source.note
