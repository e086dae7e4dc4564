"""Exceptions raised by nav-agent.

    NavAgentError
    ├── InvalidMessageError   a protobuf message or request that cannot be represented
    ├── ChatFailedError       a completion ended with an error event (carries ChatError)
    ├── GatewayConfigError        chat_client: unusable client options (TLS files, token)
    ├── GatewayUnreachableError   chat_client: wait_ready gave up
    ├── InvalidHistoryError       history: a tool call without exactly one result
    ├── AgentBusyError            agent: a second turn while one is running
    └── SessionError              sessions: cannot create, find or read a session
        ├── SessionNotFoundError
        └── InvalidSessionNameError

Layers add their own subclasses next to the code that raises them; this module
holds only what more than one layer needs.
"""

from __future__ import annotations

from navagent.core.events import ChatError

__all__ = ["ChatFailedError", "InvalidMessageError", "NavAgentError"]


class NavAgentError(Exception):
    """Base class for every error nav-agent raises on purpose."""


class InvalidMessageError(NavAgentError, ValueError):
    """A request or message that breaks the contract; the text names the field."""


class ChatFailedError(NavAgentError):
    """A streamed completion ended with an error instead of a final message."""

    def __init__(self, error: ChatError) -> None:
        super().__init__(error.message)
        self.error = error
