"""What the recordings keep of a credential cut in the middle (`redact(..., cut=True)`).

A recorded body that did not reach its end (it stalled, broke, or its read
was abandoned) and a captured turn the user cancelled mid-answer both stop
wherever the cut fell: inside a credential, its first part is masked too.
"""

from __future__ import annotations

from typing import Any

from navagent.core.redaction import REDACTED
from navagent.fixtures.harness.cassettes._cassette import make_vcr
from navagent.fixtures.harness.record import _capture as capture_module
from navagent.fixtures.harness.scenarios._transcript import TextStep, TranscriptTurn

HALF = "ghp_" + "AbCd1234EfGh"  # a GitHub token's first 16 of 40 characters


def _answer_body(*texts: str) -> bytes:
    return "".join(
        'data: {"choices":[{"index":0,"delta":{"content":' + f'"{text}"' + "}}]}\n\n"
        for text in texts
    ).encode()


def _recorded(response: dict[str, Any]) -> bytes:
    hook = make_vcr(record=True).before_record_response
    body: bytes = hook(response)["body"]["string"]
    return body


def _response(body: bytes, **end: Any) -> dict[str, Any]:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {},
        "body": {"string": body},
        **end,
    }


def test_a_body_that_did_not_end_keeps_no_first_part_of_a_credential() -> None:
    body = _answer_body("Here it is: ", HALF[:8], HALF[8:])
    assert HALF[8:].encode() not in _recorded(_response(body, end="silent"))
    broken = {"error": "ReadError", "message": "connection reset"}
    assert HALF[8:].encode() not in _recorded(_response(body, end=broken))
    # A body that ended: what it ends with is not a cut (and these 16 characters are no token).
    assert HALF[8:].encode() in _recorded(_response(body))


def _turn(finish: str, text: str) -> dict[str, Any]:
    transcript = TranscriptTurn(user="my token?", steps=(TextStep(text=text),), finish=finish)
    return {"transcript": transcript.model_dump(mode="json")}


def test_a_cancelled_turns_answer_is_captured_without_its_cut_credential() -> None:
    masked = capture_module._cut_end_masked(_turn("cancelled", "Your token: " + HALF))
    assert masked["transcript"]["steps"][-1]["text"] == "Your token: " + REDACTED
    answered = capture_module._cut_end_masked(_turn("answered", "Your token: " + HALF))
    assert answered["transcript"]["steps"][-1]["text"] == "Your token: " + HALF
