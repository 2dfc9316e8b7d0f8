"""``mirror-sink failback``: the way back after a failover, from the failover's durable record.

From the forward link's config (A to B, after a failover to B):

1. read the newest failover record of the connector on B, and check it belongs to these clusters;
2. find the records A holds past the failover's cut (never mirrored) and keep them byte for byte in a
   side topic on A, with a report (``mirror_sink.failover.divergence``);
3. write the reverse link's config and start its shadow group at the cut
   (``mirror_sink.failover.failback_link``).

The operator then runs the reverse link until it has caught up, and moves the groups home with
``mirror-sink failover`` on the reverse link's config. Nothing is deleted anywhere, and nothing is
committed unless every check passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from connectors.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core import clients
from mirror_sink.core.errors import TaskFailure
from mirror_sink.failover.divergence import DivergenceReport, find_and_keep
from mirror_sink.failover.failback_link import FailbackRefused, reverse_config, seed
from mirror_sink.failover.failover_record import FailoverRecord, failovers_topic, latest
from mirror_sink.failover.readers import read_failovers


@dataclass
class FailbackPlan:
    """What a failback found and would do."""

    record: FailoverRecord
    report: DivergenceReport
    reverse: dict[str, str]


class Failback:
    """Plans and starts the way back for one forward connector's config."""

    def __init__(self, forward: MirrorSinkConfig, say: Callable[[str], None] = print) -> None:
        self.forward = forward
        self.say = say
        self._client_id = f"{forward.name}-failback"

    def plan(self) -> FailbackPlan:
        """The newest failover, checked against the clusters, and the records past its cut (counted,
        not kept yet). FailbackRefused names what stops it."""
        record = self._record()
        self._check_clusters(record)
        report = self._divergence(record, keep=False)
        return FailbackPlan(record, report, reverse_config(self.forward, record))

    def start(self, plan: FailbackPlan) -> DivergenceReport:
        """Keep the diverged records, then start the reverse link at the cut."""
        reverse = MirrorSinkConfig.parse(plan.reverse)
        report = self._divergence(plan.record, keep=True)
        starts = seed(self.forward, reverse, plan.record)
        self.say(f"reverse link {reverse.name}: {len(starts)} partitions start at the failover's cut")
        return report

    def _record(self) -> FailoverRecord:
        cfg = self.forward
        topic = failovers_topic(cfg.source_alias)
        try:
            found = read_failovers(cfg.target_consumer(), topic, f"{self._client_id}-record")
        except TaskFailure as exc:
            raise FailbackRefused(f"no failover recorded for {cfg.name}: cannot read {topic} ({exc})") from exc
        record = latest(found, cfg.name)
        if record is None:
            raise FailbackRefused(
                f"no failover of {cfg.name} is recorded in {topic} on {cfg.target_bootstrap}: fail over first "
                "(mirror-sink failover), or give the config of the connector that failed over"
            )
        self.say(f"failover {record.failover_id} ({record.mode}, {record.time}): {len(record.cuts)} partitions")
        return record

    def _check_clusters(self, record: FailoverRecord) -> None:
        """The record must come from these clusters: the ids it holds against the ids now."""
        cfg = self.forward
        pairs = (
            ("old primary (source)", cfg.source_bootstrap, record.source_cluster_id, cfg.source_admin()),
            ("new primary (target)", cfg.target_bootstrap, record.target_cluster_id, cfg.target_admin()),
        )
        for role, bootstrap, held, props in pairs:
            if held is None:
                continue  # a disaster failover could not read the source's id
            now = _cluster_id(clients.admin(props, self._client_id))
            if now is None:
                raise FailbackRefused(f"the {role} cluster at {bootstrap} does not answer")
            if now != held:
                raise FailbackRefused(
                    f"failover {record.failover_id} was recorded for {role} cluster id {held}, but {bootstrap} is "
                    f"cluster {now}: not the clusters of that failover (nothing done)"
                )

    def _divergence(self, record: FailoverRecord, *, keep: bool) -> DivergenceReport:
        cfg = self.forward
        old_primary = clients.admin(cfg.source_admin(), self._client_id)
        return find_and_keep(record, cfg.source_consumer(), cfg.source_producer(), old_primary, keep=keep, say=self.say)


def _cluster_id(admin: AdminClient) -> str | None:
    try:
        return str(admin.describe_cluster(request_timeout=10).result(10).cluster_id)
    except (KafkaException, TimeoutError):
        return None
