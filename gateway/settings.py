"""Gateway settings: command-line options over `NAV_GATEWAY_*` variables over defaults.

Every option `--some-name` is also `NAV_GATEWAY_SOME_NAME`. The seconds
options were once read from `..._S` variables (`NAV_GATEWAY_GRACE_PERIOD_S`):
those still work, with a warning (`environment_warnings`), which also names
every `NAV_GATEWAY_*` variable that is no setting and the one it resembles.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from navagent.core.redaction import header_safe_problem, register_secret
from navagent.gateway._config_file import nearest_key
from navagent.gateway.caller_store import store_url_problem

__all__ = ["ENV_PREFIX", "UNIX_PREFIX", "GatewaySettings", "environment_warnings", "usable_cpus"]

ENV_PREFIX = "NAV_GATEWAY_"
UNIX_PREFIX = "unix:"
"""A `listen` naming a Unix socket (`GatewaySettings.private_socket`), as gRPC spells it."""
WORKERS_PER_CPU = 4
"""`--workers` above this many per usable CPU is refused: each worker is a
whole process (about 60 MB) and more than the CPUs only adds switching."""
_DEPRECATED_SUFFIX = "_S"


def _seconds(name: str) -> Any:
    """The variables of a seconds option: its name, then the deprecated `_S` one."""
    variable = ENV_PREFIX + name.upper()
    return AliasChoices(name, variable, variable + _DEPRECATED_SUFFIX)


class GatewaySettings(BaseSettings):
    """Everything `nav gateway serve` can be told; each field also reads `NAV_GATEWAY_<NAME>`."""

    # hide_input_in_errors: an error never quotes the value (`caller_store` may hold a password).
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        hide_input_in_errors=True,
    )

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
    connect_timeout_s: float = Field(
        default=10.0, gt=0, validation_alias=_seconds("connect_timeout")
    )
    first_token_timeout_s: float = Field(
        default=60.0, gt=0, validation_alias=_seconds("first_token_timeout")
    )
    """From the call's arrival to the provider's first content, across every
    attempt: connect, response headers and first token all count."""
    idle_timeout_s: float = Field(default=60.0, gt=0, validation_alias=_seconds("idle_timeout"))
    """Longest wait for content progress once streaming; keep-alives do not count."""
    max_stream_duration_s: float = Field(
        default=1800.0, gt=0, validation_alias=_seconds("max_stream_duration")
    )
    """Longest a stream may last from its arrival, however busy it is."""
    max_message_bytes: int = Field(default=4 * 1024 * 1024 - 64 * 1024, ge=64 * 1024)
    """Largest message sent to a client: deltas are split below it, and a final
    answer above it ends the stream with an error (gRPC clients refuse messages
    over 4 MiB by default)."""
    attempts_per_route: int = Field(default=3, ge=1)
    grace_period_s: float = Field(default=10.0, ge=0, validation_alias=_seconds("grace_period"))
    workers: int | None = Field(default=None, ge=1)
    """Server processes sharing the port; None means one per usable CPU, 1 means no
    supervisor; more than `WORKERS_PER_CPU` per usable CPU is refused (`worker_count`)."""
    worker_timeout: float = Field(default=30.0, gt=0)
    """Seconds a worker may go without a heartbeat before it is killed and replaced
    (gunicorn's `--timeout`): a stopped or wedged worker still gets connections."""
    health_listen: str | None = None
    """`HOST:PORT` serving only gRPC health in plaintext, for probes of a TLS gateway."""
    metrics_listen: str | None = None
    """`HOST:PORT` serving Prometheus metrics; None leaves them off."""
    pid_file: Path | None = None
    """Where `serve` writes its pid, for `nav gateway reload`."""
    callers: Path | None = None
    """The callers YAML file: per-caller tokens (hashed), routing hints and limits."""
    caller_store: str | None = Field(default=None, repr=False)
    """A Redis URL where callers' `max_concurrent_streams` are counted across
    replicas (`caller_store.py`); None counts them in this gateway only. Kept
    out of the repr: the URL may hold the store's password."""

    @property
    def worker_count(self) -> int:
        """`workers`, or one per usable CPU when unset.

        Raises:
            ValueError: more workers than `WORKERS_PER_CPU` per usable CPU.
        """
        cpus = usable_cpus()
        if self.workers is None:
            return cpus
        most = WORKERS_PER_CPU * cpus
        if self.workers > most:
            raise ValueError(
                f"--workers {self.workers} is more than this process can use: it may run on "
                f"{cpus} CPU(s) (affinity and cgroup quota), so at most {most} workers "
                f"({WORKERS_PER_CPU} per CPU; each is a whole process of about 60 MB). "
                "Leave --workers unset for one per usable CPU"
            )
        return self.workers

    @classmethod
    def environment_names(cls) -> dict[str, str]:
        """Each setting's variable (`NAV_GATEWAY_GRACE_PERIOD`) and its field name."""
        names = {}
        for name, info in cls.model_fields.items():
            alias = info.validation_alias
            variable = alias.choices[1] if isinstance(alias, AliasChoices) else None
            names[str(variable) if variable else ENV_PREFIX + name.upper()] = name
        return names

    @field_validator("listen", "metrics_listen", "health_listen")
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

    @field_validator("caller_store")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        problem = store_url_problem(value)
        if problem is not None:
            raise ValueError(problem)  # never the URL itself: it may hold a password
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
            "caller_store": None,
        }
        return cls(**{**fields, **overrides})

    @classmethod
    def private_socket(cls, socket: Path, **overrides: Any) -> GatewaySettings:
        """`loopback`, listening on the Unix socket `socket` instead of a TCP port.

        For a gateway only this user may reach: the socket sits in a 0700
        folder, so no other user's process can connect (a loopback port is
        open to every local process). Not a `listen` a user can set: the
        workers share a TCP port, which a socket cannot be.
        """
        return cls.loopback(**overrides).model_copy(update={"listen": f"{UNIX_PREFIX}{socket}"})

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


def environment_warnings(environ: Mapping[str, str], *, also_known: set[str]) -> list[str]:
    """What is wrong with the `NAV_GATEWAY_*` variables: deprecated names and unknown ones.

    `also_known` are variables that are not settings but are used on purpose
    (the one `--auth-token-env` names).
    """
    known = GatewaySettings.environment_names()
    warnings = []
    for variable in sorted(environ):
        if not variable.startswith(ENV_PREFIX) or variable in known or variable in also_known:
            continue
        current = variable.removesuffix(_DEPRECATED_SUFFIX)
        if variable.endswith(_DEPRECATED_SUFFIX) and known.get(current, "").endswith("_s"):
            warnings.append(f"{variable} is deprecated; use {current} (it is read for now)")
            continue
        close = nearest_key(variable, known)
        warnings.append(
            f"{variable} is not a gateway setting and is ignored"
            + (f" (did you mean {close}?)" if close else "")
        )
    return warnings


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup CPU quota.

    `os.cpu_count()` counts the machine's CPUs; in a container on a 64-core
    node limited to 2 CPUs, or under `taskset`, that would start 64 workers.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)


def _cgroup_quota() -> float | None:
    return _read_quota(Path("/sys/fs/cgroup"))


def _read_quota(root: Path) -> float | None:
    """CPUs allowed by the cgroup quota (v2 `cpu.max`, v1 `cfs_quota_us`); None if unlimited."""
    try:
        quota, _, period = (root / "cpu.max").read_text(encoding="ascii").partition(" ")
        if quota.strip() != "max" and period.strip():
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text(encoding="ascii"))
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None
