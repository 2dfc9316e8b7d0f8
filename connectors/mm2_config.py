"""MirrorMaker 2 dedicated-mode files (KIP-382) turned into MirrorSinkConnector configs.

An ``mm2.properties`` file names its clusters and the replication flows between them::

    clusters = primary, backup
    primary.bootstrap.servers = primary-kafka:9092
    backup.bootstrap.servers = backup-kafka:9092
    primary->backup.enabled = true
    primary->backup.topics = orders.*
    connector.type = sink
    transaction.producer = true

Each enabled flow ``A->B`` (``A->B.enabled = true``; flows are disabled unless set) becomes one connector
config named ``A-to-B``, since ``->`` is not allowed in connector names. Its keys, the later layers
winning:

1. plain (global) keys, such as ``topics`` or ``tasks.max``;
2. the clusters' own settings: ``{A}.<prop>`` becomes ``source.cluster.<prop>`` and ``{B}.<prop>``
   ``target.cluster.<prop>``; ``{A}.consumer.<prop>``, ``{B}.producer.<prop>`` and ``{A|B}.admin.<prop>``
   go to the client of that role (``{B}.consumer.*`` and ``{A}.producer.*`` serve other flows);
3. the flow's own keys, ``A->B.<key>``.

Plain and per-flow ``consumer.<prop>`` / ``producer.<prop>`` / ``admin.<prop>`` keys become
``source.cluster.consumer.<prop>``, ``target.cluster.producer.<prop>`` and both clusters'
``admin.<prop>``. Settings that only MM2's source, checkpoint and heartbeat connectors or its Connect
workers use (heartbeats, checkpoints, group offset sync, internal topics, ...) are dropped.

MM2 runs MirrorSourceConnector unless told otherwise; mirror-sink runs only KIP-656 sink connectors, so
every enabled flow needs ``connector.type = sink``, globally or as ``A->B.connector.type``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from mirror_sink.config.mirror_sink_config import CONNECTOR_CLASS, MirrorSinkConfig, connector_class_aliases
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_files import parse_properties

# Keys of MM2's source, checkpoint and heartbeat connectors and of its Connect workers: no meaning to a
# sink connector. Any other ``*.replication.factor`` key (of an internal topic) is dropped as well.
_MM2_ONLY_KEYS = frozenset(
    {
        "emit.heartbeats.enabled",
        "emit.heartbeats.interval.seconds",
        "emit.checkpoints.enabled",
        "emit.checkpoints.interval.seconds",
        "emit.offset-syncs.enabled",
        "offset-syncs.topic.location",
        "offset.lag.max",
        "sync.group.offsets.enabled",
        "sync.group.offsets.interval.seconds",
        "refresh.groups.enabled",
        "refresh.groups.interval.seconds",
        "groups",
        "groups.exclude",
        "offset-syncs.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "checkpoints.topic.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
        "offset.storage.topic",
        "status.storage.topic",
        "config.storage.topic",
        "dedicated.mode.enable.internal.rest",
    }
)
# Keys that choose flows, not connector settings.
_FLOW_CONTROL_KEYS = frozenset({"clusters", "enabled"})
# Aliases prefix target topic names and name connectors, so they keep to topic-name characters.
_ALIAS = re.compile(r"[A-Za-z0-9._-]+")


def connectors_from_mm2(props: Mapping[str, str]) -> list[dict[str, str]]:
    """One flat connector config (Connect form, "name" included) per enabled flow A->B.

    Flows come in the order of ``clusters`` (source first, then target); an empty list when no flow
    is enabled. Every config has passed ``MirrorSinkConfig.parse``.

    Raises:
        ConfigError: keyed by the file's key when ``clusters`` is missing, a flow names an unknown
            alias, an enabled flow's cluster has no ``{alias}.bootstrap.servers`` or the file sets a key
            derived from the flow; keyed ``connector.type`` when a flow is not a sink connector; and
            ``MirrorSinkConfig.parse``'s own error (keyed by the connector key) for a bad value.
    """
    aliases = _cluster_aliases(props)
    global_props, cluster_props, flow_props = _split(props, aliases)
    configs: list[dict[str, str]] = []
    flows_by_name: dict[str, str] = {}
    for source in aliases:
        for target in aliases:
            flow = flow_props.get((source, target), {})
            if flow.get("enabled", "").lower() != "true":
                continue
            if source == target:
                raise ConfigError(f"{source}->{target}.enabled", "a flow needs two different clusters")
            config = _flow_config(source, target, global_props, cluster_props, flow)
            other = flows_by_name.setdefault(config["name"], f"{source}->{target}")
            if other != f"{source}->{target}":
                raise ConfigError(
                    f"{source}->{target}.enabled", f"its connector name {config['name']} is also flow {other}'s"
                )
            try:
                MirrorSinkConfig.parse(config)
            except ConfigError as exc:
                exc.add_note(f"in the connector of MM2 flow {source}->{target}")
                raise
            configs.append(config)
    return configs


def load_mm2_file(path: Path) -> list[dict[str, str]]:
    """The connector configs of the MM2 properties file ``path`` (see ``connectors_from_mm2``).

    Raises:
        ConfigError: keyed ``mm2 file`` when the file cannot be read (or is not UTF-8 text); otherwise
            as ``connectors_from_mm2``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("mm2 file", f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("mm2 file", f"{path} is not UTF-8 text: {exc.reason}") from exc
    return connectors_from_mm2(parse_properties(text))


def _cluster_aliases(props: Mapping[str, str]) -> list[str]:
    """The aliases of ``clusters``, in order, each once."""
    aliases = list(dict.fromkeys(a.strip() for a in props.get("clusters", "").split(",") if a.strip()))
    if not aliases:
        raise ConfigError("clusters", "is required: the comma-separated cluster aliases, e.g. 'primary, backup'")
    for alias in aliases:
        if not _ALIAS.fullmatch(alias):
            raise ConfigError("clusters", f"invalid cluster alias {alias!r}: use letters, digits, '.', '_', '-'")
    return aliases


def _split(
    props: Mapping[str, str], aliases: list[str]
) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """The plain keys, each cluster's ``{alias}.*`` keys and each flow's ``A->B.*`` keys, prefixes stripped."""
    longest_first = sorted(aliases, key=len, reverse=True)  # "us.east.x" is alias "us.east", not "us"
    global_props: dict[str, str] = {}
    cluster_props: dict[str, dict[str, str]] = {alias: {} for alias in aliases}
    flow_props: dict[tuple[str, str], dict[str, str]] = {}
    for key, value in props.items():
        if key == "clusters":
            continue
        if "->" in key:
            source, target, prop = _flow_key(key, aliases, longest_first)
            flow_props.setdefault((source, target), {})[prop] = value
            continue
        alias = next((a for a in longest_first if key.startswith(f"{a}.")), None)
        if alias is None:
            global_props[key] = value
        else:
            cluster_props[alias][key[len(alias) + 1 :]] = value
    return global_props, cluster_props, flow_props


def _flow_key(key: str, aliases: list[str], longest_first: list[str]) -> tuple[str, str, str]:
    """``A->B.prop`` as (A, B, prop); ConfigError naming ``key`` if malformed or an alias is unknown."""
    source, _, rest = key.partition("->")
    if "." not in rest:
        raise ConfigError(key, "a flow setting has the form A->B.<property>")
    target = next((a for a in longest_first if rest.startswith(f"{a}.")), None)
    if source not in aliases or target is None:
        unknown = source if source not in aliases else rest.split(".", 1)[0]
        raise ConfigError(key, f"cluster alias {unknown!r} is not in clusters ({', '.join(aliases)})")
    prop = rest[len(target) + 1 :]
    if not prop:
        raise ConfigError(key, "a flow setting has the form A->B.<property>")
    return source, target, prop


def _flow_config(
    source: str,
    target: str,
    global_props: dict[str, str],
    cluster_props: dict[str, dict[str, str]],
    flow: dict[str, str],
) -> dict[str, str]:
    """The connector config of the enabled flow ``source->target``."""
    name = f"{source}->{target}"
    _check_connector_type(name, flow.get("connector.type", global_props.get("connector.type")))
    hints = {  # keys every flow's config derives from its clusters; the file must not set them
        "name": f"the connector of flow {name} is named {source}-to-{target}",
        "source.cluster.alias": f"it is {source}, the source of flow {name}",
        "target.cluster.alias": f"it is {target}, the target of flow {name}",
        "source.cluster.bootstrap.servers": f"set {source}.bootstrap.servers instead",
        "target.cluster.bootstrap.servers": f"set {target}.bootstrap.servers instead",
    }
    for key in (*hints, "connector.class"):
        if key in flow:
            _check_not_derived(f"{name}.{key}", flow[key], hints.get(key))
        elif key in global_props:
            _check_not_derived(key, global_props[key], hints.get(key))
    servers: dict[str, str] = {}
    for alias, role in ((source, "source"), (target, "target")):
        servers[role] = cluster_props[alias].get("bootstrap.servers", "")
        if not servers[role]:
            raise ConfigError(
                f"{alias}.bootstrap.servers", f"is required: cluster {alias} is the {role} of flow {name}"
            )
    settings = {
        **_plain_settings(global_props),
        **_cluster_settings(cluster_props[source], "source"),
        **_cluster_settings(cluster_props[target], "target"),
        **_plain_settings(flow),
    }
    derived = {
        "name": f"{source}-to-{target}",
        "connector.class": CONNECTOR_CLASS,
        "connector.type": "sink",
        "source.cluster.alias": source,
        "target.cluster.alias": target,
        "source.cluster.bootstrap.servers": servers["source"],
        "target.cluster.bootstrap.servers": servers["target"],
    }
    return {**derived, **{k: v for k, v in settings.items() if k not in derived}}


def _check_connector_type(flow: str, value: str | None) -> None:
    """mirror-sink runs sink connectors only; MM2 would run MirrorSourceConnector by default."""
    if value == "sink":
        return
    advice = (
        "mirror-sink runs KIP-656 sink connectors: set connector.type=sink "
        f"(and transaction.producer=true for exactly-once), globally or as {flow}.connector.type"
    )
    if value is None:
        raise ConfigError(
            "connector.type",
            f"flow {flow} does not set it, so MM2 would run the flow as a source connector "
            f"(MirrorSourceConnector); {advice}",
        )
    if value == "source":
        raise ConfigError("connector.type", f"flow {flow} is set to source (MM2's MirrorSourceConnector); {advice}")
    raise ConfigError("connector.type", f"flow {flow} is set to unknown type {value!r}; {advice}")


def _check_not_derived(file_key: str, value: str, hint: str | None) -> None:
    """The file must not set what each flow derives (``hint`` says why); a sink connector class is fine."""
    if hint is not None:
        raise ConfigError(file_key, f"cannot be set in an MM2 file: {hint}")
    if value not in connector_class_aliases():
        raise ConfigError(file_key, f"unknown connector class {value!r}; this worker runs {CONNECTOR_CLASS}")


def _dropped(key: str) -> bool:
    """Keys no sink connector uses: MM2-only features, internal topics, Connect worker settings."""
    return (
        key in _MM2_ONLY_KEYS
        or key in _FLOW_CONTROL_KEYS
        or (key.endswith(".replication.factor") and key != "replication.factor")
        or key == "config.providers"
        or key.startswith("config.providers.")
    )


def _plain_settings(props: Mapping[str, str]) -> dict[str, str]:
    """Plain or per-flow keys: client shorthands moved to their cluster, MM2-only keys dropped."""
    out: dict[str, str] = {}
    for key, value in props.items():
        if _dropped(key) or key == "connector.type":
            continue
        if key.startswith("consumer."):
            out[f"source.cluster.{key}"] = value
        elif key.startswith("producer."):
            out[f"target.cluster.{key}"] = value
        elif key.startswith("admin."):
            out[f"source.cluster.{key}"] = value
            out[f"target.cluster.{key}"] = value
        else:
            out[key] = value
    return out


def _cluster_settings(props: Mapping[str, str], role: str) -> dict[str, str]:
    """One cluster's ``{alias}.*`` keys (prefix stripped) for a flow where it plays ``role``.

    The source keeps its ``consumer.*`` and the target its ``producer.*`` keys (the other ones serve
    flows where the cluster plays the other role); ``admin.*`` and plain client settings apply to both.
    """
    other_client = "producer." if role == "source" else "consumer."
    out: dict[str, str] = {}
    for prop, value in props.items():
        if prop == "bootstrap.servers" or prop.startswith(other_client) or _dropped(prop):
            continue
        out[f"{role}.cluster.{prop}"] = value
    return out
