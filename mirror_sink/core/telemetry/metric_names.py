"""MirrorMaker 2's metric names in both of Kafka 4.3's formats (KIP-1280), and ``metric.names.formats``.

MirrorMaker 2 registers its per-partition metrics as JMX MBeans; a JMX exporter names them in
Prometheus by domain, ``type`` and attribute (lower case, ``.`` and ``-`` as ``_``), the other tags
becoming labels, as Strimzi's rules and the exporter's default both do:

- ``legacy`` (Kafka's default until 5.0 removes it): MirrorSourceMetrics' own metrics registry,
  ``kafka.connect.mirror:type=MirrorSourceConnector,source=S,target=T,topic=X,partition=P``
  -> ``kafka_connect_mirror_mirrorsourceconnector_<attribute>{source,target,topic,partition}``;
- ``new`` (Kafka 4.3 on): Connect's plugin metrics of the task (KIP-877), group ``plugins`` with the
  task's tags first, ``kafka.connect:type=plugins,connector=C,task=N,source=S,target=T,topic=X,partition=P``
  -> ``kafka_connect_plugins_<attribute>{connector,task,source,target,topic,partition}``.

The attributes (``record-count``, ``replication-latency-ms-max``, ...) are the same in both formats, and
so are the values: ``legacy,new`` doubles the series, nothing else. MirrorCheckpointConnector's
``checkpoint-latency-ms*`` move the same way (``kafka.connect.mirror:type=MirrorCheckpointConnector,
source,target,group,topic,partition`` -> ``kafka.connect:type=plugins,connector,task,source,target,
group,topic,partition``); the mirror exports no such series in either format: its checkpoint series are
its own (``mirror_sink_checkpoint_round_seconds``, ``mirror_sink_checkpoints_written_total``).
"""

from __future__ import annotations

import logging
import re
from enum import StrEnum

log = logging.getLogger(__name__)

#: The legacy names' prefix: MBean ``kafka.connect.mirror:type=MirrorSourceConnector,...``.
MM2 = "kafka_connect_mirror_mirrorsourceconnector_"
MM2_LABELS = ("source", "target", "topic", "partition")
#: KIP-1280's prefix: MBean ``kafka.connect:type=plugins,...``, Connect's task plugin tags (connector,
#: task) before MirrorMaker 2's own.
MM2_NEW = "kafka_connect_plugins_"
MM2_NEW_LABELS = ("connector", "task", *MM2_LABELS)

#: MirrorSourceConnector's per-partition attributes (the JMX names with ``-`` as ``_``), in both formats.
MM2_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("record_count", "Records mirrored to the target partition (committed) since the process started."),
    ("byte_count", "Record bytes (key + value) mirrored since the process started."),
    ("record_rate", "Records per second over the last 30 s."),
    ("byte_rate", "Bytes per second over the last 30 s."),
    ("replication_latency_ms", "Mean time from a record's timestamp to its commit, last 30 s."),
    ("replication_latency_ms_min", "Shortest time from record timestamp to commit, last 30 s."),
    ("replication_latency_ms_max", "Longest time from record timestamp to commit, last 30 s."),
    ("replication_latency_ms_avg", "Mean time from record timestamp to commit, last 30 s."),
    ("record_age_ms", "Mean age of records when the mirror read them (read time minus timestamp), last 30 s."),
    ("record_age_ms_avg", "Mean age of records when read, last 30 s."),
)


class MetricNamesFormat(StrEnum):
    """A value of MirrorMaker 2's ``metric.names.formats`` (KIP-1280, Kafka 4.3)."""

    LEGACY = "legacy"  # kafka_connect_mirror_mirrorsourceconnector_*{source,target,topic,partition}
    NEW = "new"  # kafka_connect_plugins_*{connector,task,source,target,topic,partition}


METRIC_NAMES_FORMATS_KEY = "metric.names.formats"
#: Kafka's default (MirrorSourceConfig.METRIC_NAMES_FORMAT_DEFAULT): the legacy names only.
DEFAULT_METRIC_NAMES_FORMATS: tuple[MetricNamesFormat, ...] = (MetricNamesFormat.LEGACY,)
#: The prefix of each format's series.
PREFIXES: dict[MetricNamesFormat, str] = {MetricNamesFormat.LEGACY: MM2, MetricNamesFormat.NEW: MM2_NEW}

# Kafka's LIST type splits on commas with any whitespace around them (ConfigDef.COMMA_WITH_WHITESPACE);
# Java's \s is ASCII whitespace only.
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*", re.ASCII)
#: What Java's String.trim drops at either end: every character up to and including the space.
_JAVA_TRIM = "".join(map(chr, range(0x21)))


def parse_metric_names_formats(value: str) -> tuple[MetricNamesFormat, ...]:
    """``metric.names.formats`` as Kafka 4.3 parses and validates it (``ConfigDef.Type.LIST`` with
    ``ValidList.in(false, "legacy", "new")``), with Kafka's messages; ValueError when invalid.

    Whitespace around the value and its commas is dropped; an empty value, an empty item and any item
    but ``legacy`` or ``new`` (case matters) are refused; a repeated item is dropped with a warning,
    as Kafka does. The order is kept (it changes nothing: each format is on or off).
    """
    trimmed = value.strip(_JAVA_TRIM)
    items = _COMMA_WITH_WHITESPACE.split(trimmed) if trimmed else []
    if not items:
        raise ValueError(f"must not be empty. Valid values include: [{', '.join(MetricNamesFormat)}]")
    unique = list(dict.fromkeys(items))
    if len(unique) != len(items):
        log.warning(
            "%s %r contains duplicate values; they are ignored (%s)", METRIC_NAMES_FORMATS_KEY, value, ",".join(unique)
        )
    valid = {f.value for f in MetricNamesFormat}
    for item in unique:  # in order, as ValidList checks them: the first bad item is the one named
        if not item:
            raise ValueError("values must not be empty")
        if item not in valid:
            raise ValueError(f"String must be one of: {', '.join(MetricNamesFormat)} (not {item!r})")
    return tuple(MetricNamesFormat(item) for item in unique)


def new_metric_name(legacy: str) -> str:
    """KIP-1280's name of a legacy MirrorSourceConnector series: the same attribute under ``MM2_NEW``
    (its labels are the legacy ones after ``connector`` and ``task``)."""
    if not legacy.startswith(MM2):
        raise ValueError(f"{legacy!r} is not a MirrorSourceConnector series (they start with {MM2})")
    return MM2_NEW + legacy.removeprefix(MM2)
