"""``mirror-sink failover``: move consumer groups to the target at their exact positions.

Planned (the source is reachable, e.g. a migration): optionally wait until the mirror has reached the
source's last stable offsets, read every selected source group's committed offsets and translate
them exactly with the offset syncs. Disaster (the source is gone): use the newest checkpoints and say
how old they are. Either way the plan is a table, and nothing is committed unless every selected
group can be moved: a group active on the target, an unknown group or an offset the mirror has not
reached stops the whole failover with a message naming it.

``failover_plan`` decides the positions from the source side; here the target side is checked, the
groups committed and the failover recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.failover.common.compacted_topic import create_compacted
from mirror_sink.failover.common.failover_record import FailoverRecord, GroupMove, PartitionCut, failovers_topic
from mirror_sink.failover.common.groups import (
    IDLE_STATES,
    ClusterUnreachable,
    GroupActive,
    commit_offsets,
    committed_offsets,
    list_groups,
)
from mirror_sink.failover.common.translation import Translation, TranslationFallback
from mirror_sink.failover.switch.failover_plan import (
    FailoverPlan,
    FailoverPlanner,
    FailoverRefused,
    end_reader,
    stable_end,
)
from mirror_sink.failover.switch.source_fence import SourceFence, SourceFenceReport
from mirror_sink.task.takeover_fence import TakeoverFence


class Failover:
    """Plans (``FailoverPlanner``, then the target side's checks) and commits a failover for one
    connector's config, and records it on the target."""

    def __init__(
        self,
        config: MirrorSinkConfig,
        say: Callable[[str], None] = print,
        *,
        untranslated: TranslationFallback | None = None,
        destination: str = "the target",
    ) -> None:
        self.config = config
        self.say = say
        #: How messages name the cluster the groups move to ("the old primary" in a failback).
        self.destination = destination
        #: Source topics ``fence_source`` denied writes to: recorded, for the failback to lift.
        self.write_denied: tuple[str, ...] = ()
        self._client_id = f"{config.name}-failover"
        self._planner = FailoverPlanner(config, say, untranslated=untranslated)

    def fence_source(self, groups: str | None, *, dry_run: bool) -> SourceFenceReport:
        """``--fence-source``: every check that needs no cut first (nothing written when one refuses,
        the target's groups included), then the source's producers fenced (``source_fence``). The
        topics it denied writes to go into the failover record, for the failback to lift."""
        try:
            selected, partitions = self._planner.preflight(groups)
        except ClusterUnreachable as exc:
            raise FailoverRefused(
                f"the source cluster {self.config.source_alias} does not answer ({exc}): --fence-source needs it, "
                "and a disaster failover (the source gone) has nothing to fence"
            ) from exc
        self._refuse_active(set(selected))
        report = SourceFence(self.config, self.say).run(partitions, dry_run=dry_run)
        if not dry_run:
            self.write_denied = tuple(report.denied_topics)
        return report

    def mirrored_topics(self) -> list[str]:
        """The source topics the connector mirrors (the source is asked)."""
        return sorted({topic for topic, _ in self._planner.mirrored()})

    def late_records(self, plan: FailoverPlan) -> list[str]:
        """Source records written after the cut (past the source's last stable offsets the mirror was
        found at), per partition with their offsets: never lost, but the groups moved before them. They
        reach the target only while the mirror still runs; otherwise a failback keeps them."""
        reader = end_reader(self.config.source_consumer(), f"{self._client_id}-late")
        late = []
        try:
            for (topic, partition), at_cut in sorted(plan.source_cut.items()):
                end = stable_end(reader, topic, partition)
                if end > at_cut:
                    late.append(
                        f"{topic}-{partition}: offsets {at_cut}..{end - 1} ({end - at_cut} offsets) written on the "
                        "source after the cut"
                    )
        finally:
            reader.close()
        return late

    def plan(self, groups: str | None, wait_caught_up_s: float) -> FailoverPlan:
        """Decide every group's target position; FailoverRefused when any cannot be moved."""
        plan = self._planner.plan(groups, wait_caught_up_s)
        self._check_target_groups(plan)
        return plan

    def commit(self, plan: FailoverPlan) -> int:
        """Commit every group's positions; returns the number of groups moved."""
        by_group: dict[str, dict[tuple[str, int], int]] = {}
        for t in plan.translations:
            if t.target_offset is not None and (t.group, t.target) not in plan.unchanged:
                by_group.setdefault(t.group, {})[t.target] = t.target_offset
        self._refuse_active(set(by_group))  # again, just before: a consumer may have started meanwhile
        if plan.mode == "disaster":
            self._fence_the_mirror(plan)
        moved: list[str] = []
        for group, offsets in sorted(by_group.items()):
            try:
                commit_offsets(self.config.target_consumer(), group, offsets, self._client_id)
            except (GroupActive, TaskFailure) as exc:
                done = f"groups already moved: {', '.join(moved)}" if moved else "no group was moved"
                raise FailoverRefused(f"{exc} ({done}); fix it and run failover again") from exc
            moved.append(group)
            self.say(f"committed {len(offsets)} partitions of group {group} on {self.destination}")
        try:
            record = self.record(plan)
        except (KafkaException, TaskFailure) as exc:
            raise FailoverRefused(
                f"every group moved, but the failover record could not be written to the target ({exc}); run "
                "failover again to write it: the groups are in place, nothing moves twice"
            ) from exc
        cut = sum(1 for c in record.cuts if c.unmirrored)
        self.say(
            f"recorded failover {record.failover_id} in {failovers_topic(self.config.source_alias)}: "
            f"{len(record.cuts)} partitions ({cut} with source records the mirror had not copied), "
            f"{len(record.groups)} groups"
        )
        return len(moved)

    def _fence_the_mirror(self, plan: FailoverPlan) -> None:
        """Abort the transactions the connector's tasks left open on the target when the source was
        lost (its tasks died with it, or still run against nothing). Until the broker's own timeout
        (``transaction.timeout.ms``) aborts them, read_committed consumers of those partitions stop at
        their first offset, and the moved groups' own writes there stay invisible: the records the
        groups resume on, and an exactly-once application's new outputs."""
        partitions = set(plan.mirrored) | {t.target for t in plan.translations}
        log = context_logger(__name__, f"{self.config.name} failover", connector=self.config.name)
        fence = TakeoverFence(
            self.config.target_admin(), self.config.target_producer(), self.config.name, self._client_id, log
        )
        fenced = fence.fence(sorted(partitions))
        if fenced:
            self.say(f"aborted the transactions the mirror left open on {self.destination}: {', '.join(fenced)}")

    def record(self, plan: FailoverPlan) -> FailoverRecord:
        """Write what the switch was to the failovers topic on the target, in one transaction, so a
        failback does not depend on the offset syncs' retention or on the shadow group's offsets."""
        cfg = self.config
        target_admin = clients.admin(cfg.target_admin(), self._client_id)
        groups: dict[str, GroupMove] = {}
        for t in plan.translations:
            if t.target_offset is None:
                continue
            move = groups.setdefault(t.group, GroupMove(t.group, {}, {}))
            move.offsets[t.target] = t.target_offset
            if (t.group, t.target) in plan.checkpoint_age_s:
                move.checkpoint_age_s[t.target] = plan.checkpoint_age_s[(t.group, t.target)]
        record = FailoverRecord(
            cfg.name,
            FailoverRecord.new_id(),
            plan.mode,
            datetime.now(UTC).isoformat(timespec="milliseconds"),
            cfg.source_alias,
            _cluster_id(clients.admin(cfg.source_admin(), self._client_id)) if plan.mode == "planned" else None,
            _cluster_id(target_admin),
            tuple(self._cuts(plan)),
            tuple(groups.values()),
            self.write_denied,
        )
        topic = failovers_topic(cfg.source_alias)
        create_compacted(target_admin, topic, cfg.offset_syncs_replication_factor)
        producer = clients.target_producer(
            cfg.target_producer(), self._client_id, f"{cfg.name}-failover-record", cfg.transaction_timeout_ms
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        for key, value in record.records():
            producer.produce(topic, value, key, partition=0)
        producer.commit_transaction(60)
        return record

    def _cuts(self, plan: FailoverPlan) -> list[PartitionCut]:
        """Where every mirrored partition stood: the shadow group's offset, where the next record
        would land, the target's end and (planned) the source's."""
        cfg = self.config
        if not plan.mirrored:
            return []
        shadow = committed_offsets(
            cfg.target_consumer(), cfg.shadow_group_id, list(plan.mirrored), self._client_id, "target"
        )
        target = end_reader(cfg.target_consumer(), self._client_id)
        source = end_reader(cfg.source_consumer(), self._client_id) if plan.mode == "planned" else None
        try:
            cuts = []
            for tp, source_topic in sorted(plan.mirrored.items()):
                mirrored_to = shadow.get(tp)
                lands = None
                if plan.index is not None and mirrored_to is not None:
                    lands = plan.index.translate(tp, mirrored_to)
                source_end = stable_end(source, source_topic, tp.partition) if source is not None else None
                cuts.append(
                    PartitionCut(
                        tp, source_topic, mirrored_to, lands, stable_end(target, tp.topic, tp.partition), source_end
                    )
                )
            return cuts
        finally:
            target.close()
            if source is not None:
                source.close()

    # -- the target side -------------------------------------------------------------------------
    def _refuse_active(self, groups: set[str]) -> None:
        states = list_groups(clients.admin(self.config.target_admin(), self._client_id), "target")
        active = sorted(g for g in groups if states.get(g, "UNKNOWN") not in IDLE_STATES)
        if active:
            detail = ", ".join(f"{g} ({states[g]})" for g in active)
            raise FailoverRefused(
                f"consumer groups active on {self.destination}: {detail}; stop their consumers there first "
                "(nothing committed)"
            )

    def _check_target_groups(self, plan: FailoverPlan) -> None:
        self._refuse_active({t.group for t in plan.translations})
        by_group: dict[str, list[Translation]] = {}
        for t in plan.translations:
            by_group.setdefault(t.group, []).append(t)
        for group, ts in by_group.items():
            target = self.config.target_consumer()
            current = committed_offsets(target, group, [t.target for t in ts], self._client_id, "target")
            for t in ts:
                have = current.get(t.target)
                if have is not None and t.target_offset is not None and have >= t.target_offset:
                    plan.unchanged.add((group, t.target))


def _cluster_id(admin: AdminClient) -> str | None:
    """The cluster's id, or None when it does not answer in time."""
    try:
        return str(admin.describe_cluster(request_timeout=10).result(10).cluster_id)
    except (KafkaException, TimeoutError):
        return None
