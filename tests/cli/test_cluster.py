"""Cluster resolution follows the real nav: flag, env, (resumed session), active_cluster file."""

from __future__ import annotations

from pathlib import Path

import pytest

from navagent.cli.cluster import NoClusterError, active_cluster_file, resolve_cluster


def env_with_active(tmp_path: Path, active: str | None, **extra: str) -> dict[str, str]:
    config = tmp_path / "config"
    if active is not None:
        (config / "navigator").mkdir(parents=True)
        (config / "navigator" / "active_cluster").write_text(active, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path), **extra}


def test_cluster_flag_wins_over_everything(tmp_path) -> None:
    env = env_with_active(tmp_path, "from-file", NAVIGATOR_CLUSTER="from-env")
    assert resolve_cluster("from-flag", session_cluster="from-session", environ=env) == "from-flag"


def test_cluster_env_wins_over_session_and_file(tmp_path) -> None:
    env = env_with_active(tmp_path, "from-file", NAVIGATOR_CLUSTER=" from-env ")
    assert resolve_cluster(None, session_cluster="from-session", environ=env) == "from-env"


def test_cluster_blank_env_is_ignored(tmp_path) -> None:
    env = env_with_active(tmp_path, "from-file", NAVIGATOR_CLUSTER="   ")
    assert resolve_cluster(None, environ=env) == "from-file"


def test_cluster_resumed_session_wins_over_the_file(tmp_path) -> None:
    env = env_with_active(tmp_path, "from-file")
    assert resolve_cluster(None, session_cluster="from-session", environ=env) == "from-session"


def test_cluster_active_file_is_trimmed(tmp_path) -> None:
    assert resolve_cluster(None, environ=env_with_active(tmp_path, "  prod\n")) == "prod"


def test_cluster_active_file_defaults_under_home(tmp_path) -> None:
    assert active_cluster_file({"HOME": str(tmp_path)}) == (
        tmp_path / ".config" / "navigator" / "active_cluster"
    )


@pytest.mark.parametrize("active", [None, "", "  \n"])
def test_cluster_none_found_says_how_to_choose_one(tmp_path, active) -> None:
    with pytest.raises(NoClusterError) as caught:
        resolve_cluster(None, environ=env_with_active(tmp_path, active))
    message = str(caught.value)
    assert "--cluster" in message and "NAVIGATOR_CLUSTER" in message and "--demo" in message
    assert "\n" not in message
