"""The Helm chart ``deploy/helm/mirror-sink``, offline: rendered and linted by Helm 4's own library
(helm-python-sdk), every built-in object validated strictly against Kubernetes 1.33's schemas
(kubernetes-validate), the Prometheus Operator objects checked field by field, and the chart's
contract with the worker and the image asserted. No cluster, no helm binary, no network."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from mirror_sink import __version__
from mirror_sink.core.settings.config_files import parse_properties
from mirror_sink.core.settings.config_providers import resolve
from mirror_sink.worker.worker_config import WorkerConfig, settings_from_env
from tests.helm_render import (
    CHART_DIR,
    EXAMPLES_DIR,
    NAMESPACE,
    RELEASE,
    find,
    render_chart,
    render_templates,
    user_values,
    worker_args,
    worker_container,
    worker_env,
    worker_mounts,
)

ROOT = CHART_DIR.parents[2]
SASL_SSL = EXAMPLES_DIR / "values-sasl-ssl.yaml"
SASL_SSL_SECRETS = EXAMPLES_DIR / "secrets-sasl-ssl.yaml"
OPENSHIFT = EXAMPLES_DIR / "values-openshift.yaml"
KUBERNETES = "1.33"
#: Kinds that are not Kubernetes' own: no schema in kubernetes-validate, checked by the tests below.
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}
STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)
STABLE_LABELS = {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"}
MiB = 1024 * 1024

#: Every branch of the templates the two other scenarios leave out.
EVERYTHING_ELSE: dict[str, Any] = {
    "replicas": 2,
    "bootstrapServers": "kafka:9092",
    "persistence": {"enabled": False},
    "podAntiAffinity": "hard",
    "cpu": {"limit": "2"},
    "env": [{"name": "MIRROR_SINK_EXTRA", "value": "1"}],
    "extraVolumes": [{"name": "plugins", "emptyDir": {}}],
    "extraVolumeMounts": [{"name": "plugins", "mountPath": "/opt/plugins"}],
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "kafka", "effect": "NoSchedule"}],
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "priorityClassName": "high",
    "imagePullSecrets": [{"name": "registry"}],
    "podAnnotations": {"example.com/team": "streaming"},
    "podLabels": {"example.com/tier": "dr"},
    "service": {"annotations": {"example.com/x": "y"}, "publishNotReadyAddresses": True},
    "serviceAccount": {"annotations": {"example.com/role": "mirror"}},
    "serviceMonitor": {"enabled": True, "relabelings": [{"action": "labeldrop", "regex": "endpoint"}]},
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
    ],
    "connectors": {"dr": {"name": "dr", "config": {"connector.class": "MirrorSinkConnector", "tasks.max": 4}}},
    "image": {"digest": "sha256:" + "ab" * 32},
    "networkPolicy": {
        "enabled": True,
        "restFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "kafkaTo": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
    },
    "preStopSleepSeconds": 0,
    "ephemeralStorageRequest": "",
}
SCENARIOS: dict[str, tuple[list[Path], dict[str, Any] | None]] = {
    "defaults": ([], None),
    "sasl-ssl example": ([SASL_SSL], None),
    "everything else": ([], EVERYTHING_ELSE),
    "openshift example": ([OPENSHIFT], None),
}


def render(values: Mapping[str, Any] | None = None, files: Sequence[Path] = ()) -> list[dict[str, Any]]:
    return render_chart(files, values)


def container(values: Mapping[str, Any] | None = None, files: Sequence[Path] = ()) -> dict[str, Any]:
    return worker_container(render(values, files))


def pod_spec(manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = find(manifests, "StatefulSet")["spec"]["template"]["spec"]
    return spec


def config_maps(manifests: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    return {m["metadata"]["name"]: m.get("data", {}) for m in manifests if m["kind"] == "ConfigMap"}


def worker_properties(manifests: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return parse_properties(config_maps(manifests)[RELEASE]["worker.properties"])


def example_secrets() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(SASL_SSL_SECRETS.read_text()) if doc]


# -- the chart itself -------------------------------------------------------------------------------


def test_chart_versions_are_the_package_version() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["appVersion"] == __version__
    assert chart["version"] == __version__
    with helm_python.Chart.load(CHART_DIR) as loaded:
        assert loaded.metadata["appVersion"] == __version__


def test_the_charts_alert_rules_are_the_repositorys() -> None:
    copy_in_chart = (CHART_DIR / "files" / "mirror-sink-alerts.yml").read_bytes()
    assert copy_in_chart == (ROOT / "deploy" / "prometheus" / "mirror-sink-alerts.yml").read_bytes(), (
        "cp deploy/prometheus/mirror-sink-alerts.yml deploy/helm/mirror-sink/files/"
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_helm_lint_strict_finds_nothing(scenario: str) -> None:
    files, values = SCENARIOS[scenario]
    report = helm_python.lint(CHART_DIR, user_values(files, values), strict=True, kube_version=f"v{KUBERNETES}.0")
    assert report["errors"] == []
    # Severity 1 is information (Chart.yaml's "icon is recommended"); warnings and errors fail.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_object_validates_against_kubernetes_schemas(scenario: str) -> None:
    files, values = SCENARIOS[scenario]
    manifests = render_chart(files, values)
    kinds = {m["kind"] for m in manifests}
    assert {"StatefulSet", "Service", "ConfigMap", "ServiceAccount", "Pod"} <= kinds
    for manifest in manifests:
        if manifest["kind"] in CRD_KINDS:
            continue
        try:
            kubernetes_validate.validate(manifest, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{manifest['kind']}/{manifest['metadata']['name']}: {where}: {exc.message}")


def test_the_validation_is_strict() -> None:
    """The schemas above would catch a misspelled or mistyped field (so their passing means something)."""
    statefulset = find(render(), "StatefulSet")
    misspelled = copy.deepcopy(statefulset)
    misspelled["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    mistyped = copy.deepcopy(statefulset)
    mistyped["spec"]["replicas"] = "3"
    for broken in (misspelled, mistyped):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_the_example_secrets_validate() -> None:
    for secret in example_secrets():
        kubernetes_validate.validate(secret, KUBERNETES, strict=True)


def test_values_schema_refuses_a_misspelled_key() -> None:
    with pytest.raises(helm_python.HelmValuesError, match="replica"):
        render({"replica": 3})
    with pytest.raises(helm_python.HelmValuesError, match="configStorage"):
        render({"configStorage": "zookeeper"})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_object_carries_the_standard_labels_and_selectors_only_stable_ones(scenario: str) -> None:
    files, values = SCENARIOS[scenario]
    manifests = render_chart(files, values)
    statefulset = find(manifests, "StatefulSet")
    labelled = [*manifests, statefulset["spec"]["template"]]
    for obj in labelled:
        labels = obj["metadata"]["labels"]
        missing = [key for key in STANDARD_LABELS if not labels.get(key)]
        assert not missing, f"{obj.get('kind', 'pod template')} lacks {missing}"
        assert labels["app.kubernetes.io/version"] == __version__
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
    selectors = [statefulset["spec"]["selector"]["matchLabels"]]
    selectors += [m["spec"]["selector"] for m in manifests if m["kind"] == "Service"]
    selectors += [m["spec"]["selector"]["matchLabels"] for m in manifests if m["kind"] == "PodDisruptionBudget"]
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    for selector in selectors:
        assert set(selector) == STABLE_LABELS
        assert selector.items() <= pod_labels.items()


# -- the workload ----------------------------------------------------------------------------------


def test_a_statefulset_with_a_headless_and_a_rest_service() -> None:
    manifests = render()
    statefulset = find(manifests, "StatefulSet", RELEASE)
    spec = statefulset["spec"]
    headless = find(manifests, "Service", spec["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    rest = find(manifests, "Service", RELEASE)
    assert rest["spec"]["type"] == "ClusterIP"
    assert rest["spec"]["ports"] == [
        {"name": "http", "port": 8083, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"}
    ]
    assert worker_container(manifests)["ports"] == [{"name": "http", "containerPort": 8083, "protocol": "TCP"}]
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["updateStrategy"] == {"type": "RollingUpdate"}
    assert spec["minReadySeconds"] > 0
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 60
    assert spec["replicas"] == 1


def test_a_pod_disruption_budget_of_one_only_where_there_is_more_than_one_pod() -> None:
    assert not [m for m in render() if m["kind"] == "PodDisruptionBudget"], "one pod: a budget only blocks drains"
    manifests = render({"replicas": 2, "bootstrapServers": "kafka:9092"})
    pdb = find(manifests, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == find(manifests, "StatefulSet")["spec"]["selector"]["matchLabels"]


def test_probes_use_health_and_health_ready_on_the_rest_port() -> None:
    worker = container()
    assert worker["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert worker["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert worker["readinessProbe"]["httpGet"] == {"path": "/health/ready", "port": "http"}
    # The liveness probe must outlast the worker's own 10 s "unhealthy" threshold before a restart.
    liveness = worker["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > 10


def test_security_context_is_restricted() -> None:
    manifests = render()
    pod = pod_spec(manifests)
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "fsGroup": 65532,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert worker_container(manifests)["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["automountServiceAccountToken"] is False
    assert find(manifests, "ServiceAccount")["automountServiceAccountToken"] is False


def test_the_container_contract_with_the_image() -> None:
    manifests = render()
    worker = worker_container(manifests)
    assert worker["image"] == f"localhost/mirror-sink:{__version__}"
    assert worker["imagePullPolicy"] == "IfNotPresent"
    assert "command" not in worker  # the image's ENTRYPOINT (mirror-sink) runs
    assert worker_args(manifests) == ["worker", "/etc/mirror-sink/worker.properties"]
    assert worker_env(manifests) == {
        "CONNECT_LISTENERS": "http://0.0.0.0:8083",
        "CONNECT_DATA_DIR": "/var/lib/mirror-sink",
        "CONNECT_CONFIG_STORAGE": "file",
    }
    assert worker_mounts(manifests) == {"/etc/mirror-sink": "config", "/var/lib/mirror-sink": "data", "/tmp": "tmp"}
    # No CONNECT_PORT & co. from a Service named "connect": the worker would read them as settings.
    assert pod_spec(manifests)["enableServiceLinks"] is False
    assert render({"image": {"tag": "1.2.3"}}) != manifests
    assert container({"image": {"tag": "1.2.3", "repository": "registry.example.com/mirror-sink"}})["image"] == (
        "registry.example.com/mirror-sink:1.2.3"
    )


def test_the_worker_accepts_what_the_chart_configures() -> None:
    """worker.properties, then the CONNECT_* variables read the worker's way (Confluent's Connect-image
    convention), make settings the worker's own model accepts (it refuses unknown keys)."""
    manifests = render_chart([SASL_SSL])
    env = worker_env(manifests)
    from_env = settings_from_env(env)
    assert from_env == {
        "listeners": "http://0.0.0.0:8083",
        "data.dir": "/var/lib/mirror-sink",
        "config.storage": "kafka",
        "bootstrap.servers": "kafka-west-kafka-bootstrap.kafka.svc:9093",
    }
    props = worker_properties(manifests)
    assert not set(props) & set(from_env), "a setting in both places"
    config = WorkerConfig.model_validate(props | from_env)
    assert config.listener_list[0].port == 8083
    assert str(config.data_dir) == "/var/lib/mirror-sink"
    assert str(config.connectors_config_dir) == "/etc/mirror-sink/connectors"
    assert config.config_storage_topic == "mirror-sink-configs"
    assert config.kafka_client_config()["security.protocol"] == "SASL_SSL"
    WorkerConfig.model_validate(worker_properties(render()) | settings_from_env(worker_env(render())))


