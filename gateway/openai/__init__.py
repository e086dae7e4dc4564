"""OpenAI Chat Completions: request builder and stream translator."""

from __future__ import annotations

from navagent.gateway.openai.request import build_request
from navagent.gateway.openai.stream import OpenAIStreamTranslator, error_from_response

Translator = OpenAIStreamTranslator
"""The stream translator class, under the name `navagent.gateway.protocols` loads."""

__all__ = ["OpenAIStreamTranslator", "Translator", "build_request", "error_from_response"]
