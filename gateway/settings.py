"""Gateway settings: command-line options over `NAV_GATEWAY_*` variables over defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from navagent.core.redaction import header_safe_problem, register_secret

__all__ = ["GatewaySettings"]


class GatewaySettings(BaseSettings):
    """Everything `nav gateway serve` can be told; each field also reads `NAV_GATEWAY_<NAME>`."""

    model_config = SettingsConfigDict(env_prefix="NAV_GATEWAY_", frozen=True, extra="forbid")

    listen: str = "127.0.0.1:50051"
    """`HOST:PORT` to bind; port 0 picks a free one."""
    routes: Path | None = None
    """The routes YAML file."""
    auth_token_env: str | None = None
    """Name of the variable holding the bearer token clients must send."""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    """CA that client certificates must chain to; enables mutual TLS."""
    max_concurrent_streams: int = Field(default=256, ge=1)
    max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_upstream_connections: int = Field(default=1024, ge=1)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    first_token_timeout_s: float = Field(default=60.0, gt=0)
    """From the call's arrival to the provider's first content, across every
    attempt: connect, response headers and first token all count."""
    idle_timeout_s: float = Field(default=60.0, gt=0)
    """Longest wait for content progress once streaming; keep-alives do not count."""
    max_stream_duration_s: float = Field(default=1800.0, gt=0)
    """Longest a stream may last from its arrival, however busy it is."""
    max_message_bytes: int = Field(default=4 * 1024 * 1024 - 64 * 1024, ge=64 * 1024)
    """Largest message sent to a client: deltas are split below it, and a final
    answer above it ends the stream with an error (gRPC clients refuse messages
    over 4 MiB by default)."""
    attempts_per_route: int = Field(default=3, ge=1)
    grace_period_s: float = Field(default=10.0, ge=0)
    workers: int | None = Field(default=None, ge=1, le=1024)
    """Server processes sharing the port; None means one per core, 1 means no supervisor."""
    metrics_listen: str | None = None
    """`HOST:PORT` serving Prometheus metrics; None leaves them off."""
    pid_file: Path | None = None
    """Where `serve` writes its pid, for `nav gateway reload`."""
    callers: Path | None = None
    """The callers YAML file: per-caller tokens (hashed), routing hints and limits."""

    @property
    def worker_count(self) -> int:
        """`workers`, or one per core when unset."""
        return self.workers or os.cpu_count() or 1

    @field_validator("listen", "metrics_listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is None:
            return None
        host, sep, port = value.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(
                f"expected HOST:PORT with a port from 0 to 65535 (e.g. 127.0.0.1:50051), "
                f"got {value!r}"
            )
        return value.strip()

    @classmethod
    def loopback(cls, **overrides: Any) -> GatewaySettings:
        """Settings for an in-process gateway on a free 127.0.0.1 port.

        Auth and TLS are set explicitly off, so a `NAV_GATEWAY_*` variable in
        the user's environment cannot change a gateway that only this process
        talks to (the demo, the replay harness).
        """
        fields: dict[str, Any] = {
            "listen": "127.0.0.1:0",
            "routes": None,
            "auth_token_env": None,
            "tls_cert": None,
            "tls_key": None,
            "tls_client_ca": None,
            "pid_file": None,
            "callers": None,
        }
        return cls(**{**fields, **overrides})

    def auth_token(self) -> str | None:
        """The bearer token, read from `auth_token_env`; None when auth is off.

        Surrounding whitespace is stripped (a secret made from a file ends in a
        newline), and the token is registered with the redaction path.

        Raises:
            ValueError: the named variable is unset, blank, or holds a character
                that a `authorization` header cannot carry.
        """
        if not self.auth_token_env:
            return None
        name = self.auth_token_env
        token = os.environ.get(name, "").strip()
        if not token:
            raise ValueError(f"--auth-token-env names {name}, but that variable is unset or blank")
        problem = header_safe_problem(token)
        if problem is not None:
            raise ValueError(f"the token in {name} cannot be sent as a bearer token: {problem}")
        register_secret(token)
        return token
