"""OpenAI Responses: request builder and stream translator."""

from __future__ import annotations

from navagent.gateway.openai_responses.request import build_request, is_reasoning_model
from navagent.gateway.openai_responses.stream import (
    ResponsesStreamTranslator,
    error_from_response,
)

__all__ = [
    "ResponsesStreamTranslator",
    "build_request",
    "error_from_response",
    "is_reasoning_model",
]