def test_the_data_volume_is_a_claim_or_an_empty_dir() -> None:
    manifests = render()
    claims = find(manifests, "StatefulSet")["spec"]["volumeClaimTemplates"]
    assert [c["metadata"]["name"] for c in claims] == ["data"]
    assert claims[0]["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert "data" not in {v["name"] for v in pod_spec(manifests)["volumes"]}
    ephemeral = render({"persistence": {"enabled": False}})
    assert "volumeClaimTemplates" not in find(ephemeral, "StatefulSet")["spec"]
    volumes = {v["name"]: v for v in pod_spec(ephemeral)["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}
    assert volumes["tmp"]["emptyDir"]["sizeLimit"] == "256Mi"
    assert worker_mounts(ephemeral)["/var/lib/mirror-sink"] == "data"


# -- the config store ------------------------------------------------------------------------------


def test_more_than_one_replica_uses_the_kafka_store() -> None:
    manifests = render({"replicas": 3, "bootstrapServers": "kafka-west:9092"})
    env = worker_env(manifests)
    assert env["CONNECT_CONFIG_STORAGE"] == "kafka"
    assert env["CONNECT_BOOTSTRAP_SERVERS"] == "kafka-west:9092"
    assert find(manifests, "StatefulSet")["spec"]["replicas"] == 3
    props = worker_properties(manifests)
    # One worker group per release: its own topics.
    assert props["config.storage.topic"] == "mirror-sink-configs"
    assert props["status.storage.topic"] == "mirror-sink-status"
    other = render_chart(set_values={"replicas": 2, "bootstrapServers": "k:9092"}, release="east")
    assert worker_properties_of(other, "east-mirror-sink")["config.storage.topic"] == "east-mirror-sink-configs"


def worker_properties_of(manifests: Sequence[Mapping[str, Any]], name: str) -> dict[str, str]:
    return parse_properties(config_maps(manifests)[name]["worker.properties"])


def test_two_replicas_with_the_file_store_are_refused() -> None:
    with pytest.raises(
        helm_python.HelmRenderError, match=r"replicas=2 with config\.storage=file.*configStorage: kafka"
    ):
        render({"replicas": 2, "configStorage": "file", "bootstrapServers": "k:9092"})


def test_the_kafka_store_needs_bootstrap_servers() -> None:
    with pytest.raises(helm_python.HelmRenderError, match="needs bootstrapServers"):
        render({"replicas": 2})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"config": {"worker.id": "w1"}}, r"config\.worker\.id cannot be set: every pod would share one id"),
        ({"config": {"listeners": "http://0.0.0.0:9000"}}, r"config\.listeners cannot be set"),
        ({"config": {"config.storage": "kafka"}}, "set configStorage instead"),
        ({"env": [{"name": "CONNECT_WORKER_ID", "value": "w"}]}, "env CONNECT_WORKER_ID cannot be set"),
    ],
)
def test_settings_the_chart_owns_are_refused(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=message):
        render(values)


