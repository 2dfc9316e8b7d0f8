"""Where ``mirror-sink failover`` moves each consumer group: the plan, decided from the source side.

Planned (the source is reachable, e.g. a migration): optionally wait until the mirror has reached the
source's last stable offsets, read every selected source group's committed offsets and translate
them exactly with the offset syncs. Disaster (the source is gone): use the newest checkpoints and say
how old they are. Either way the plan is a table; a group that cannot be moved (an unknown group, an
offset the mirror has not reached) refuses the whole failover with a message naming it.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.clients import LIBRDKAFKA_LOG
from mirror_sink.core.formats.checkpoints import checkpoints_topic
from mirror_sink.core.formats.group_cuts import GroupCut
from mirror_sink.core.formats.offset_syncs import OffsetIndex
from mirror_sink.failover.common.groups import ClusterUnreachable, committed_offsets, list_groups
from mirror_sink.failover.common.readers import OffsetSyncReader, read_checkpoints, read_group_cuts
from mirror_sink.failover.common.translation import Translation, TranslationFallback
from mirror_sink.topics.source_discovery import SourceDiscovery

_SOURCE_PROBE_S = 10.0


class FailoverRefused(Exception):
    """The failover cannot be done as asked; nothing was committed."""


@dataclass
class FailoverPlan:
    """What the failover would commit, and how it knows."""

    mode: str  # "planned" (exact, from the offset syncs) or "disaster" (from the newest checkpoints)
    translations: list[Translation]
    #: Per group and partition: mirrored records at or after its source offset (what it has left to read).
    behind: dict[tuple[str, TargetPartition], int] = field(default_factory=dict)
    checkpoint_age_s: dict[tuple[str, TargetPartition], float] = field(default_factory=dict)
    unchanged: set[tuple[str, TargetPartition]] = field(default_factory=set)  # target already there or ahead
    #: The offset syncs read (None: syncs off), and every mirrored target partition with its source
    #: topic: what the failover record describes.
    index: OffsetIndex | None = None
    mirrored: dict[TargetPartition, str] = field(default_factory=dict)
    #: Planned mode: each mirrored source partition's last stable offset when the mirror was found
    #: there (or last compared): what the source had at the cut.
    source_cut: dict[tuple[str, int], int] = field(default_factory=dict)

    def table(self) -> str:
        """The plan as a table for operators."""
        header = ("group", "topic", "partition", "source offset -> target offset", "records behind")
        rows: list[tuple[str, ...]] = [header]
        if self.mode == "disaster":
            rows = [(*header, "checkpoint age")]
        for t in self.translations:
            arrow = f"{t.source_offset} -> {t.target_offset if t.target_offset is not None else '?'}"
            if (t.group, t.target) in self.unchanged:
                arrow += " (target group already there or ahead: left)"
            behind = self.behind.get((t.group, t.target))
            lag = "" if behind is None else str(behind)
            row: tuple[str, ...] = (t.group, t.target.topic, str(t.target.partition), arrow, lag)
            if self.mode == "disaster":
                row = (*row, f"{self.checkpoint_age_s.get((t.group, t.target), 0.0):.0f} s")
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)


class FailoverPlanner:
    """Decides every selected group's target position, from the offset syncs while the source
    answers, else from the newest checkpoints; FailoverRefused when any group cannot be moved."""

    def __init__(
        self,
        config: MirrorSinkConfig,
        say: Callable[[str], None] = print,
        *,
        untranslated: TranslationFallback | None = None,
    ) -> None:
        self.config = config
        self.say = say
        self._client_id = f"{config.name}-failover"
        #: Answers a position the offset syncs and checkpoints cannot (a failback's positions still
        #: inside the data the forward link mirrored), or None.
        self._untranslated = untranslated

    def plan(self, groups: str | None, wait_caught_up_s: float) -> FailoverPlan:
        """Every selected group's target position, before the target side is checked."""
        pattern = re.compile(groups) if groups else None
        source_admin = clients.admin(self.config.source_admin(), self._client_id)
        try:
            source_groups = list_groups(source_admin, "source", _SOURCE_PROBE_S)
        except ClusterUnreachable as exc:
            # Only when no source broker answers: an error the source did answer (an ACL, say)
            # must not quietly turn an exact failover into one from older checkpoints.
            self.say(f"source cluster {self.config.source_bootstrap} unreachable ({exc}): using the latest checkpoints")
            return self._from_checkpoints(pattern)
        return self._from_syncs(pattern, source_groups, wait_caught_up_s, source_admin)

    def preflight(self, groups: str | None) -> tuple[list[str], list[tuple[str, int]]]:
        """The checks of a planned failover that need no cut, and nothing written: the offset syncs on
        and the selected source groups (FailoverRefused otherwise, ClusterUnreachable without the
        source). Returns the selected groups and the mirrored source partitions, for the source fence,
        which must not write before a refusal that could have been foreseen."""
        if self.config.offset_syncs_partition is None:
            raise FailoverRefused(
                "offset syncs are off (emit.offset-syncs.enabled=false or transaction.producer=false)"
            )
        pattern = re.compile(groups) if groups else None
        source_admin = clients.admin(self.config.source_admin(), self._client_id)
        selected = self._select(pattern, list_groups(source_admin, "source", _SOURCE_PROBE_S))
        return selected, self.mirrored(source_admin)

    def mirrored(self, source_admin: AdminClient | None = None) -> list[tuple[str, int]]:
        """Every source partition the connector mirrors (the source is asked)."""
        admin = source_admin or clients.admin(self.config.source_admin(), self._client_id)
        return sorted(self._mapped_partitions(admin))

    # -- planned: exact, from the offset syncs ---------------------------------------------------
    def _from_syncs(
        self, pattern: re.Pattern[str] | None, source_groups: dict[str, str], wait_s: float, source_admin: AdminClient
    ) -> FailoverPlan:
        syncs = self.config.offset_syncs_partition
        if syncs is None:
            raise FailoverRefused(
                "offset syncs are off (emit.offset-syncs.enabled=false or transaction.producer=false)"
            )
        mapped = self._mapped_partitions(source_admin)
        source_cut = self._wait_caught_up(mapped, wait_s)
        reader = OffsetSyncReader(self.config.target_consumer(), syncs.topic, f"{self._client_id}-syncs")
        try:
            index = reader.catch_up()
        finally:
            reader.close()
        selected = self._select(pattern, source_groups)
        translations: list[Translation] = []
        for group in selected:
            source = self.config.source_consumer()
            committed = committed_offsets(source, group, list(mapped), self._client_id, "source")
            if not committed:
                self.say(f"group {group} has no committed offset on a mirrored partition: nothing to move")
            for (topic, partition), offset in sorted(committed.items()):
                target = mapped[(topic, partition)]
                translations.append(Translation(group, topic, target, offset, index.translate(target, offset)))
        translations = self._fill_from_checkpoints(translations)
        if self._untranslated is not None:
            fallback = self._untranslated
            translations = [
                t if t.target_offset is not None else dataclasses.replace(t, target_offset=fallback.translate(t, index))
                for t in translations
            ]
        missing = [t for t in translations if t.target_offset is None]
        across = [(t, gap) for t in missing if (gap := index.gap_in_the_way(t.target, t.source_offset)) is not None]
        if across:
            where = ", ".join(
                f"{t.group} on {t.source_topic}-{t.target.partition} at {t.source_offset} (offsets {a}..{b - 1} were "
                "skipped: deleted on the source before they were mirrored)"
                for t, (a, b) in across[:10]
            )
            raise FailoverRefused(
                f"no exact target offset for: {where}. The group's next records were never mirrored, so no target "
                "offset is exact; offset.gap.policy=skip recorded the ranges in the gaps topic. Move such a group "
                "by hand past the gap if losing those records is acceptable"
            )
        if missing:
            where = ", ".join(
                f"{t.group} on {t.source_topic}-{t.target.partition} at {t.source_offset}" for t in missing[:10]
            )
            raise FailoverRefused(
                f"no exact target offset for: {where} (the mirror has not reached it yet: let it catch up or use "
                "--wait-caught-up SECONDS; or its offset syncs expired (offset-syncs.topic.retention.ms) and no "
                "checkpoint holds that offset)"
            )
        plan = FailoverPlan("planned", translations)
        plan.behind = _records_behind(translations, index)
        plan.index = index
        plan.mirrored = {target: topic for (topic, _), target in mapped.items()}
        plan.source_cut = source_cut
        return plan

    def _mapped_partitions(self, source_admin: AdminClient) -> dict[tuple[str, int], TargetPartition]:
        """Every source partition the connector mirrors, with its target partition."""
        return {
            (m.source_topic, p): TargetPartition(m.target_topic, p)
            for m in SourceDiscovery(self.config, source_admin).discover().values()
            for p in range(m.source_partitions)
        }

    def _fill_from_checkpoints(self, translations: list[Translation]) -> list[Translation]:
        """Where the syncs no longer translate a group's offset (expired), a checkpoint written for
        that very offset while they did is just as exact."""
        if all(t.target_offset is not None for t in translations) or not self.config.emit_checkpoints:
            return translations
        topic = checkpoints_topic(self.config.source_alias)
        try:
            stored = read_checkpoints(self.config.target_consumer(), topic, f"{self._client_id}-checkpoints")
        except TaskFailure:
            return translations
        out = []
        for t in translations:
            s = stored.get((t.group, t.target))
            exact = t.target_offset is None and s is not None and s.checkpoint.upstream_offset == t.source_offset
            out.append(dataclasses.replace(t, target_offset=s.checkpoint.downstream_offset) if exact and s else t)
        return out

    def _wait_caught_up(
        self, mapped: dict[tuple[str, int], TargetPartition], wait_s: float
    ) -> dict[tuple[str, int], int]:
        """Until the shadow group holds each mapped partition's last stable offset (or ``wait_s`` is up);
        the source's last stable offsets it compared last: the cut, on the source's side."""
        deadline = Deadline(wait_s)
        source = end_reader(self.config.source_consumer(), self._client_id)
        try:
            while True:
                shadow = committed_offsets(
                    self.config.target_consumer(),
                    self.config.shadow_group_id,
                    list(mapped.values()),
                    self._client_id,
                    "target",
                )
                behind = {}
                ends = {}
                for (topic, partition), target in mapped.items():
                    end = ends[(topic, partition)] = stable_end(source, topic, partition)
                    if end > shadow.get(target, 0):
                        behind[f"{topic}-{partition}"] = end - shadow.get(target, 0)
                if not behind:
                    self.say("the mirror has reached the source's last stable offsets")
                    return ends
                if deadline.passed:
                    if wait_s > 0:
                        worst = ", ".join(f"{k} by {v}" for k, v in sorted(behind.items())[:10])
                        raise FailoverRefused(
                            f"the mirror did not reach the source's last stable offsets within {wait_s:.0f} s: {worst}"
                        )
                    total = sum(behind.values())
                    self.say(f"note: the mirror is {total} offsets behind the source on {len(behind)} partitions")
                    return ends
                self.say(f"waiting for the mirror: {sum(behind.values())} offsets behind on {len(behind)} partitions")
                time.sleep(min(2.0, deadline.left(0.1)))
        finally:
            source.close()

    def _select(self, pattern: re.Pattern[str] | None, groups: dict[str, str]) -> list[str]:
        # The mirror's own groups never move: on the target, its source group's name is the shadow group's.
        own = {self.config.shadow_group_id, self.config.source_group_id}
        groups = {g: state for g, state in groups.items() if g not in own}
        if pattern is not None:
            selected = sorted(g for g in groups if pattern.fullmatch(g))
            if not selected:
                known = ", ".join(sorted(groups)[:20]) or "none"
                raise FailoverRefused(f"no consumer group on the source matches {pattern.pattern!r} (groups: {known})")
            return selected
        group_filter = self.config.group_filter()
        selected = sorted(g for g in groups if group_filter.accepts(g))
        if not selected:
            raise FailoverRefused("no consumer group on the source passes groups / groups.exclude")
        return selected

    # -- disaster: from the newest checkpoints ---------------------------------------------------
    def _from_checkpoints(self, pattern: re.Pattern[str] | None) -> FailoverPlan:
        topic = checkpoints_topic(self.config.source_alias)
        try:
            stored = read_checkpoints(self.config.target_consumer(), topic, f"{self._client_id}-checkpoints")
        except TaskFailure as exc:
            raise FailoverRefused(f"the source is unreachable and the checkpoints cannot be read: {exc}") from exc
        at_cuts = self._group_cuts()
        groups = {g for g, _ in stored} | {g for g, _ in at_cuts}
        selected = set(self._select(pattern, dict.fromkeys(groups, "UNKNOWN")))
        syncs = self.config.offset_syncs_partition
        index = None
        if syncs is not None:  # the syncs live on the target, which is still here
            reader = OffsetSyncReader(self.config.target_consumer(), syncs.topic, f"{self._client_id}-syncs")
            try:
                index = reader.catch_up()
            finally:
                reader.close()
        now_ms = time.time() * 1000
        plan = FailoverPlan("disaster", [])
        keys = sorted(k for k in set(stored) | set(at_cuts) if k[0] in selected)
        exact_at_cut: dict[tuple[str, TargetPartition], int] = {}
        for key, stored_cut in at_cuts.items():
            found = index.translate(key[1], stored_cut.source_offset) if index is not None else None
            if found is not None:
                exact_at_cut[key] = found
        # A group is placed from its cuts on every partition or on none: a cut's position on one
        # partition beside a checkpoint's on another would match no single moment of its outputs.
        at_cut_groups = {g for g, _ in keys if all(k in exact_at_cut for k in keys if k[0] == g)}
        for group in sorted({g for g, _ in at_cuts} - at_cut_groups):
            if group in selected:
                self.say(f"note: {group} has no exact position at a cut on every partition: placed from checkpoints")
        placed_at_cuts: set[str] = set()
        for group, target in keys:
            at_cut = at_cuts.get((group, target)) if group in at_cut_groups else None
            exact = exact_at_cut.get((group, target))
            if at_cut is not None and exact is not None:
                # An exactly-once application's position at a cut: it goes with the outputs the target holds.
                plan.translations.append(Translation(group, at_cut.source_topic, target, at_cut.source_offset, exact))
                plan.checkpoint_age_s[(group, target)] = max(0.0, (now_ms - at_cut.time_ms) / 1000)
                placed_at_cuts.add(group)
                continue
            s = stored.get((group, target))
            if s is None:
                continue
            cp = s.checkpoint
            upstream_topic = target.topic  # the source name is not in a checkpoint; show the target's
            plan.translations.append(
                Translation(group, upstream_topic, target, cp.upstream_offset, cp.downstream_offset)
            )
            plan.checkpoint_age_s[(group, target)] = max(0.0, (now_ms - s.timestamp_ms) / 1000)
        oldest = max(plan.checkpoint_age_s.values(), default=0.0)
        self.say(
            f"using {len(plan.translations)} checkpoints of {len(selected)} groups; the oldest is {oldest:.0f} s old"
        )
        if placed_at_cuts:
            self.say(
                f"placed at a cut of the source's transactions, with the outputs they match: "
                f"{', '.join(sorted(placed_at_cuts))}"
            )
        if index is not None:
            plan.index = index
            plan.behind = _records_behind(plan.translations, index)
            plan.mirrored = dict(index.source_topics)
        return plan

    def _group_cuts(self) -> dict[tuple[str, TargetPartition], GroupCut]:
        """Source groups' positions at cuts (``source.transactions.whole``), or none."""
        where = self.config.group_cuts_partition
        if where is None:
            return {}
        try:
            return read_group_cuts(self.config.target_consumer(), where.topic, f"{self._client_id}-group-cuts")
        except TaskFailure as exc:
            self.say(f"note: the group positions at cuts cannot be read ({exc}); using checkpoints alone")
            return {}


def _records_behind(translations: list[Translation], index: OffsetIndex) -> dict[tuple[str, TargetPartition], int]:
    out = {}
    for t in translations:
        part = index.partitions.get(t.target)
        if part is not None:
            out[(t.group, t.target)] = part.records_from(t.source_offset)
    return out


def end_reader(props: dict[str, str], client_id: str) -> Consumer:
    """A read_committed consumer for ``stable_end`` (its group is never joined)."""
    return Consumer(
        {
            **props,
            "logger": LIBRDKAFKA_LOG,
            "client.id": client_id,
            "group.id": f"{client_id}-probe",
            "isolation.level": "read_committed",
        }
    )


def stable_end(consumer: Consumer, topic: str, partition: int) -> int:
    """The partition's last stable offset (a read_committed consumer's watermark query returns it)."""
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30, cached=False)
    except KafkaException as exc:
        raise TaskFailure(f"cannot read the end offset of {topic}-{partition}: {exc.args[0].str()}") from exc
    return int(end)
