"""Google Gemini `streamGenerateContent`: request builder and stream translator."""

from __future__ import annotations

from navagent.gateway.gemini.request import build_request
from navagent.gateway.gemini.stream import GeminiStreamTranslator, error_from_response

Translator = GeminiStreamTranslator
"""The stream translator class, under the name `navagent.gateway.protocols` loads."""

__all__ = ["GeminiStreamTranslator", "Translator", "build_request", "error_from_response"]