# -- resources -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tasks", "buffer", "factor", "base"),
    [(2, 64 * MiB, 150, 256), (4, 32 * MiB, 150, 256), (3, 10_000_000, 150, 256), (1, 64 * MiB, 120, 512)],
)
def test_memory_follows_tasks_times_buffer_memory(tasks: int, buffer: int, factor: int, base: int) -> None:
    values = {
        "tasksPerWorker": tasks,
        "bufferMemoryBytes": buffer,
        "memory": {"baseMiB": base, "bufferFactorPercent": factor},
    }
    expected = f"{base + math.ceil(tasks * buffer * factor / 100 / MiB)}Mi"
    resources = container(values)["resources"]
    assert resources["requests"]["memory"] == expected
    assert resources["limits"]["memory"] == expected
    assert resources["requests"]["cpu"] == "500m"
    assert "cpu" not in resources["limits"]


def test_the_default_memory_is_448_mib() -> None:
    # 256 MiB + 2 tasks x 64 MiB (the connector's buffer.memory default) x 1.5
    assert container()["resources"]["limits"]["memory"] == "448Mi"


def test_explicit_resources_replace_the_computed_ones() -> None:
    explicit = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    assert container({"resources": explicit})["resources"] == explicit


# -- connectors and credentials --------------------------------------------------------------------


