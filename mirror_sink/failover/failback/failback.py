"""``mirror-sink failback``: the way back after a failover, from the failover's durable record.

From the forward link's config (A to B, after a failover to B):

1. read the newest failover record of the connector on B, and check it belongs to these clusters;
2. find the records A holds past the failover's cut (never mirrored) and keep them byte for byte in a
   side topic on A, with a report (``mirror_sink.failover.failback.divergence``), and how B's topics drifted
   from A's while B ran alone (``mirror_sink.failover.failback.drift``);
3. write the reverse link's config and start its shadow group at the cut
   (``mirror_sink.failover.failback.failback_link``).

The operator then runs the reverse link until it has caught up, stops the producers on B and the
link, and finishes (``finish``): the groups move home exactly and the forward link is set to go on
after everything A holds then. Nothing is deleted anywhere, and nothing is
committed unless every check passed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.offset_syncs import OffsetIndex
from mirror_sink.failover.common.failover_record import FailoverRecord, PartitionCut, failovers_topic, latest
from mirror_sink.failover.common.groups import IDLE_STATES, list_groups
from mirror_sink.failover.common.readers import OffsetSyncReader, assigned_reader, read_failovers
from mirror_sink.failover.common.shadow_group import ShadowGroupOffsets
from mirror_sink.failover.common.translation import Translation
from mirror_sink.failover.common.watermarks import read_watermarks
from mirror_sink.failover.failback.divergence import DivergenceReport, find_and_keep
from mirror_sink.failover.failback.drift import TopicDrift, find_drift
from mirror_sink.failover.failback.failback_link import (
    FailbackRefused,
    advanced_since,
    reverse_config,
    reverse_start,
)
from mirror_sink.failover.switch.failover import Failover
from mirror_sink.failover.switch.failover_plan import FailoverPlan
from mirror_sink.failover.switch.source_fence import lift


@dataclass
class FailbackPlan:
    """What a failback found and would do."""

    record: FailoverRecord
    report: DivergenceReport
    drift: TopicDrift
    reverse: dict[str, str]
    #: Where the reverse link starts: checked (every refusal) before anything is written.
    start: ShadowGroupOffsets

    def to_json(self, report: DivergenceReport | None = None) -> str:
        """The divergence report (``report``, once kept, else the plan's count) with the topic drift."""
        found = json.loads((report or self.report).to_json())
        return json.dumps({**found, "drift": self.drift.to_dict()}, indent=2)


class ThroughForwardLink:
    """The failback's translation strategy for a group position the reverse link's offset syncs
    cannot translate: one inside what the forward link mirrored (the group had not read all of it
    when it moved home). Read backwards through the forward link's offset map, such a position is
    its record's offset on the old primary; one past the last record mirrored (at or past the
    failover's cut, ``mirrored_to``) goes to the first record that came back. None for a
    partition the failover did not cut, or a position written on the new primary after the failover
    (``target_end``), which the reverse link's own syncs translate."""

    def __init__(self, cuts: Mapping[TargetPartition, PartitionCut], forward: OffsetIndex) -> None:
        #: The failover's cut of each target partition on the new primary, and the forward link's syncs.
        self._cuts = cuts
        self._forward = forward

    def translate(self, t: Translation, index: OffsetIndex) -> int | None:
        """``t``'s offset on the old primary (``index``: the reverse link's syncs), or None."""
        came_from = TargetPartition(t.source_topic, t.target.partition)
        cut = self._cuts.get(came_from)
        part = self._forward.partitions.get(came_from)
        if cut is None or part is None or cut.mirrored_to is None or t.source_offset >= cut.target_end:
            return None
        home = part.source_of(t.source_offset)
        if home is not None and home >= cut.mirrored_to:
            return index.translate(t.target, cut.target_end)
        return home


class Failback:
    """Plans and starts the way back for one forward connector's config."""

    def __init__(self, forward: MirrorSinkConfig, say: Callable[[str], None] = print) -> None:
        self.forward = forward
        self.say = say
        self._client_id = f"{forward.name}-failback"
        self._found: FailoverRecord | None = None  # the newest failover, read once

    def plan(self) -> FailbackPlan:
        """The newest failover, checked against the clusters, where the reverse link would start, and
        the records past its cut (counted, not kept yet). Every check that can refuse the failback runs
        here, so a dry run refuses alike and a refusal has written nothing. FailbackRefused names what
        stops it."""
        record = self._record()
        self._check_clusters(record)
        reverse = reverse_config(self.forward, record)
        start = reverse_start(self.forward, MirrorSinkConfig.parse(reverse), record)
        report = self._divergence(record, keep=False)
        cfg = self.forward
        drift = find_drift(
            cfg,
            record,
            clients.admin(cfg.source_admin(), self._client_id),
            clients.admin(cfg.target_admin(), self._client_id),
            configs_synced=cfg.sync_topic_configs_enabled,
        )
        if record.write_denied:
            self.say(
                f"the failover fenced writes on the old primary's {', '.join(record.write_denied)}: the failback "
                "lifts that before its reverse link writes home (keep producers off the old primary until --finish)"
            )
        return FailbackPlan(record, report, drift, reverse, start)

    def reverse(self) -> MirrorSinkConfig:
        """The reverse link's config, as ``plan`` derived it from the newest failover."""
        return MirrorSinkConfig.parse(reverse_config(self.forward, self._record()))

    def start(self, plan: FailbackPlan) -> DivergenceReport:
        """Keep the diverged records and start the reverse link at the cut, in one transaction on the
        old primary: a failure keeps nothing and starts nothing, so the failback can simply run again.
        A write fence the failover put on the old primary (``--fence-source``) is lifted first: the
        reverse link writes home under it."""
        if plan.record.write_denied:
            lifted = lift(self.forward, plan.record.write_denied, self._client_id)
            self.say(f"lifted the failover's write fence on {', '.join(plan.record.write_denied)} ({lifted} ACLs)")
        report = self._divergence(plan.record, keep=True, start=plan.start)
        starts = len(plan.start.offsets)
        self.say(f"reverse link {plan.reverse['name']}: {starts} partitions start at the failover's cut")
        return report

    def finish(self, reverse: MirrorSinkConfig, groups: str | None, wait_caught_up_s: float, *, dry_run: bool) -> int:
        """Move the groups home once the reverse link has caught up and stopped, then start the
        forward link again after everything the old primary holds now (what came back, what
        diverged): no record crosses a link twice. Returns the number of groups moved."""
        record = self._record()
        self._refuse_running(reverse)
        self._refuse_forward_moved(record)
        forward_index = self._forward_syncs()
        cuts = {cut.target: cut for cut in record.cuts}
        policy = reverse.replication_policy()
        through_forward = ThroughForwardLink(cuts, forward_index)
        failover = Failover(reverse, self.say, untranslated=through_forward, destination="the old primary")
        plan = failover.plan(groups, wait_caught_up_s)
        homes = {
            cut.target.topic: policy.format_remote_topic(reverse.source_alias, cut.target.topic) for cut in record.cuts
        }
        home_partitions = self._home_partitions(homes)  # before any commit: a missing home topic refuses
        self.say(plan.table())
        for line in _reading_diverged(plan, cuts):
            self.say(line)
        if dry_run:
            self.say("dry run: nothing committed")
            return 0
        moved = failover.commit(plan)
        self._resume_forward(homes, home_partitions)
        return moved

    def _refuse_running(self, reverse: MirrorSinkConfig) -> None:
        """The reverse link must be stopped: a record arriving after the forward link's new start
        would cross back."""
        state = self._link_running(reverse, "old primary")
        if state is not None:
            raise FailbackRefused(
                f"the reverse link {reverse.name} is still running (group {reverse.shadow_group_id} is {state}): "
                "let it catch up, stop it, then finish"
            )

    def _refuse_forward_moved(self, record: FailoverRecord) -> None:
        """The forward link must be stopped and still at the failover's cut: its offsets are set at
        the end of the finish (a running one would refuse that commit after the groups moved), and an
        offset past the cut means it ran again, or this failback was finished already."""
        cfg = self.forward
        state = self._link_running(cfg, "new primary")
        if state is not None:
            raise FailbackRefused(
                f"the forward link {cfg.name} is running (group {cfg.shadow_group_id} is {state} on the new "
                "primary): stop it, then finish"
            )
        advanced = advanced_since(cfg, record, self._client_id)
        if advanced:
            raise FailbackRefused(
                f"the forward link {cfg.name} is past failover {record.failover_id}'s cut "
                f"({', '.join(advanced[:10])}): this failback was finished already, or the forward link ran "
                "again; nothing to finish"
            )

    def _link_running(self, link: MirrorSinkConfig, cluster: str) -> str | None:
        """The state of ``link``'s shadow group on its target (``cluster`` names it) when it has
        members; None when the link is stopped."""
        states = list_groups(clients.admin(link.target_admin(), self._client_id), cluster)
        state = states.get(link.shadow_group_id)
        return state if state is not None and state not in IDLE_STATES else None

    def _forward_syncs(self) -> OffsetIndex:
        syncs = self.forward.offset_syncs_partition
        if syncs is None:
            return OffsetIndex()
        reader = OffsetSyncReader(self.forward.target_consumer(), syncs.topic, f"{self._client_id}-syncs")
        try:
            return reader.catch_up()
        finally:
            reader.close()

    def _home_partitions(self, homes: dict[str, str]) -> dict[TargetPartition, TopicPartition]:
        """Every partition of each home topic on the old primary (those the reverse link added too),
        under its target partition; FailbackRefused when a home topic is missing."""
        cfg = self.forward
        admin = clients.admin(cfg.source_admin(), self._client_id)
        try:
            listed = admin.list_topics(timeout=30).topics
        except KafkaException as exc:
            raise FailbackRefused(f"cannot list the old primary's topics: {exc.args[0].str()}") from exc
        out: dict[TargetPartition, TopicPartition] = {}
        for target_topic, home in homes.items():
            meta = listed.get(home)
            if meta is None or meta.error is not None:
                raise FailbackRefused(f"the home topic {home} is not on the old primary ({cfg.source_bootstrap})")
            out |= {TargetPartition(target_topic, p): TopicPartition(home, p) for p in meta.partitions}
        return out

    def _resume_forward(self, homes: dict[str, str], partitions: dict[TargetPartition, TopicPartition]) -> None:
        """The forward link's shadow group goes on from the old primary's end now, with its topic ids:
        every partition of each home topic (``homes``: target topic on the new primary -> its home
        topic on the old one; ``partitions``: ``_home_partitions``)."""
        cfg = self.forward
        reader = assigned_reader(cfg.source_consumer(), f"{self._client_id}-ends")
        try:
            ends = {
                target: read_watermarks(reader, home.topic, home.partition, "old primary")[1]
                for target, home in partitions.items()
            }
        finally:
            reader.close()
        positions = [(target, homes[target.topic], end) for target, end in sorted(ends.items())]
        resume = ShadowGroupOffsets.for_link(cfg, positions, self._client_id)
        try:
            resume.commit(cfg.target_consumer(), self._client_id)
        except KafkaException as exc:
            raise FailbackRefused(
                f"groups moved home, but the forward link's group {cfg.shadow_group_id} could not be set to the old "
                f"primary's end ({exc.args[0].str()}): is the forward connector running? Stop it and finish again"
            ) from exc
        self.say(
            f"forward link {cfg.name} will go on from the old primary's end ({len(resume.offsets)} partitions): "
            "what came back and what diverged is never sent again"
        )

    def _record(self) -> FailoverRecord:
        if self._found is not None:
            return self._found
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
        self._found = record
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

    def _divergence(
        self, record: FailoverRecord, *, keep: bool, start: ShadowGroupOffsets | None = None
    ) -> DivergenceReport:
        cfg = self.forward
        old_primary = clients.admin(cfg.source_admin(), self._client_id)
        return find_and_keep(
            record,
            cfg.source_consumer(),
            cfg.source_producer(),
            old_primary,
            keep=keep,
            shadow_start=start,
            say=self.say,
        )


def _reading_diverged(plan: FailoverPlan, cuts: Mapping[TargetPartition, PartitionCut]) -> list[str]:
    """Per group and partition placed before the diverged records (it had not read everything
    mirrored yet): it reads them on the old primary before what came back. Nothing is deleted, so
    they are in its way; the report says so, group by group."""
    lines = []
    for t in plan.translations:
        cut = cuts.get(TargetPartition(t.source_topic, t.target.partition))
        if cut is None or cut.mirrored_to is None or t.target_offset is None or plan.index is None:
            continue
        first_back = plan.index.translate(t.target, cut.target_end)
        if first_back is not None and t.target_offset < first_back and cut.mirrored_to < first_back:
            lines.append(
                f"{t.group} on {t.target.topic}-{t.target.partition}: at {t.target_offset}, before the diverged "
                f"offsets {cut.mirrored_to}..{first_back - 1}: it reads those records (kept in the side topic too) "
                "after the rest of what was mirrored and before what came back"
            )
    return lines


def _cluster_id(admin: AdminClient) -> str | None:
    try:
        return str(admin.describe_cluster(request_timeout=10).result(10).cluster_id)
    except (KafkaException, TimeoutError):
        return None
