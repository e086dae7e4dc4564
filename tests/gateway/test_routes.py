"""Loading and resolving inference routes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from navagent.gateway.routes import RoutesError, load_routes, normalize_protocols, parse_routes

SECRET = "sk-test-routes-0123456789abcdef"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "routes.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_routes_resolves_env_key_and_normalises_protocols(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
routes:
  - routing_hint: agent
    endpoint: https://api.anthropic.com/v1
    model: claude-sonnet-4-5
    protocols: [" Anthropic_Messages ", anthropic_messages, "", openai_chat_completions]
    api_key_env: TEST_KEY
    unknown_key: ignored
""",
    )
    table = load_routes(path, environ={"TEST_KEY": SECRET})
    (route,) = table.routes
    assert route.protocols == ("anthropic_messages", "openai_chat_completions")
    assert route.chat_protocol == "openai_chat_completions"  # preferred, as Navigator does
    assert route.api_key.get_secret_value() == SECRET
    assert route.name == "agent#1"
    assert SECRET not in repr(route) and SECRET not in repr(table.routes)


def test_literal_api_key_wins_over_env(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "routes:\n- {routing_hint: a, endpoint: 'http://x', model: m,"
        " protocols: [anthropic_messages], api_key: literal, api_key_env: UNSET_VAR}\n",
    )
    (route,) = load_routes(path, environ={}).routes
    assert route.api_key.get_secret_value() == "literal"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("routes: 3\n", "expected a mapping with a `routes:` list"),
        ("routes:\n- 7\n", "route 1: expected a mapping, got int"),
        (
            "routes:\n- {routing_hint: agent, model: m, protocols: [x], api_key: k}\n",
            "route 1 ('agent'): missing required field 'endpoint'",
        ),
        (
            "routes:\n- {routing_hint: agent, endpoint: 'ftp://h', model: m, protocols: [x], "
            "api_key: k}\n",
            "route 1 ('agent'): field 'endpoint': must be an http:// or https:// URL",
        ),
        (
            "routes:\n- {routing_hint: agent, endpoint: 'http://h', model: '  ', protocols: [x], "
            "api_key: k}\n",
            "field 'model': must not be blank",
        ),
        (
            "routes:\n- {routing_hint: a, endpoint: 'http://h', model: m, protocols: [' '], "
            "api_key: k}\n",
            "route 1 ('a'): field 'protocols': at least one protocol is required",
        ),
        (
            "routes:\n- {routing_hint: a, endpoint: 'http://h', model: m, protocols: [x]}\n",
            "route 1 ('a'): has neither 'api_key' nor 'api_key_env'",
        ),
        (
            "routes:\n- {routing_hint: a, endpoint: 'http://h', model: m, protocols: [x], "
            "api_key: k}\n- {routing_hint: b, endpoint: 'http://h', model: m, protocols: [x], "
            "api_key_env: NAV_TEST_MISSING_VAR}\n",
            "route 2 ('b'): field 'api_key_env': "
            "environment variable NAV_TEST_MISSING_VAR is not set",
        ),
        ("routes: [\n", "not valid YAML at line 2"),
    ],
    ids=[
        "routes-not-list",
        "entry-not-mapping",
        "missing-endpoint",
        "bad-scheme",
        "blank-model",
        "no-protocols",
        "no-key",
        "missing-env-var",
        "bad-yaml",
    ],
)
def test_bad_routes_file_names_file_route_and_field(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = write(tmp_path, body)
    with pytest.raises(RoutesError) as info:
        load_routes(path, environ={})
    assert str(info.value).startswith(str(path))
    assert expected in str(info.value)


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(RoutesError, match="cannot read routes file .*missing.yaml"):
        load_routes(tmp_path / "missing.yaml")


def test_candidates_filter_by_hint_enabled_and_chat_protocol() -> None:
    def entry(hint: str, protocols: list[str], **extra: object) -> dict[str, object]:
        return {
            "routing_hint": hint,
            "endpoint": "http://h",
            "model": "m",
            "protocols": protocols,
            "api_key": "k",
            **extra,
        }

    table = parse_routes(
        {
            "routes": [
                entry("agent", ["openai_responses"], name="responses-only"),
                entry("agent", ["anthropic_messages"], name="first"),
                entry("agent", ["openai_chat_completions"], name="off", enabled=False),
                entry("other", ["openai_chat_completions"], name="other"),
                entry("agent", ["openai_chat_completions"], name="second"),
                entry("dormant", ["openai_chat_completions"], name="dormant", enabled=False),
                entry("embed", ["embeddings"], name="embed"),
            ]
        },
        source="inline",
    )
    # What ListRoutingHints offers: hints that candidates() would serve.
    assert table.chat_hints() == ["agent", "other"]
    expected = ["responses-only", "first", "second"]
    assert [r.name for r in table.candidates("agent")] == expected
    assert [r.name for r in table.candidates("")] == expected  # empty means agent
    assert table.candidates("nope") == []
    message = table.no_route_message("nope")
    assert (
        "'nope'" in message
        and "routing_hint: nope" in message
        and "agent, dormant, embed, other" in message
    )


@pytest.mark.parametrize(
    ("protocols", "chosen"),
    [
        (["openai_responses", "openai_chat_completions"], "openai_responses"),
        (["openai_chat_completions", "openai_responses"], "openai_chat_completions"),
        (["anthropic_messages", "openai_responses"], "openai_responses"),
        (["anthropic_messages", "embeddings"], "anthropic_messages"),
        (["embeddings"], None),
    ],
)
def test_chat_protocol_prefers_openai_and_the_route_order_between_the_two(
    protocols: list[str], chosen: str | None
) -> None:
    table = parse_routes(
        {
            "routes": [
                {
                    "routing_hint": "agent",
                    "endpoint": "http://h",
                    "model": "m",
                    "protocols": protocols,
                    "api_key": "k",
                }
            ]
        },
        source="inline",
    )
    assert table.routes[0].chat_protocol == chosen


@given(st.lists(st.text(max_size=12), max_size=8))
def test_normalize_protocols_is_idempotent_and_clean(names: list[str]) -> None:
    once = normalize_protocols(names)
    assert normalize_protocols(once) == once
    assert len(set(once)) == len(once)
    assert all(p and p == p.strip() and not any("A" <= c <= "Z" for c in p) for p in once)


def test_route_options_for_openai_compatible_servers() -> None:
    # Issue 23: what a stream does not reveal, the route says.
    base = {"routing_hint": "agent", "endpoint": "https://api.deepseek.com", "api_key": SECRET}
    table = parse_routes(
        {
            "routes": [
                {**base, "model": "deepseek-v4-pro", "protocols": ["openai_chat_completions"],
                 "reasoning_echo": "reasoning_content", "think_tags": "split"},
                {**base, "model": "deepseek-reasoner", "protocols": ["openai_chat_completions"]},
                {**base, "model": "claude", "protocols": ["anthropic_messages"],
                 "think_tags": "split"},
            ]
        },
        source="r.yaml",
    )  # fmt: skip
    v4, reasoner, claude = (route.options for route in table.routes)
    assert (v4.reasoning_echo, v4.think_tags) == ("reasoning_content", "split")
    assert (reasoner.reasoning_echo, reasoner.think_tags) == ("reasoning_details", "keep")
    assert claude.think_tags == "split"
    assert table.warnings == (
        "r.yaml: route 3 ('agent'): 'think_tags' applies to openai_chat_completions only; "
        "this route speaks anthropic_messages, so it is ignored",
    )


@pytest.mark.parametrize(
    ("key", "value"), [("reasoning_echo", "reasoning"), ("think_tags", "strip")]
)
def test_route_option_with_an_unknown_value_names_the_field(key: str, value: str) -> None:
    entry = {
        "routing_hint": "agent",
        "endpoint": "https://api.deepseek.com",
        "model": "m",
        "protocols": ["openai_chat_completions"],
        "api_key": SECRET,
        key: value,
    }
    with pytest.raises(RoutesError, match=f"route 1 .*field '{key}': Input should be"):
        parse_routes({"routes": [entry]}, source="r.yaml")
