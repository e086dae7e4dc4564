"""OpenAI Responses: request builder and stream translator."""

from __future__ import annotations

from navagent.gateway.openai_responses.request import build_request, is_reasoning_model
from navagent.gateway.openai_responses.stream import (
    ResponsesStreamTranslator,
    error_from_response,
)

Translator = ResponsesStreamTranslator
"""The stream translator class, under the name `navagent.gateway.protocols` loads."""

__all__ = [
    "ResponsesStreamTranslator",
    "Translator",
    "build_request",
    "error_from_response",
    "is_reasoning_model",
]
