"""deploy/kubernetes: valid against the Kubernetes API schemas, and wired the way the gateway runs.

kubernetes-validate bundles the API's JSON schemas, so this runs offline.
Beyond the schemas, the manifests must agree with each other (selectors,
ports, secret keys) and with the gateway (its settings, its routes loader,
its grace period), since a schema-valid manifest can still deploy a broken
gateway.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from navagent.gateway.routes import parse_routes
from navagent.gateway.service import SERVICE_NAME
from navagent.gateway.settings import GatewaySettings, environment_warnings

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
KUBERNETES_VERSION = kubernetes_validate.latest_version()


def kustomization() -> dict[str, Any]:
    return dict(yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text(encoding="utf-8")))


def rendered() -> list[dict[str, Any]]:
    """The resources `kubectl apply -k` would send (labels and image tag applied)."""
    kustom = kustomization()
    labels = {k: v for entry in kustom.get("labels", []) for k, v in entry["pairs"].items()}
    tags = {image["name"]: image["newTag"] for image in kustom.get("images", [])}
    documents = []
    for name in kustom["resources"]:
        for document in yaml.safe_load_all((MANIFESTS / name).read_text(encoding="utf-8")):
            document["metadata"].setdefault("labels", {}).update(labels)
            for container in pod_spec(document).get("containers", []):
                if container["image"] in tags:
                    container["image"] += f":{tags[container['image']]}"
            documents.append(document)
    return documents


def pod_spec(document: dict[str, Any]) -> dict[str, Any]:
    return dict(document.get("spec", {}).get("template", {}).get("spec", {}))


def one(kind: str) -> dict[str, Any]:
    (found,) = [document for document in rendered() if document["kind"] == kind]
    return found


def container() -> dict[str, Any]:
    (gateway,) = pod_spec(one("Deployment"))["containers"]
    return dict(gateway)


def env() -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container()["env"]}


def test_kustomization_lists_every_manifest() -> None:
    listed = set(kustomization()["resources"])
    on_disk = {path.name for path in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk


@pytest.mark.parametrize(
    "document", rendered(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_every_resource_validates_against_the_kubernetes_schema(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_validator_rejects_what_kubernetes_would() -> None:
    # The check above is only worth something if the validator refuses bad manifests.
    broken = copy.deepcopy(one("Deployment"))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["grpc"]["port"] = "grpc"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)
    typo = copy.deepcopy(one("Service"))
    typo["spec"]["selecter"] = typo["spec"].pop("selector")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, KUBERNETES_VERSION, strict=True)


def test_service_and_budget_select_the_deployments_pods() -> None:
    deployment = one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert one("Service")["spec"]["selector"].items() <= pod_labels.items()
    budget = one("PodDisruptionBudget")["spec"]
    assert budget["selector"]["matchLabels"].items() <= pod_labels.items()
    assert deployment["spec"]["replicas"] > budget["minAvailable"] >= 1
    ports = {port["name"] for port in container()["ports"]}
    assert {port["targetPort"] for port in one("Service")["spec"]["ports"]} <= ports


def test_probes_use_the_plaintext_health_port_so_a_tls_gateway_can_be_probed() -> None:
    gateway = container()
    ports = {p["name"]: p["containerPort"] for p in gateway["ports"]}
    assert env()["NAV_GATEWAY_LISTEN"]["value"] == f"0.0.0.0:{ports['grpc']}"
    # The kubelet's gRPC probe speaks plaintext: it needs the health-only port.
    assert env()["NAV_GATEWAY_HEALTH_LISTEN"]["value"] == f"0.0.0.0:{ports['health']}"
    assert ports["health"] != ports["grpc"]
    assert gateway["readinessProbe"]["grpc"] == {"port": ports["health"], "service": SERVICE_NAME}
    assert gateway["livenessProbe"]["grpc"]["port"] == ports["health"]
    # The health port serves health only: the Service never exposes it.
    assert ports["health"] not in {p["targetPort"] for p in one("Service")["spec"]["ports"]}
    assert "health" not in {p["targetPort"] for p in one("Service")["spec"]["ports"]}


def test_termination_grace_outlasts_the_gateways_own_grace_period() -> None:
    spec = pod_spec(one("Deployment"))
    grace = float(env()["NAV_GATEWAY_GRACE_PERIOD"]["value"])
    pause = container()["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert spec["terminationGracePeriodSeconds"] > pause + grace


def test_metrics_port_is_scraped_where_the_gateway_serves_metrics() -> None:
    annotations = one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    metrics_port = next(p["containerPort"] for p in container()["ports"] if p["name"] == "metrics")
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(metrics_port)
    assert env()["NAV_GATEWAY_METRICS_LISTEN"]["value"].endswith(f":{metrics_port}")


def test_every_gateway_variable_is_a_real_setting_by_its_current_name() -> None:
    variables = {name: item.get("value", "") for name, item in env().items()}
    assert set(GatewaySettings.environment_names()) >= {
        name for name in variables if name.startswith("NAV_GATEWAY_")
    }
    assert environment_warnings(variables, also_known=set()) == []


def test_routes_come_from_the_configmap_and_keys_from_the_secret() -> None:
    variables = env()
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(one("Deployment"))["volumes"]}
    routes_path = Path(variables["NAV_GATEWAY_ROUTES"]["value"])
    (routes_volume,) = [n for n, path in mounts.items() if routes_path.parent == Path(path)]
    configmap = one("ConfigMap")
    assert volumes[routes_volume]["configMap"]["name"] == configmap["metadata"]["name"]
    # The ConfigMap's routes load with the gateway's own loader, each key
    # from a variable the Deployment fills from the secret.
    from_secret = {
        name: "sk-placeholder-0123456789"
        for name, item in variables.items()
        if "secretKeyRef" in item.get("valueFrom", {})
    }
    document = yaml.safe_load(configmap["data"][routes_path.name])
    table = parse_routes(document, source="configmap", environ=from_secret)
    assert table.routes and not table.warnings
    assert all(route.key_source.startswith("api_key_env ") for route in table.routes)


def test_callers_file_is_mounted_from_the_secret() -> None:
    callers_path = Path(env()["NAV_GATEWAY_CALLERS"]["value"])
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    (name,) = [n for n, path in mounts.items() if callers_path.parent == Path(path)]
    volume = next(v for v in pod_spec(one("Deployment"))["volumes"] if v["name"] == name)
    assert volume["secret"]["items"] == [{"key": callers_path.name, "path": callers_path.name}]
    assert pod_spec(one("Deployment"))["securityContext"]["fsGroup"] is not None


def test_no_secret_value_is_in_the_manifests() -> None:
    kinds = {document["kind"] for document in rendered()}
    assert "Secret" not in kinds, "secrets are created with kubectl, never committed"
    assert all("value" not in item for item in env().values() if "KEY" in item["name"])
    assert "api_key:" not in (MANIFESTS / "configmap.yaml").read_text(encoding="utf-8")


def test_pods_run_unprivileged() -> None:
    spec = pod_spec(one("Deployment"))
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    hardening = container()["securityContext"]
    assert hardening["allowPrivilegeEscalation"] is False
    assert hardening["readOnlyRootFilesystem"] is True
    assert hardening["capabilities"]["drop"] == ["ALL"]
    # The read-only root still needs a writable /tmp (pid file, worker state).
    pid_file = Path(env()["NAV_GATEWAY_PID_FILE"]["value"])
    assert any(pid_file.parent == Path(m["mountPath"]) for m in container()["volumeMounts"])
