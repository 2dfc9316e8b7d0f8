"""One run of a task: every client it uses, opened together and closed together.

A task replaces all of its clients when one of them becomes unusable (``RecoverableTaskFailure``);
a run is that set: the source consumer, the data path (raw or record mode, with its producer and
committer) and the coordination member of the shadow group on the target.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack

from confluent_kafka import Consumer

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.preflight import check_cluster
from mirror_sink.core.clients.source_transactions import SourceTransactions
from mirror_sink.core.interfaces.data_path import Committer
from mirror_sink.core.runtime.bounded import call_bounded
from mirror_sink.core.runtime.logs import Log
from mirror_sink.task import static_member
from mirror_sink.task.data_paths import open_data_path
from mirror_sink.task.transaction_cuts import TransactionCuts

_CLOSE_LIMIT_S = 30.0
#: A static member's close still running after this is helped by removing the member (``_close_member``).
_LEAVE_AFTER_S = 3.0


def task_slot(connector: str, worker_id: str, task_id: int) -> str:
    """The stable identity of a task slot: its transactional.id (a restart fences its predecessor)."""
    return f"{connector}-{worker_id}-{task_id}"


class TaskRun:
    """The clients of one run of a task slot, built whole here and released by ``close``."""

    def __init__(self, config: MirrorSinkConfig, slot: str, log: Log, *, record_mode: bool = False) -> None:
        self.config = config
        self.slot = slot
        self.log = log
        #: Set first thing in ``close``: group callbacks that ``close`` serves must not touch task state.
        self.closing = False
        self.transactional_id = slot if config.transaction_producer else None
        # Credentials may have changed since the connector started (a rotated password, an expired
        # certificate): say so in one line rather than as a client that never connects.
        check_cluster("source", config.source_consumer())
        check_cluster("target", config.target_producer())
        # Built whole or not at all: what opened before a failure is closed again.
        with ExitStack() as undo:
            # The source consumer reads in record mode; in raw mode it only answers offset queries
            # and takes the informational source-group commits.
            self.source: Consumer = clients.source_consumer(
                config.source_consumer(), config.source_group_id, client_id=f"{slot}-source"
            )
            undo.callback(self._close_consumer, "source", self.source)
            self.mode, self.path = open_data_path(
                config,
                client_id=slot,
                transactional_id=self.transactional_id,
                source=self.source,
                log=log,
                record_mode=record_mode,
            )
            undo.callback(self.path.close)
            #: The shadow-group member's group.instance.id (None: a dynamic member).
            static = config.shadow_group_static_membership
            self.instance_id = static_member.instance_id(config.target_admin(), slot) if static else None
            #: Set when the member must not be removed at close: this slot's next run rejoins at once.
            self.keep_membership = False
            self.member: Consumer = clients.coordination_consumer(
                config.target_consumer(), config.shadow_group_id, f"{slot}-member", self.instance_id
            )
            undo.callback(self._close_member)
            #: Where source transactions are cut whole (None: per partition, as without the option).
            whole = config.source_transactions_whole and self.transactional_id is not None
            self.cuts = open_cuts(config, slot, log) if whole else None
            undo.pop_all()
        self.committer: Committer = self.path.committer
        guarantee = (
            f"exactly-once, transactional.id {self.transactional_id}, "
            f"transactions version {self.path.transaction_version()}"
            if self.transactional_id
            else "at-least-once (idempotent producer)"
        )
        self.log.info("starting in %s mode, %s", self.mode, guarantee)

    def abort_quietly(self) -> None:
        """After a failure: abort the open cycle if there is one; the broker aborts it on timeout otherwise."""
        if self.committer.open:
            try:
                self.committer.abort()
            except Exception as exc:
                self.log.warning("abort after failure did not complete: %s (the broker aborts it on timeout)", exc)

    def close(self, *, abandon_producer: bool = False, rejoining: bool = False) -> None:
        """Close the consumers (bounded: a close can hang on a vanished coordinator) and the data path.

        ``abandon_producer`` keeps a replaced librdkafka producer alive but unused: a call may still
        be blocked in it, and destroying it under that call would crash the process. ``rejoining``:
        the next run of this slot joins at once under the same instance id, so the static member
        stays in the group and its partitions come back to it without a rebalance.
        """
        self.closing = True
        if self.cuts is not None:
            self.cuts.transactions.close()
        if rejoining:
            self.keep_membership = True
        self._close_member()
        self._close_consumer("source", self.source)
        self.path.close(abandon=abandon_producer)

    def _close_member(self) -> None:
        """Close the shadow-group member and, if static, take it out of the group: its partitions
        go to the other tasks now, and a stopped connector's group is empty (KIP-875).

        A static member closing during a rebalance waits in its JoinGroup for the rebalance to
        finish, which waits for every static member that does not rejoin until its 45 s session
        ends: stopping two workers at once took longer than a SIGTERM's grace. So a close that has
        not returned after ``_LEAVE_AFTER_S`` is helped: the member is removed (which answers its
        JoinGroup), and the close then finishes. Removing it before closing instead would let
        librdkafka, told its member is unknown, join again under the same instance id."""
        leaving = self.instance_id is not None and not self.keep_membership
        closer = threading.Thread(target=self._close_quietly, args=("member", self.member), daemon=True)
        closer.start()
        closer.join(_LEAVE_AFTER_S if leaving else _CLOSE_LIMIT_S)
        if leaving and self.instance_id is not None:
            if closer.is_alive():
                self.log.info("closing the shadow-group member waits on a rebalance: removing it from the group")
            static_member.leave(self.config.target_admin(), self.config.shadow_group_id, self.instance_id, self.log)
            closer.join(max(_CLOSE_LIMIT_S - _LEAVE_AFTER_S, 0.0))
        if closer.is_alive():
            self.log.warning(
                "closing the member consumer did not return within %.0f s (a librdkafka hang); left behind",
                _CLOSE_LIMIT_S,
            )

    def _close_quietly(self, name: str, consumer: Consumer) -> None:
        try:
            consumer.close()
        except Exception as exc:
            self.log.warning("closing the %s consumer: %s", name, exc)

    def _close_consumer(self, name: str, consumer: Consumer) -> None:
        try:
            call_bounded(f"closing the {name} consumer", consumer.close, _CLOSE_LIMIT_S)
        except Exception as exc:
            self.log.warning("closing the %s consumer: %s", name, exc)


def open_cuts(config: MirrorSinkConfig, slot: str, log: Log) -> TransactionCuts | None:
    """The reader of the source coordinator's log and the cuts made from it; None, said once, when
    the log cannot be read (no ACL, a source that hides it): the task goes on per partition."""
    transactions = SourceTransactions(config.source_consumer(), f"{slot}-transaction-log")
    availability = transactions.start()
    if not availability.readable:
        transactions.close()
        log.warning(
            "source.transactions.whole=true, but source transactions are not kept whole: %s; going on per partition",
            availability.reason,
        )
        return None
    cuts = TransactionCuts(transactions, clients.admin(config.source_admin(), f"{slot}-cuts"), log)
    log.info("source transactions are kept whole: each commit is at a cut of the source's transactions")
    return cuts
