"""The interface the gateway service builds on: `PROTOCOLS` and its members."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from navagent.core.events import MessageComplete, StreamError, TurnEnd
from navagent.core.messages import ChatRequest, UserMessage
from navagent.core.wire_formats import ROUTE_PROTOCOLS, WIRE_FORMATS, WireFormat
from navagent.fixtures.provider.wire._kit import kit_for
from navagent.gateway import protocols
from navagent.gateway.protocols import PROTOCOLS, ChatProtocol, UpstreamRequest
from navagent.gateway.sse import SSEDecoder
from tests.gateway.streams import FAKE_KEY


def row_of(protocol: str) -> WireFormat:
    """The first registry row speaking `protocol` (flavours share its gateway package)."""
    return next(row for row in WIRE_FORMATS.values() if row.protocol == protocol)


def test_protocols_names() -> None:
    assert sorted(PROTOCOLS) == sorted(ROUTE_PROTOCOLS)
    assert all(protocol.name == name for name, protocol in PROTOCOLS.items())


def test_protocols_registry_is_read_only() -> None:
    first, second = ROUTE_PROTOCOLS[:2]
    with pytest.raises(TypeError):
        PROTOCOLS["other"] = PROTOCOLS[first]  # type: ignore[index]
    with pytest.raises(FrozenInstanceError):
        PROTOCOLS[first].name = second  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_protocol_drives_a_whole_stream_the_documented_way(name: str) -> None:
    protocol: ChatProtocol = PROTOCOLS[name]
    upstream = protocol.build_request(
        ChatRequest(messages=(UserMessage(content="hi"),)),
        endpoint="http://localhost:1",
        model="m",
        api_key=FAKE_KEY,
    )
    row = row_of(name)
    # Streaming is asked for where the row says: in the URL, or with the body's flag.
    if row.stream_query:
        assert upstream.url.endswith("?" + row.stream_query) and "stream" not in upstream.body
    else:
        assert upstream.body["stream"] is True
    assert (row.model_in_path and "/m:" in upstream.url) or upstream.body.get("model") == "m"
    decoder, translator = SSEDecoder(), protocol.new_translator()
    events = []
    body = kit_for(row.id).sample("text")
    for start in range(0, len(body), 4096):
        for sse in decoder.feed(body[start : start + 4096]):
            events += translator.handle(sse)
        if translator.done:
            break
    decoder.finish()
    events += translator.finish()
    assert isinstance(events[-2], TurnEnd) and isinstance(events[-1], MessageComplete)


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_protocol_translators_are_independent(name: str) -> None:
    first, second = PROTOCOLS[name].new_translator(), PROTOCOLS[name].new_translator()
    assert first is not second
    (error,) = first.finish()
    assert isinstance(error, StreamError) and first.done and not second.done


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_protocol_empty_body_is_a_truncated_stream(name: str) -> None:
    translator = PROTOCOLS[name].new_translator()
    (event,) = translator.finish()
    assert isinstance(event, StreamError)
    assert event.error.message.endswith(f"before {type(translator).terminator}")  # type: ignore[attr-defined]
    assert event.error.retryable


def test_upstream_request_repr_hides_headers() -> None:
    request = UpstreamRequest(url="u", headers={"x-api-key": FAKE_KEY}, body={"a": 1})
    assert FAKE_KEY not in repr(request) and "x-api-key" not in repr(request)


@pytest.mark.parametrize(
    "module",
    [
        "navagent.gateway.sse",
        "navagent.gateway.protocols",
        "navagent.gateway.errors",
        "navagent.gateway._parts",
        "navagent.gateway._translator",
        "navagent.gateway._types",
        "navagent.gateway._urls",
        "navagent.gateway._origin",
        *(
            f"{row.gateway}{module}"
            for row in WIRE_FORMATS.values()
            for module in ("", ".wire", ".request", ".stream")
        ),
    ],
)
def test_gateway_module_exports_are_sorted_and_defined(module: str) -> None:
    loaded = importlib.import_module(module)
    exported = loaded.__all__
    assert exported == sorted(exported)
    assert all(hasattr(loaded, name) for name in exported)
    public = {
        name
        for name, value in vars(loaded).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "") == loaded.__name__
    }
    assert public <= set(exported), public - set(exported)


def test_gateway_never_imports_the_sdks() -> None:
    source = "\n".join(
        path.read_text(encoding="utf-8") for path in Path(protocols.__file__).parent.rglob("*.py")
    )
    for line in source.splitlines():
        stripped = line.strip()
        assert not stripped.startswith(("import openai", "import anthropic", "import httpx2"))
        assert not stripped.startswith(("from openai", "from anthropic", "from httpx2"))
        assert not stripped.startswith(("import google.genai", "from google import genai"))


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_translator_for_stamps_the_route_origin(name: str) -> None:
    protocol = PROTOCOLS[name]
    key, other_key = "org-a-test-key", "org-b-test-key"
    one = protocol.translator_for(endpoint="https://api.openai.com/v1/", model="gpt-5", api_key=key)
    same = protocol.translator_for(endpoint="https://api.openai.com", model="gpt-5", api_key=key)
    other = protocol.translator_for(
        endpoint="https://x.openai.azure.com", model="gpt-5", api_key=key
    )
    # One endpoint and model behind another organisation's key: another origin.
    other_org = protocol.translator_for(
        endpoint="https://api.openai.com", model="gpt-5", api_key=other_key
    )
    origins = [t._origin for t in (one, same, other, other_org)]  # type: ignore[attr-defined]
    assert origins[0] == origins[1] != origins[2]
    assert origins[3] not in (origins[0], origins[2])
    assert origins[0].startswith(f"{name}:") and "openai.com" not in origins[0]
    assert all(key not in origin and other_key not in origin for origin in origins)
