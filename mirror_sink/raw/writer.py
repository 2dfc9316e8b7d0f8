"""Raw mode's target side, built in one place: the connections, the transaction client, the produce
pipeline and the committer that drives them.

The raw path opens one per task; ``bench.ceiling`` and ``bench.markers`` open theirs the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.raw.produce.producer import ProducePipeline
from mirror_sink.raw.txn.committer import RawCommitter
from mirror_sink.raw.txn.transactions import RawTransaction, TransactionClient
from mirror_sink.raw.wire.memory_budget import MemoryBudget
from mirror_sink.raw.wire.wire import WireClient

#: The largest response the target sends the producer (Produce and coordinator answers are small).
_MAX_RESPONSE_BYTES = 16 << 20


@dataclass(frozen=True)
class RawWriter:
    """One producer's target connections (``wire``), its transaction client and the state they share
    (``transaction``), its produce pipeline and its committer."""

    wire: WireClient
    transactions: TransactionClient
    pipeline: ProducePipeline
    committer: RawCommitter

    @classmethod
    def open(
        cls,
        target_props: Mapping[str, str],
        *,
        client_id: str,
        budget: MemoryBudget,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        group_id: str,
        request_max_bytes: int,
        sync_partition: TargetPartition | None = None,
        version: int | None = None,
        wire_class: type[WireClient] = WireClient,
    ) -> RawWriter:
        """Connect to the target and build the writer; the connections are closed again if a step fails
        (e.g. RawUnsupported from a version check). The producer id is taken by ``committer.start``.

        ``version``: the transaction protocol to speak at most (None: the highest the target has);
        ``wire_class``: a ``WireClient`` subclass that watches the requests (``bench.markers``).
        """
        # Produce requests must not outlive the transaction that carries them.
        request_timeout_ms = min(30_000, transaction_timeout_ms)
        wire = wire_class(target_props, "target", client_id, _MAX_RESPONSE_BYTES, request_timeout_ms)
        try:
            transactions = TransactionClient(
                wire,
                transactional_id=transactional_id,
                transaction_timeout_ms=transaction_timeout_ms,
                group_id=group_id,
                version=version,
            )
            pipeline = ProducePipeline(wire, transactions, budget, request_max_bytes=request_max_bytes)
        except Exception:  # no connection left open
            wire.close()
            raise
        return cls(wire, transactions, pipeline, RawCommitter(transactions, pipeline, sync_partition))

    @property
    def transaction(self) -> RawTransaction:
        """The producer's and its open transaction's state (``txn.transactions.RawTransaction``)."""
        return self.transactions.transaction

    def close(self) -> None:
        """Close the target connections (an open transaction is aborted by the next InitProducerId or its timeout)."""
        self.pipeline.close()
