"""The simulator's Gemini plug-in over HTTP: the model, streaming and the key from the URL."""

from __future__ import annotations

import json

import httpx

from navagent.fixtures.provider import SimulatedProvider

BODY = {
    "contents": [{"role": "user", "parts": [{"text": "list my sandboxes"}]}],
    "tools": [{"functionDeclarations": [{"name": "sandbox_list"}]}],
}
STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"


def test_gemini_key_in_the_query_streams_crlf_events_without_a_request_id() -> None:
    with SimulatedProvider() as sim, httpx.Client(base_url=sim.base_url) as client:
        response = client.post(f"{STREAM}?alt=sse&key=sim-key", json=BODY)
        record = sim.requests[-1]
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "request-id" not in response.headers and "x-request-id" not in response.headers
    events = response.text.split("\r\n\r\n")
    assert events[-1] == "" and all(event.startswith("data: {") for event in events[:-1])
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["modelVersion"] == "gemini-2.5-flash"
    assert (record.provider, record.model, record.stream) == ("gemini", "gemini-2.5-flash", True)


def test_gemini_generate_content_answers_whole_and_without_key_refuses_with_403() -> None:
    path = "/v1beta/models/gemini-2.0-flash:generateContent"
    with SimulatedProvider() as sim, httpx.Client(base_url=sim.base_url) as client:
        whole = client.post(path, json=BODY, headers={"x-goog-api-key": "k"})
        refused = client.post(path, json=BODY)
        thinking = client.post(
            path,
            json={**BODY, "generationConfig": {"thinkingConfig": {"includeThoughts": True}}},
            headers={"x-goog-api-key": "k"},
        )
    body = whole.json()
    (call,) = [part for part in body["candidates"][0]["content"]["parts"] if "functionCall" in part]
    assert call["functionCall"]["name"] == "sandbox_list"
    assert "thoughtSignature" not in call  # a 2.0 model does not think, so does not sign
    assert refused.status_code == 403
    assert refused.json()["error"]["status"] == "PERMISSION_DENIED"
    assert thinking.status_code == 400 and "Thinking" in thinking.json()["error"]["message"]
