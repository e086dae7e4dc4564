"""Gateway settings: options over NAV_GATEWAY_* variables over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from navagent.gateway.settings import GatewaySettings


def test_environment_fills_what_options_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAV_GATEWAY_LISTEN", "0.0.0.0:6000")
    monkeypatch.setenv("NAV_GATEWAY_IDLE_TIMEOUT_S", "7")
    settings = GatewaySettings(listen="127.0.0.1:7000")
    assert (settings.listen, settings.idle_timeout_s) == ("127.0.0.1:7000", 7.0)


def test_loopback_ignores_auth_and_tls_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NAV_GATEWAY_AUTH_TOKEN_ENV", "SOME_TOKEN")
    monkeypatch.setenv("NAV_GATEWAY_TLS_CERT", str(tmp_path / "cert.pem"))
    monkeypatch.setenv("NAV_GATEWAY_LISTEN", "0.0.0.0:6000")
    settings = GatewaySettings.loopback(grace_period_s=0)
    assert settings.listen == "127.0.0.1:0"
    assert settings.auth_token() is None and settings.tls_cert is None
    assert settings.grace_period_s == 0


def test_auth_token_env_naming_an_unset_variable_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NAV_TEST_UNSET_TOKEN", raising=False)
    with pytest.raises(ValueError, match="NAV_TEST_UNSET_TOKEN"):
        GatewaySettings(auth_token_env="NAV_TEST_UNSET_TOKEN").auth_token()
