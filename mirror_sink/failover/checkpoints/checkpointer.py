"""The connector's checkpoint emitter: MirrorMaker 2 checkpoints of the source groups, exact, every few seconds.

Each round reads the offset syncs committed since the last one, the committed offsets of the source
groups that ``groups`` / ``groups.exclude`` select, and writes a checkpoint for every position the
mirror has already passed (so every checkpoint is exact) and that changed. With
``sync.group.offsets.enabled`` it also commits the translated offsets into the same-named groups on
the target, only while such a group has no active members, and never backwards.

The default interval is 5 s, not MirrorMaker 2's 60 s: a round costs a few small requests, and the
interval bounds how far behind a disaster failover's checkpoints can be. Its clients live as long as
the emitter (one consumer per group, ``GroupMembers``), and a round that finds no new sync and every
group's offsets as the last complete round left them stops there: it would write nothing.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.checkpoints import Checkpoint, checkpoints_topic
from mirror_sink.core.formats.offset_syncs import OffsetIndex
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.core.runtime.repeating_job import RepeatingJob
from mirror_sink.core.telemetry.metrics import checkpoint_round_seconds, checkpoints_written_total
from mirror_sink.failover.common.groups import IDLE_STATES, GroupActive, GroupMembers, list_groups
from mirror_sink.failover.common.readers import OffsetSyncReader
from mirror_sink.failover.common.translation import Translation, source_partitions, translate_group

#: Offsets per group and partition remembered from earlier rounds (a minute at the default interval).
_RECENT_OFFSETS = 12


class CheckpointEmitter:
    """Checkpoints (and group offset sync) for one connector, on a thread of its own."""

    def __init__(self, config: MirrorSinkConfig) -> None:
        syncs = config.offset_syncs_partition
        if syncs is None:
            raise ValueError("checkpoints need offset syncs (emit.offset-syncs.enabled and transaction.producer)")
        self.config = config
        self.log = context_logger(__name__, f"{config.name} checkpoints", connector=config.name)
        self.topic = checkpoints_topic(config.source_alias)
        self._client_id = f"{config.name}-checkpoints"
        self._syncs_topic = syncs.topic
        self._syncs = OffsetSyncReader(config.target_consumer(), syncs.topic, f"{self._client_id}-syncs")
        self._source_admin = clients.admin(config.source_admin(), self._client_id)
        self._target_admin = clients.admin(config.target_admin(), self._client_id)
        self._source_groups = GroupMembers(config.source_consumer(), self._client_id, "source")
        self._target_groups = GroupMembers(config.target_consumer(), self._client_id, "target")
        self._undelivered: list[str] = []
        self._producer = clients.target_producer(
            {**config.target_producer(), "on_delivery": self._delivered},
            f"{self._client_id}-producer",
            None,
            config.transaction_timeout_ms,
        )
        self._filter = config.group_filter()
        #: The mirror's own groups are never checkpointed: on the target, its source group's name is
        #: the shadow group's (by default both are connect-{name}).
        self._own_groups = {config.shadow_group_id, config.source_group_id}
        self._emitted: dict[tuple[str, TargetPartition], Checkpoint] = {}
        #: Each group's offsets of the last rounds, per partition, newest last.
        self._recent: dict[tuple[str, TargetPartition], deque[int]] = {}
        self._job = RepeatingJob(
            f"checkpoints-{config.name}",
            self._timed_round,
            config.emit_checkpoints_interval_s,
            self.log,
            failure=f"checkpoint round failed (retrying every {config.emit_checkpoints_interval_s:.0f} s)",
            finish=self._close,
        )
        self._next_group_sync = 0.0
        #: What the last complete round read (the syncs reader, its records read, each group's
        #: offsets) and its translations: the same again means the same checkpoints, all written.
        self._last_read: tuple[object, ...] | None = None
        self._last_translations: list[Translation] = []
        #: After each complete round: the selected source groups, how many of them have an exact
        #: checkpoint on every mirrored partition they committed, and when (monotonic); None before.
        self.coverage: tuple[int, int, float] | None = None
        self.rounds = 0
        self.rounds_unchanged = 0
        self.checkpoints_written = 0
        self.groups_synced = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Emit every ``emit.checkpoints.interval.seconds`` until ``stop``."""
        self._job.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the thread to end after its current step; it releases the clients itself (never
        under a call still running in them)."""
        if not self._job.stop(timeout_s):
            self.log.warning("checkpoint round still running after %.0f s; it stops at its next step", timeout_s)

    def is_alive(self) -> bool:
        """True while the thread runs."""
        return self._job.is_alive()

    def _timed_round(self) -> None:
        with checkpoint_round_seconds.labels(self.config.name).time():
            self.run_once()

    def _close(self) -> None:
        self._syncs.close()
        self._source_groups.close()
        self._target_groups.close()
        self._producer.flush(10)

    def _delivered(self, err: object, _msg: object) -> None:
        if err is not None:
            self._undelivered.append(str(err))

    # -- one round -----------------------------------------------------------------------------
    def run_once(self, *, reread: bool = False) -> list[Translation]:
        """Read new syncs and the groups' offsets; write changed checkpoints; sync groups when due."""
        previous, self._last_read = self._last_read, None  # set again only when this round completes
        index = self._syncs.catch_up()
        self.rounds += 1
        if not index.partitions:
            return []
        partitions = list(source_partitions(index))
        listed = list_groups(self._source_admin, "source")
        groups = sorted(g for g in listed if self._filter.accepts(g) and g not in self._own_groups)
        self._source_groups.keep_only(groups)
        offsets = []
        for group in groups:
            self._job.check_stop()
            offsets.append(self._source_groups.committed(group, partitions))
        read = (self._syncs, self._syncs.records_read, groups, offsets)
        if not reread and read == previous:
            # No new sync and no group moved: translating again gives the same checkpoints, every
            # one already written (a round that failed to write them set nothing here).
            self.rounds_unchanged += 1
            self._sync_groups_when_due(self._last_translations)
            self._last_read = read
            self._covered(groups, self._last_translations)
            return self._last_translations
        translations: list[Translation] = []
        for group, committed in zip(groups, offsets, strict=True):
            translations += translate_group(group, committed, index)
        if self._forgot_too_much(translations, reread=reread):
            return self.run_once(reread=True)  # read again from the beginning with the lower floors
        changed = {}
        for t in translations:
            cp = self._exact_checkpoint(t, index)
            if cp is not None and self._emitted.get((cp.group, cp.target)) != cp:
                changed[(cp.group, cp.target)] = cp
        if changed:
            self._job.check_stop()
            self._undelivered.clear()
            for cp in changed.values():
                self._produce(cp)
            remaining = self._producer.flush(30)
            if remaining or self._undelivered:
                # Not remembered as written: the next round writes them again.
                raise RuntimeError(
                    f"{remaining} checkpoints unacknowledged after 30 s, delivery errors: {self._undelivered[:3]}"
                )
            self._emitted.update(changed)
            self.checkpoints_written += len(changed)
            checkpoints_written_total.labels(self.config.name).inc(len(changed))
            self.log.debug("wrote %d checkpoints for %d groups", len(changed), len(groups))
        self._sync_groups_when_due(translations)
        if not reread:  # a round that read the syncs again may find more to read next time: never skipped
            self._last_read, self._last_translations = read, translations
        self._covered(groups, translations)
        return translations

    def _covered(self, groups: list[str], translations: list[Translation]) -> None:
        """Note which groups a failover could place exactly now (the readiness score's input)."""
        missing = {t.group for t in translations if t.target_offset is None}
        self.coverage = (len(groups), len(groups) - len(missing), time.monotonic())

    def _sync_groups_when_due(self, translations: list[Translation]) -> None:
        if self.config.sync_group_offsets and time.monotonic() >= self._next_group_sync:
            self._next_group_sync = time.monotonic() + self.config.sync_group_offsets_interval_s
            self.sync_groups(translations)

    def _exact_checkpoint(self, t: Translation, index: OffsetIndex) -> Checkpoint | None:
        """The checkpoint of the group's offset if the mirror has passed it; else of the newest offset
        the group had in recent rounds that the mirror has passed (a consumer that keeps up with the
        source stays just ahead of the mirror, and would otherwise never get a new checkpoint)."""
        recent = self._recent.get((t.group, t.target))
        if recent is None:
            recent = self._recent[(t.group, t.target)] = deque(maxlen=_RECENT_OFFSETS)
        if not recent or recent[-1] != t.source_offset:
            recent.append(t.source_offset)
        if t.target_offset is not None:
            return t.checkpoint()
        for earlier in reversed(recent):
            target = index.translate(t.target, earlier)
            if target is not None:
                return Checkpoint(t.group, t.target, earlier, target)
        return None

    def _forgot_too_much(self, translations: list[Translation], *, reread: bool) -> bool:
        """Keep only what the groups' offsets need; True when a group needs what was forgotten.

        The index keeps, per partition, only runs at or above the lowest offset any group has there
        (memory stays bounded however long the syncs topic is). A group that appears below that (new,
        or reset backwards) makes the emitter read the syncs topic again from its beginning, once.
        """
        index = self._syncs.index
        floors = {tp: end for tp in index.partitions if (end := index.mirrored_to(tp)) is not None}
        for t in translations:
            part = index.partitions.get(t.target)
            if part is not None and part.oldest is not None and t.source_offset < part.oldest:
                continue  # below every sync there is: it must not pin the floor (and the memory) down
            # Keep what the group's recent offsets need too (checkpoints of an offset it had just before).
            low = min([t.source_offset, *self._recent.get((t.group, t.target), ())])
            floors[t.target] = min(floors.get(t.target, low), low)
        lost = [
            t
            for t in translations
            if t.target_offset is None
            and (part := index.partitions.get(t.target)) is not None
            and part.oldest is not None
            and part.source_start is not None
            and part.oldest <= t.source_offset < part.source_start
        ]
        if lost and not reread:
            self.log.info("%d group offsets are below the offset syncs kept in memory: reading them again", len(lost))
            self._syncs.close()
            self._syncs = OffsetSyncReader(self.config.target_consumer(), self._syncs_topic, f"{self._client_id}-syncs")
            self._syncs.floors = floors
            return True
        self._syncs.floors = floors
        index.forget_below(floors)
        return False

    def _produce(self, cp: Checkpoint) -> None:
        while True:
            try:
                self._producer.produce(self.topic, cp.encode_value(), cp.encode_key(), partition=0)
                return
            except BufferError:
                self._producer.poll(0.05)

    def sync_groups(self, translations: list[Translation]) -> None:
        """Commit the translated offsets into idle same-named target groups, never backwards."""
        by_group: dict[str, list[Translation]] = defaultdict(list)
        for t in translations:
            if t.target_offset is not None:
                by_group[t.group].append(t)
        if not by_group:
            return
        states = list_groups(self._target_admin, "target")
        self._target_groups.keep_only(g for g in by_group if states.get(g, "UNKNOWN") in IDLE_STATES)
        for group, ts in by_group.items():
            self._job.check_stop()
            if states.get(group, "UNKNOWN") not in IDLE_STATES:
                self.log.debug("group %s is %s on the target: not synced", group, states[group])
                continue
            current = self._target_groups.committed(group, [t.target for t in ts])
            moves: dict[tuple[str, int], int] = {
                t.target: t.target_offset
                for t in ts
                if t.target_offset is not None and t.target_offset > current.get(t.target, -1)
            }
            try:
                self._target_groups.commit(group, moves)
            except GroupActive:
                self.log.debug("group %s became active on the target: not synced", group)
                continue
            if moves:
                self.groups_synced += 1
                self.log.info("synced group %s on the target: %d partitions moved forward", group, len(moves))