def test_connectors_are_json_files_the_worker_applies_at_start() -> None:
    manifests = render_chart([SASL_SSL])
    data = config_maps(manifests)[f"{RELEASE}-connectors"]
    assert list(data) == ["us-east-mirror.json"]
    doc = json.loads(data["us-east-mirror.json"])
    assert doc["name"] == "us-east-mirror"
    config = doc["config"]
    assert all(isinstance(v, str) for v in config.values())
    assert config["tasks.max"] == "3"
    assert config["buffer.memory"] == "67108864"  # not 6.7108864e+07
    assert worker_properties(manifests)["connectors.config.dir"] == "/etc/mirror-sink/connectors"
    mounts = worker_mounts(manifests)
    assert mounts["/etc/mirror-sink/connectors"] == "connectors"
    volumes = {v["name"]: v for v in pod_spec(manifests)["volumes"]}
    assert volumes["connectors"]["configMap"]["name"] == f"{RELEASE}-connectors"
    assert "connectors.config.dir" not in worker_properties(render())
    assert "/etc/mirror-sink/connectors" not in worker_mounts(render())


def test_an_existing_connectors_config_map_is_mounted_instead() -> None:
    manifests = render({"connectorsConfigMap": "gitops-connectors"})
    assert f"{RELEASE}-connectors" not in config_maps(manifests)
    volumes = {v["name"]: v for v in pod_spec(manifests)["volumes"]}
    assert volumes["connectors"]["configMap"]["name"] == "gitops-connectors"
    assert worker_properties(manifests)["connectors.config.dir"] == "/etc/mirror-sink/connectors"


