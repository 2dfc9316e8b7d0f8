"""How the new primary's topics drifted from the old primary's while it ran alone.

After a failover from A to B, B is where topics change: partitions added, configs altered, topics
created that A never had. Failback compares the topics it moves home (the failover record's target
topics) with their home topics on A, and B's other topics with A's list, and says for each
difference whether the reverse link reconciles it or the operator must:

- partitions B added: the reverse link creates them on A (its provisioner grows every target topic
  to its source's count) and mirrors them from their first record, which was written on B;
- a copied config (``COPIED_CONFIGS``) that differs: the reverse link sets B's value on A with
  ``sync.topic.configs.enabled`` (the default), else only reported;
- a topic only on B that no mirror made (not a remote topic by the replication policy's names): not
  in the reverse link (its topics are exactly what the failover moved); reported, to be mirrored
  home by a connector of its own if it should go.

Nothing here changes either cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.settings.topic_filter import TopicFilter
from mirror_sink.failover.common.failover_record import FailoverRecord
from mirror_sink.topics.topic_provisioner import COPIED_CONFIGS, DEFAULT_TARGET_CONFIGS

_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class PartitionsAdded:
    """A moved topic with more partitions on the new primary than its home topic has."""

    topic: str  # on the new primary
    home: str  # on the old primary
    new_primary: int
    old_primary: int


@dataclass(frozen=True)
class ConfigChanged:
    """A copied config whose value on the new primary differs from its home topic's."""

    topic: str
    home: str
    key: str
    new_primary: str | None  # None: the broker's default
    old_primary: str | None


@dataclass
class TopicDrift:
    """Every difference failback found, and who reconciles it."""

    partitions: list[PartitionsAdded] = field(default_factory=list)
    configs: list[ConfigChanged] = field(default_factory=list)
    only_on_new_primary: list[str] = field(default_factory=list)
    configs_synced: bool = True  # the reverse link's sync.topic.configs.enabled

    def lines(self) -> list[str]:
        """For operators: one line per difference, saying what happens to it."""
        out = [
            f"{p.topic}: {p.new_primary} partitions on the new primary, {p.old_primary} on {p.home}: "
            f"the reverse link adds {p.new_primary - p.old_primary} on the old primary"
            for p in self.partitions
        ]
        fate = (
            "the reverse link sets it there" if self.configs_synced else "not synced (sync.topic.configs.enabled=false)"
        )
        out += [
            f"{c.topic}: {c.key}={_shown(c.new_primary)} on the new primary, "
            f"{_shown(c.old_primary)} on {c.home}: {fate}"
            for c in self.configs
        ]
        out += [
            f"{t}: only on the new primary, not in the reverse link: mirror it with a connector of its own to keep it"
            for t in self.only_on_new_primary
        ]
        return out

    def text(self) -> str:
        """The lines under a heading, or one line saying nothing drifted."""
        lines = self.lines()
        if not lines:
            return "topic drift: none (same partitions and copied configs; no topic only on the new primary)"
        return "\n".join(["topic drift while the new primary ran:", *(f"  {line}" for line in lines)])

    def to_dict(self) -> dict[str, object]:
        """For the JSON report."""
        return {
            "partitions_added": [asdict(p) for p in self.partitions],
            "configs_changed": [asdict(c) for c in self.configs],
            "only_on_new_primary": list(self.only_on_new_primary),
            "configs_synced": self.configs_synced,
        }

    def to_json(self) -> str:
        """``to_dict`` as JSON."""
        return json.dumps(self.to_dict(), indent=2)


def _shown(value: str | None) -> str:
    return "(default)" if value is None else value


def find_drift(
    forward: MirrorSinkConfig,
    record: FailoverRecord,
    old_primary: AdminClient,
    new_primary: AdminClient,
    *,
    configs_synced: bool = True,
) -> TopicDrift:
    """Compare what ``record`` moved (on ``new_primary``) with its home topics on ``old_primary``."""
    policy = forward.replication_policy()
    moved = {cut.target.topic: cut.source_topic for cut in record.cuts}
    on_new, on_old = _partition_counts(new_primary, "new primary"), _partition_counts(old_primary, "old primary")
    drift = TopicDrift(configs_synced=configs_synced)
    for topic, home in sorted(moved.items()):
        if topic in on_new and home in on_old and on_new[topic] > on_old[home]:
            drift.partitions.append(PartitionsAdded(topic, home, on_new[topic], on_old[home]))
    present = {t: h for t, h in moved.items() if t in on_new and h in on_old}
    new_configs = _copied_configs(new_primary, present, "new primary")
    old_configs = _copied_configs(old_primary, present.values(), "old primary")
    for topic, home in sorted(present.items()):
        theirs, ours = new_configs.get(topic, {}), old_configs.get(home, {})
        for key in COPIED_CONFIGS:
            if theirs.get(key) != ours.get(key):
                drift.configs.append(ConfigChanged(topic, home, key, theirs.get(key), ours.get(key)))
    # What a mirror would pick up at all: not excluded (internal topics), not this project's own.
    accepts = TopicFilter.from_config(".*", forward.topics_exclude).accepts
    drift.only_on_new_primary = sorted(
        t
        for t in on_new
        if t not in moved
        and t not in on_old
        and policy.topic_source(t) is None  # a copy from some cluster: no producer of B wrote it
        and accepts(t)
        and not t.startswith(("_", "mirror-sink-"))
    )
    return drift


def _partition_counts(admin: AdminClient, role: str) -> dict[str, int]:
    try:
        topics = admin.list_topics(timeout=_TIMEOUT_S).topics
    except KafkaException as exc:
        raise TaskFailure(f"cannot list the topics of the {role}: {exc.args[0].str()}") from exc
    return {name: len(meta.partitions) for name, meta in topics.items()}


def _copied_configs(admin: AdminClient, topics: Iterable[str], role: str) -> Mapping[str, dict[str, str]]:
    """Each topic's copied configs set on the topic itself (not broker defaults); the mirror's own
    default codec (``compression.type=producer``) counts as unset."""
    names = sorted(set(topics))
    if not names:
        return {}
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in names])
    out: dict[str, dict[str, str]] = {}
    for resource, future in futures.items():
        try:
            entries = future.result(_TIMEOUT_S)
        except KafkaException as exc:
            raise TaskFailure(
                f"cannot describe the configs of {resource.name} on the {role}: {exc.args[0].str()}"
            ) from exc
        out[resource.name] = {
            k: e.value
            for k, e in entries.items()
            if k in COPIED_CONFIGS
            and e.value is not None
            and ConfigSource(e.source) is ConfigSource.DYNAMIC_TOPIC_CONFIG
            and DEFAULT_TARGET_CONFIGS.get(k) != e.value
        }
    return out
