"""Which source partitions a task mirrors, and from where: decided by the shadow group on the target.

The run's coordination member is subscribed to the mirrored target topics with every assigned
partition paused (it never fetches). Owning target partition ``T-p`` means mirroring source
partition ``S-p``. Rebalance callbacks run only inside ``poll``, which the cycle calls only between
transactions, so a cycle never loses its partitions halfway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from confluent_kafka import Consumer, KafkaError, TopicPartition

from mirror_sink.core.base.errors import RecoverableTaskFailure, SourceOffsetOutOfRange
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition, fmt_offsets, fmt_partitions
from mirror_sink.core.clients.authorization import AuthorizationFailure, principal_of
from mirror_sink.core.formats.commit_metadata import commit_metadata
from mirror_sink.core.formats.group_metadata import GroupMetadata
from mirror_sink.core.formats.skipped_ranges import Recreation, SkippedRange
from mirror_sink.task.commit_state import CommitState
from mirror_sink.task.source_continuity import Crossings, StoredOffset
from mirror_sink.task.start_offsets import StartOffsetResolver
from mirror_sink.task.takeover_fence import TakeoverFence
from mirror_sink.task.task_run import TaskRun
from mirror_sink.topics.source_discovery import TopicMapping

RebalanceCallback = Callable[[Consumer, list[TopicPartition]], None]


class Ownership:
    """The run's assignment, the source partitions it reads, and the offset committed for each."""

    def __init__(self, run: TaskRun, mappings: Mapping[str, TopicMapping]) -> None:
        self.run = run
        self.log = run.log
        self.resolver = StartOffsetResolver(
            run.config, shadow=run.member, source=run.source, client_id=run.slot, log=run.log
        )
        self.mappings: dict[str, TopicMapping] = dict(mappings)
        self._limit_batches()
        self.owned: set[TargetPartition] = set()
        #: Source partitions read now, each with the target partition it is mirrored to.
        self.reading: dict[SourcePartition, TargetPartition] = {}
        #: Assignments and revocations served so far (for metrics).
        self.rebalances = 0
        #: The committed offsets and leader epochs of the partitions read, the starts no commit has
        #: saved and the crossings none has recorded: changed here as partitions come and go, and by
        #: the cycle's commits.
        self.state = CommitState(run.log)
        #: The id of each source topic read, as it was when its partitions were assigned: committed
        #: beside every offset, so a topic created again under the same name is known by its new id.
        self.topic_ids: dict[str, str] = {}
        #: The member's group metadata when ownership was last confirmed: it fences the next commit.
        self.metadata: GroupMetadata | None = None
        self._callback_error: Exception | None = None
        cfg = run.config
        #: Aborts what a dead or frozen slot left open on partitions this task is assigned (exactly once only).
        self.fence = (
            TakeoverFence(cfg.target_admin(), cfg.target_producer(), cfg.name, run.slot, run.log)
            if run.transactional_id is not None
            else None
        )

    # -- membership ---------------------------------------------------------------------------
    def subscribe(self) -> None:
        """Join the shadow group for the mapped target topics (nothing to join without topics)."""
        topics = sorted(self.mappings)
        if not topics:
            self.log.warning("no topics to mirror yet; waiting for the connector to find some")
            return
        self.run.member.subscribe(
            topics,
            on_assign=self._guarded(self._on_assign),
            on_revoke=self._guarded(self._on_revoke),
            on_lost=self._guarded(self._on_lost),
        )
        self.log.info("joined shadow group %s for %d target topics", self.run.config.shadow_group_id, len(topics))

    def update(self, mappings: Mapping[str, TopicMapping]) -> None:
        """New topic mappings from the connector (between cycles): resubscribe if the topics changed."""
        if dict(mappings) == self.mappings:
            return
        resubscribe = set(mappings) != set(self.mappings)
        self.mappings = dict(mappings)
        self._limit_batches()
        if resubscribe:
            self.subscribe()
        self._sync_reading()

    def _limit_batches(self) -> None:
        """Tell the data path each target topic's max.message.bytes, where the mappings carry it."""
        limits = {t: m.target_max_message_bytes for t, m in self.mappings.items()}
        self.run.path.limit_batches({t: limit for t, limit in limits.items() if limit is not None})

    def serve(self) -> None:
        """Serve the group between cycles, then note the generation that owns the next cycle's reads."""
        self.poll(0)
        self.metadata = GroupMetadata.of(self.run.member)

    def poll(self, timeout: float) -> None:
        """Poll the member: rebalance callbacks run here, and a callback's failure is raised here."""
        msg = self.run.member.poll(timeout)
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            raise error
        err = msg.error() if msg is not None else None
        if err is not None:
            if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                cfg = self.run.config
                raise AuthorizationFailure(
                    "target", "READ", "GROUP", [cfg.shadow_group_id], principal_of(cfg.target_consumer()),
                    cause="joining the shadow group",
                )  # fmt: skip
            if err.fatal() or err.code() == KafkaError._FATAL:
                # A static member's FENCED_INSTANCE_ID comes as _FATAL with the fatal flag unset, and
                # librdkafka raises it too after its own rejoin replaced its previous member (seen
                # in CI with a coordinator killed): the next run joins again under the same id.
                raise RecoverableTaskFailure(f"shadow group member failed: {err.str()}")
            self.log.warning("shadow group member: %s", err.str())

    # -- group callbacks (inside poll) ----------------------------------------------------------
    def _guarded(self, callback: RebalanceCallback) -> RebalanceCallback:
        """Keep a callback's exception for ``poll`` to raise: through librdkafka's C layer it would
        come out as a non-Exception object that no handler catches."""

        def run(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            if self.run.closing:
                # close() serves the member's revocation (from another thread): the run is over,
                # its state is never touched again.
                return
            try:
                callback(consumer, partitions)
            except Exception as exc:
                self._callback_error = self._callback_error or exc

        return run

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.rebalances += 1
        consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)  # ownership only: this member never fetches the target
        self.owned = {TargetPartition(tp.topic, tp.partition) for tp in partitions}
        self.log.info("assigned %d target partitions: %s", len(partitions), fmt_partitions(self.owned))
        if self.fence is not None:
            self.fence.fence(self.owned)
        self._sync_reading()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.rebalances += 1
        self._give_up(partitions, "revoked")
        consumer.unassign()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.log.warning("group membership lost (session expired?); dropping %d partitions", len(partitions))
        self._give_up(partitions, "lost")
        consumer.unassign()

    def _give_up(self, partitions: list[TopicPartition], why: str) -> None:
        if self.run.committer.open:
            # Only reachable from close() after a failure: a cycle is never open while the group is served.
            self.run.committer.abort()
        self.owned -= {TargetPartition(tp.topic, tp.partition) for tp in partitions}
        self.log.info("%s %d target partitions", why, len(partitions))
        self._sync_reading()

    def commit_metadata(self, source: SourcePartition, leader_epoch: int | None, *, at_cut: bool = False) -> str:
        """What is committed beside the shadow offset of ``source``: its topic's id, the leader
        epoch of the record before the offset, and whether it is at a cut of the source's transactions."""
        return commit_metadata(self.topic_ids.get(source.topic), leader_epoch, at_cut=at_cut)

    def out_of_range(self, exc: SourceOffsetOutOfRange) -> Crossings:
        """A fetch found its offset gone: raise what happened to every partition read (with the
        topic ids the committed offsets belong to), or ``exc`` itself when the check finds nothing.

        Return what the policies let the task go past instead (``offset.gap.policy=skip``: ranges
        deleted before they were mirrored; ``topic.recreation.policy=continue``: a recreated topic).
        Their partitions' committed offsets move to where they go on (where the rewind after the
        aborted cycle reads from), and the next commit records them.
        """
        committed = self.state.committed.items()
        stored = {tp: StoredOffset(offset, self.topic_ids.get(tp.topic)) for tp, offset in committed}
        crossings = self.resolver.check(stored)
        if not crossings:
            raise exc
        self._cross(crossings)
        return crossings

    def confirm_topic_ids(self, sources: Iterable[SourcePartition]) -> Crossings:
        """Raise ``SourceDiscontinuity`` naming both ids when a topic of ``sources`` was deleted and
        created again since its partitions were assigned; with ``topic.recreation.policy=continue``,
        return the recreated topic's partitions, moved to its start (the cycle must then abort).

        Record mode asks before each commit: librdkafka fetches by topic name, so a topic created
        again and grown past the position would otherwise be read on at the old offsets. (Raw mode
        fetches by topic id and is refused by the broker instead.) A topic that does not exist now
        proves nothing either way: its records in the cycle were read before it was deleted.
        """
        topics = sorted({tp.topic for tp in sources})
        now = self.resolver.topic_ids_now(topics)
        changed = {t for t in topics if t in now and self.topic_ids.get(t) not in (None, now[t])}
        if not changed:
            return Crossings([], [])
        stored = {
            tp: StoredOffset(offset, self.topic_ids.get(tp.topic))
            for tp, offset in self.state.committed.items()
            if tp.topic in changed
        }
        crossings = self.resolver.check(stored, now)
        self._cross(crossings)
        return crossings

    def _cross(self, crossings: Crossings) -> None:
        """Go past what the policies allow: continue recreated topics from their new start (read by
        the new topic id from here on), step over deleted ranges."""
        for event in crossings.recreated:
            tp = event.source
            start = crossings.start(tp, 0)
            self.topic_ids[tp.topic] = event.new_topic_id
            self.run.path.unassign([tp])
            self.run.path.assign({tp: start}, {tp: self.reading[tp]}, {tp.topic: event.new_topic_id})
            self._continue(event, start)
        self._skip(crossings.skipped)

    def _continue(self, event: Recreation, start: int | None = None) -> None:
        self.state.continue_recreated(event, self.reading.get(event.source, "its target partition"), start)

    def _skip(self, ranges: list[SkippedRange]) -> None:
        for gap in ranges:
            self.state.skip(gap)

    # -- what to read, and from where -----------------------------------------------------------
    def _sync_reading(self) -> None:
        """Make the source assignment match the owned target partitions that exist on the source."""
        desired: dict[SourcePartition, TargetPartition] = {}
        for target in self.owned:
            mapping = self.mappings.get(target.topic)
            if mapping is not None and target.partition < mapping.source_partitions:
                desired[SourcePartition(mapping.source_topic, target.partition)] = target
        removed = [tp for tp in self.reading if tp not in desired]
        if removed:
            self.run.path.unassign(removed)
            for tp in removed:
                del self.reading[tp]
            self.state.forget(removed)
        added = {source: target for source, target in desired.items() if source not in self.reading}
        if not added:
            return
        starts = self.resolver.resolve({target: source for source, target in added.items()})
        self.topic_ids.update(starts.topic_ids)
        self.run.path.assign(starts.offsets, added, starts.topic_ids, starts.leader_epochs)
        self.reading.update(added)
        self.state.started(starts.offsets, starts.leader_epochs, starts.unsaved)
        for event in starts.recreated.values():
            self._continue(event)
        self._skip(list(starts.skipped.values()))
        known = ", ".join(f"{tp} {epoch}" for tp, epoch in sorted(starts.leader_epochs.items()))
        epochs = f" (source leader epochs: {known})" if known else ""
        self.log.info("reading %d source partitions from %s%s", len(added), fmt_offsets(starts.offsets), epochs)