def test_a_config_change_rolls_the_workers() -> None:
    def annotations(values: dict[str, Any]) -> dict[str, str]:
        template = find(render(values), "StatefulSet")["spec"]["template"]
        return dict(template["metadata"]["annotations"])

    base = annotations({})
    changed_config = annotations({"config": {"ssl.endpoint.identification.algorithm": "https"}})
    connector = {"connectors": {"dr": {"connector.class": "MirrorSinkConnector"}}}
    changed_connectors = annotations(connector)
    assert changed_config["checksum/config"] != base["checksum/config"]
    assert changed_connectors["checksum/connectors"] != base["checksum/connectors"]


def test_no_rendered_object_carries_the_example_credentials() -> None:
    secrets = example_secrets()
    credentials: set[str] = set()
    for secret in secrets:
        for text in secret["stringData"].values():
            credentials |= {v for k, v in parse_properties(text).items() if "password" in k}
    assert len(credentials) == 2  # the target's and the source's SCRAM passwords
    manifests = render_chart([SASL_SSL])
    assert not any(m["kind"] == "Secret" for m in manifests)
    for name, data in config_maps(manifests).items():
        for key, value in data.items():
            leaked = [c for c in credentials if c in value]
            assert not leaked, f"ConfigMap {name} key {key} holds a credential"
    everything = "\n".join(render_templates([SASL_SSL]).values())
    assert not [c for c in credentials if c in everything]


def test_the_examples_references_resolve_to_the_mounted_secrets(tmp_path: Path) -> None:
    """Every ${file:...} reference and ssl.*.location path of the SASL_SSL example names a file its
    mounted Secrets hold: the Secrets are written where the pod would see them (under tmp_path) and the
    worker's own provider resolves the references."""
    manifests = render_chart([SASL_SSL])
    secrets = {s["metadata"]["name"]: s["stringData"] for s in example_secrets()}
    volumes = {v["name"]: v for v in pod_spec(manifests)["volumes"]}
    mounted = 0
    for path, volume in worker_mounts(manifests).items():
        source = volumes.get(volume, {}).get("secret")
        if source is None:
            continue
        assert path.startswith("/etc/mirror-sink/secrets/")
        data = secrets[source["secretName"]]
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            target = tmp_path / path.lstrip("/") / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(data[item["key"]])
            mounted += 1
    assert mounted == 2
    assert volumes["secret-kafka-ca"]["secret"]["defaultMode"] == 0o440

    def localized(config: Mapping[str, str]) -> dict[str, str]:
        return {k: v.replace("/etc/mirror-sink/", f"{tmp_path}/etc/mirror-sink/") for k, v in config.items()}

    connector = json.loads(config_maps(manifests)[f"{RELEASE}-connectors"]["us-east-mirror.json"])["config"]
    for config in (worker_properties(manifests), connector):
        resolved = resolve(localized(config))
        for key, value in resolved.items():
            if key.endswith("sasl.password"):
                assert value.startswith("placeholder-"), key
            if key.endswith(".location"):
                assert Path(value).is_file(), f"{key}={config[key]} is not in a mounted Secret"
    assert resolve(localized(connector))["source.cluster.sasl.password"] == "placeholder-east-2b81d4"


