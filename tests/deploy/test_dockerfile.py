"""deploy/Dockerfile, checked statically (no docker here): what the image runs, and as whom."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]
SECRET_WORDS = re.compile(r"(?i)key|token|secret|password|credential")


def instructions() -> list[dict[str, Any]]:
    with (ROOT / "deploy" / "Dockerfile").open("rb") as dockerfile:
        return list(DockerfileParser(fileobj=dockerfile).structure)


def final_stage() -> list[dict[str, Any]]:
    steps = instructions()
    last_from = max(i for i, step in enumerate(steps) if step["instruction"] == "FROM")
    return steps[last_from:]


def values(instruction: str, steps: list[dict[str, Any]] | None = None) -> list[str]:
    return [s["value"] for s in steps or instructions() if s["instruction"] == instruction]


def deployment() -> dict[str, Any]:
    text = (ROOT / "deploy" / "kubernetes" / "deployment.yaml").read_text(encoding="utf-8")
    return dict(yaml.safe_load(text))


def test_every_stage_builds_from_a_slim_python() -> None:
    for base in values("FROM"):
        image = base.split()[0]
        assert re.fullmatch(r"python:3\.\d+-slim", image), image


def test_the_image_runs_as_the_non_root_user_the_deployment_expects() -> None:
    (user,) = values("USER", final_stage())
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric uid lets runAsNonRoot verify it"
    assert any(f"--uid {uid}" in run for run in values("RUN", final_stage()))
    pod = deployment()["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsUser"] == int(uid)


def test_it_installs_the_package_from_the_repository() -> None:
    copied = {
        source
        for value in values("COPY")
        if not value.startswith("--from")
        for source in value.split()[:-1]
    }
    assert all((ROOT / source).exists() for source in copied)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dirs = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    assert package_dirs | {"pyproject.toml", pyproject["project"]["readme"]} <= copied
    assert any("pip install" in run and "nav-agent" in run for run in values("RUN", final_stage()))
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    rules = [line for line in ignored if line and not line.startswith("#")]
    assert rules[0] == "*", "the build context is an allow-list"
    assert all(f"!{source}" in ignored or f"!{source}/" in ignored for source in copied)


def test_it_serves_the_gateway_and_probes_its_grpc_health() -> None:
    (entrypoint,) = values("ENTRYPOINT")
    assert entrypoint.replace(" ", "") == '["nav","gateway","serve"]'
    (check,) = values("HEALTHCHECK")
    assert '"nav", "gateway", "health"' in check
    ports = {p["name"]: p["containerPort"] for p in deployment_ports()}
    environment = " ".join(values("ENV"))
    assert f"NAV_GATEWAY_LISTEN=0.0.0.0:{ports['grpc']}" in environment
    # The check uses the plaintext health port, so it works when 50051 has TLS.
    assert f"NAV_GATEWAY_HEALTH_LISTEN=0.0.0.0:{ports['health']}" in environment
    assert f"127.0.0.1:{ports['health']}" in check
    assert {str(ports["grpc"]), str(ports["health"])} <= set(values("EXPOSE")[0].split())


def deployment_ports() -> list[dict[str, Any]]:
    (container,) = deployment()["spec"]["template"]["spec"]["containers"]
    return list(container["ports"])


def test_no_secret_is_baked_into_the_image() -> None:
    for step in instructions():
        if step["instruction"] in ("ENV", "ARG", "LABEL"):
            names = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", step["value"])
            assert not any(SECRET_WORDS.search(name) for name in names), step["content"]
        if step["instruction"] in ("COPY", "ADD"):
            assert not re.search(r"\.env\b|routes\.ya?ml|callers\.ya?ml", step["value"])
