"""Anthropic Messages: request builder and stream translator."""

from __future__ import annotations

from navagent.gateway.anthropic.request import build_request
from navagent.gateway.anthropic.stream import AnthropicStreamTranslator, error_from_response

Translator = AnthropicStreamTranslator
"""The stream translator class, under the name `navagent.gateway.protocols` loads."""

__all__ = ["AnthropicStreamTranslator", "Translator", "build_request", "error_from_response"]
