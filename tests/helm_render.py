"""Render the Helm chart ``deploy/helm/mirror-sink`` offline, as ``helm template`` would.

Helm 4's own library renders it (helm-python-sdk, imported as ``helm_python``: libhelm_c over Helm's Go
SDK, bundled in the wheel), so no helm binary, no cluster and no network are needed. Tests that must
agree with the chart (the image test runs the very command line and environment the chart gives the
worker) import this module::

    from tests.helm_render import EXAMPLES_DIR, render_chart, worker_args, worker_env

    manifests = render_chart()                                   # the chart's defaults
    manifests = render_chart([EXAMPLES_DIR / "values-sasl-ssl.yaml"], {"replicas": 2})
    worker_args(manifests)  # ['worker', '/etc/mirror-sink/worker.properties']
    worker_env(manifests)   # {'CONNECT_LISTENERS': 'http://0.0.0.0:8083', ...}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import helm_python
import yaml

CHART_DIR = Path(__file__).resolve().parents[1] / "deploy" / "helm" / "mirror-sink"
EXAMPLES_DIR = CHART_DIR / "examples"
RELEASE = "mirror-sink"
NAMESPACE = "kafka"


def load_values(path: Path) -> dict[str, Any]:
    """A values file parsed by Helm's own YAML reader (its types, not PyYAML's)."""
    return helm_python.values_from_yaml(path.read_text())


def merge_values(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base`` as Helm merges ``-f`` files: maps merge key by key, anything else
    replaces (a None is kept, and removes the chart's default when rendered)."""
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = merge_values(current, value)
        else:
            out[key] = value
    return out


def user_values(values_files: Sequence[Path] = (), set_values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What ``-f file ... --set ...`` hands Helm: the files in order, then ``set_values`` (a nested dict)."""
    values: dict[str, Any] = {}
    for path in values_files:
        values = merge_values(values, load_values(path))
    return merge_values(values, set_values or {})


def render_templates(
    values_files: Sequence[Path] = (),
    set_values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
) -> dict[str, str]:
    """Template path -> rendered text (NOTES.txt included). Raises ``helm_python.HelmRenderError``
    when the chart refuses the values (its ``fail`` messages), ``HelmValuesError`` when the values
    break values.schema.json."""
    with helm_python.Chart.load(CHART_DIR) as chart:
        return chart.render(user_values(values_files, set_values), name=release, namespace=namespace, is_install=True)


def render_chart(
    values_files: Sequence[Path] = (),
    set_values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
) -> list[dict[str, Any]]:
    """Every Kubernetes object the chart renders, parsed, in template order."""
    rendered = render_templates(values_files, set_values, release=release, namespace=namespace)
    manifests: list[dict[str, Any]] = []
    for path in sorted(rendered):
        if not path.endswith((".yaml", ".yml")):
            continue
        manifests.extend(doc for doc in yaml.safe_load_all(rendered[path]) if doc)
    return manifests


def find(manifests: Sequence[Mapping[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one object of ``kind`` (and ``name``); AssertionError unless there is exactly one."""
    found = [m for m in manifests if m["kind"] == kind and name in (None, m["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return dict(found[0])


def worker_container(manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The StatefulSet's worker container (the only one)."""
    containers = find(manifests, "StatefulSet")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def worker_args(manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """The arguments the chart gives the image's ENTRYPOINT (the ``mirror-sink`` command)."""
    return [str(arg) for arg in worker_container(manifests)["args"]]


def worker_env(manifests: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The worker container's environment with literal values; an entry taken from a Secret or the
    downward API (``valueFrom``) cannot be reproduced outside Kubernetes and raises ValueError."""
    env: dict[str, str] = {}
    for entry in worker_container(manifests).get("env", []):
        if "valueFrom" in entry:
            raise ValueError(f"{entry['name']} comes from {entry['valueFrom']}, not a literal value")
        env[entry["name"]] = str(entry.get("value", ""))
    return env


def worker_mounts(manifests: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Mount path -> volume name of the worker container."""
    return {m["mountPath"]: m["name"] for m in worker_container(manifests).get("volumeMounts", [])}
