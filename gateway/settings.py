"""Gateway settings: command-line options over `NAV_GATEWAY_*` variables over defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

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
    idle_timeout_s: float = Field(default=60.0, gt=0)
    attempts_per_route: int = Field(default=3, ge=1)
    grace_period_s: float = Field(default=10.0, ge=0)

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
        }
        return cls(**{**fields, **overrides})

    def auth_token(self) -> str | None:
        """The bearer token, read from `auth_token_env`; None when auth is off.

        Raises:
            ValueError: the named variable is unset or empty.
        """
        if not self.auth_token_env:
            return None
        token = os.environ.get(self.auth_token_env, "")
        if not token:
            raise ValueError(
                f"--auth-token-env names {self.auth_token_env}, but that variable is not set"
            )
        return token