@pytest.mark.parametrize(
    "values",
    [
        {"config": {"sasl.password": "hunter2"}},
        {"config": {"ssl.key.password": "hunter2"}},
        {"connectors": {"dr": {"connector.class": "MirrorSinkConnector", "target.cluster.sasl.password": "hunter2"}}},
        {"connectors": {"dr": {"connector.class": "MirrorSinkConnector", "source.cluster.sasl.jaas.config": "x"}}},
    ],
)
def test_a_literal_credential_is_refused(values: dict[str, Any]) -> None:
    with pytest.raises(helm_python.HelmRenderError, match="literal credential, which would land in a ConfigMap"):
        render(values)


def test_credential_references_and_paths_are_accepted() -> None:
    values = {
        "config": {
            "sasl.password": "${file:/etc/mirror-sink/secrets/c/creds.properties:password}",
            "rest.basic.auth.credentials.file": "/etc/mirror-sink/secrets/rest/users",
        }
    }
    props = worker_properties(render(values))
    assert props["rest.basic.auth.credentials.file"] == "/etc/mirror-sink/secrets/rest/users"


# -- monitoring ------------------------------------------------------------------------------------


def test_service_monitor_scrapes_the_rest_service_only() -> None:
    manifests = render_chart([SASL_SSL])
    monitor = find(manifests, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    spec = monitor["spec"]
    selector = spec["selector"]["matchLabels"]
    services = {s["metadata"]["name"]: s for s in manifests if s["kind"] == "Service"}
    selected = [name for name, s in services.items() if selector.items() <= s["metadata"]["labels"].items()]
    assert selected == [RELEASE], "exactly the REST Service (the headless one would scrape each pod twice)"
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    port_names = {p["name"] for p in services[RELEASE]["spec"]["ports"]}
    [endpoint] = spec["endpoints"]
    assert endpoint["port"] == "http"
    assert endpoint["port"] in port_names
    assert endpoint["path"] == "/metrics"


def test_prometheus_rule_carries_the_repositorys_alerts() -> None:
    rule = find(render_chart([SASL_SSL]), "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    groups = rule["spec"]["groups"]
    assert groups
    for group in groups:
        assert group["name"]
        assert group["rules"]
        for alert in group["rules"]:
            assert isinstance(alert["alert"], str)
            assert alert["alert"]
            assert isinstance(alert["expr"], str)
            assert alert["expr"].strip()
    source = yaml.safe_load((ROOT / "deploy" / "prometheus" / "mirror-sink-alerts.yml").read_text())
    assert rule["spec"] == source  # {{ $labels.connector }} untouched by Helm's templating
    assert "MirrorSinkTaskFailed" in {a["alert"] for g in groups for a in g["rules"]}


def test_monitoring_objects_are_off_by_default() -> None:
    kinds = {m["kind"] for m in render()}
    assert not kinds & CRD_KINDS


def test_connects_name_and_config_shape_is_accepted_too() -> None:
    data = config_maps(render(EVERYTHING_ELSE))[f"{RELEASE}-connectors"]
    assert json.loads(data["dr.json"]) == {
        "name": "dr",
        "config": {"connector.class": "MirrorSinkConnector", "tasks.max": "4"},
    }


def test_notes_warn_when_the_connectors_need_more_tasks_per_worker() -> None:
    def notes(values: dict[str, Any]) -> str:
        return render_templates(set_values=values)[f"{RELEASE}/templates/NOTES.txt"]

    group = {"replicas": 3, "bootstrapServers": "k:9092"}
    six = {"connectors": {"dr": {"connector.class": "MirrorSinkConnector", "tasks.max": 6}}}
    # 6 tasks over 3 workers: 2 each, 3 while one is away.
    assert "Set tasksPerWorker=3" in notes(group | six)
    assert "WARNING" not in notes(group | six) and "NOTE" not in notes(group | six | {"tasksPerWorker": 3})
    assert "up to 6 tasks per" in notes(six)  # one worker runs them all
    assert "mirror-sink-0:8083 ... mirror-sink-2:8083" in notes(group)


# -- what a platform team's review asks for (issue 46) -------------------------------------------------


def _everywhere(node: Any, key: str) -> list[Any]:
    """Every value under ``key`` anywhere in ``node``."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == key] + [x for v in node.values() for x in _everywhere(v, key)]
    if isinstance(node, list):
        return [x for v in node for x in _everywhere(v, key)]
    return []


def test_the_openshift_example_leaves_the_uid_to_the_platform_and_keeps_the_rest_restricted() -> None:
    manifests = render(files=[OPENSHIFT])
    for key in ("runAsUser", "runAsGroup", "fsGroup"):
        assert _everywhere(manifests, key) == [], f"{key} set: OpenShift's restricted SCC refuses the pod"
    pod = pod_spec(manifests)
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert worker_container(manifests)["securityContext"] == {
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_a_digest_pins_the_image_in_the_worker_and_the_test_pod() -> None:
    digest = "sha256:" + "0f" * 32
    manifests = render({"image": {"repository": "registry.example.com/mirror-sink", "digest": digest}})
    test_pod = find(manifests, "Pod")
    assert worker_container(manifests)["image"] == test_pod["spec"]["containers"][0]["image"]
    assert worker_container(manifests)["image"] == f"registry.example.com/mirror-sink@{digest}"
    with pytest.raises(helm_python.HelmValuesError, match="digest"):
        render({"image": {"digest": "latest"}})


def test_helm_test_asks_the_rest_services_health() -> None:
    manifests = render()
    test_pod = find(manifests, "Pod")
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert test_pod["spec"]["restartPolicy"] == "Never"
    script = test_pod["spec"]["containers"][0]["command"]
    service = find(manifests, "Service", RELEASE)
    port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "http")
    assert script[:2] == ["python3", "-c"] and f'"http://{RELEASE}:{port}/health"' in script[2]
    assert test_pod["spec"]["securityContext"] == pod_spec(manifests)["securityContext"]
    assert not [m for m in render({"tests": {"enabled": False}}) if m["kind"] == "Pod"]


def test_a_network_policy_opens_the_rest_port_to_the_chosen_peers_and_egress_to_kafka_and_dns() -> None:
    assert not [m for m in render() if m["kind"] == "NetworkPolicy"], "off by default"
    manifests = render(EVERYTHING_ELSE)
    policy = find(manifests, "NetworkPolicy")
    selector = find(manifests, "StatefulSet")["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["podSelector"]["matchLabels"] == selector
    [ingress] = policy["spec"]["ingress"]
    assert ingress["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert ingress["from"] == [
        {"podSelector": {"matchLabels": selector}},
        *EVERYTHING_ELSE["networkPolicy"]["restFrom"],
    ]
    rest, kafka, dns = policy["spec"]["egress"]
    assert rest["ports"] == [{"port": 8083, "protocol": "TCP"}]
    assert kafka == {
        "ports": [{"port": 9092, "protocol": "TCP"}, {"port": 9093, "protocol": "TCP"}],
        "to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
    }
    assert {p["protocol"] for p in dns["ports"]} == {"UDP", "TCP"}


def test_stopping_waits_for_the_services_then_gives_the_transaction_its_time() -> None:
    manifests = render()
    worker = worker_container(manifests)
    assert worker["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    assert worker["resources"]["requests"]["ephemeral-storage"] == "128Mi"
    grace = pod_spec(manifests)["terminationGracePeriodSeconds"]
    # The sleep, one transaction (transaction.boundary.interval.ms, 1 s by default) and its commit.
    assert grace >= 5 + 1 + 5
    bare = worker_container(render(EVERYTHING_ELSE))
    assert "lifecycle" not in bare and "ephemeral-storage" not in bare["resources"]["requests"]
    with pytest.raises(helm_python.HelmValuesError, match="terminationGracePeriodSeconds"):
        render({"terminationGracePeriodSeconds": 5})
