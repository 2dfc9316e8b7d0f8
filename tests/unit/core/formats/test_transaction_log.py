"""The ``__transaction_state`` decoder, against records encoded here from Kafka's published schemas.

The integration test (test_source_transactions) decodes what real brokers wrote; these pin each
field, both value versions, tagged fields (known and unknown) and the errors.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror_sink.core.formats.transaction_log import (
    TransactionLogFormatError,
    TransactionStatus,
    coordinator_partition,
    decode_key,
    decode_value,
    java_string_hash,
)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(txn_id: str) -> bytes:
    raw = txn_id.encode()
    return struct.pack(">hh", 0, len(raw)) + raw


def _value(
    version: int,
    pid: int,
    epoch: int,
    status: int,
    partitions: dict[str, list[int]] | None,
    *,
    tags: dict[int, bytes] | None = None,
) -> bytes:
    flexible = version >= 1
    out = bytearray(struct.pack(">hqhib", version, pid, epoch, 60000, status))

    def length(n: int) -> bytes:
        return _uvarint(n + 1) if flexible else struct.pack(">i", n)

    if partitions is None:
        out += _uvarint(0) if flexible else struct.pack(">i", -1)
    else:
        out += length(len(partitions))
        for topic, ids in partitions.items():
            raw = topic.encode()
            out += (_uvarint(len(raw) + 1) if flexible else struct.pack(">h", len(raw))) + raw
            out += length(len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
            if flexible:
                out += _uvarint(0)
    out += struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_000)
    if flexible:
        fields = sorted((tags or {}).items())
        out += _uvarint(len(fields)) + b"".join(_uvarint(t) + _uvarint(len(d)) + d for t, d in fields)
    return bytes(out)


def test_a_key_is_the_transactional_id() -> None:
    assert decode_key(_key("ledger-writer-7")) == "ledger-writer-7"
    assert decode_key(struct.pack(">h", 1) + b"\x00\x01x") is None, "another record kind: not ours"
    assert decode_key(None) is None


@pytest.mark.parametrize("version", [0, 1])
def test_a_prepare_commit_lists_every_partition(version: int) -> None:
    raw = _value(version, 4711, 3, 2, {"orders": [0, 5], "payments": [2], "__consumer_offsets": [17]})
    value = decode_value(raw)
    assert value is not None
    assert (value.producer_id, value.producer_epoch, value.timeout_ms) == (4711, 3, 60000)
    assert value.status is TransactionStatus.PREPARE_COMMIT and value.status.prepared
    assert value.partitions == {("orders", 0), ("orders", 5), ("payments", 2), ("__consumer_offsets", 17)}
    assert (value.last_update_ms, value.start_ms) == (1_700_000_000_123, 1_700_000_000_000)
    assert (value.previous_producer_id, value.next_producer_id, value.client_transaction_version) == (-1, -1, 0)


def test_version_1_reads_its_tags_and_skips_unknown_ones() -> None:
    tags = {0: struct.pack(">q", 11), 1: struct.pack(">q", 12), 2: struct.pack(">h", 2), 9: b"\x01\x02\x03"}
    value = decode_value(_value(1, 4711, 8, 4, {}, tags=tags))
    assert value is not None and value.status is TransactionStatus.COMPLETE_COMMIT and value.status.complete
    assert (value.previous_producer_id, value.next_producer_id, value.client_transaction_version) == (11, 12, 2)
    assert value.partitions == frozenset()


def test_an_empty_state_has_a_null_partition_list_and_a_tombstone_is_none() -> None:
    for version in (0, 1):
        value = decode_value(_value(version, 1, 0, 0, None))
        assert value is not None and value.status is TransactionStatus.EMPTY and not value.partitions
    assert decode_value(None) is None


def test_what_cannot_be_read_is_named() -> None:
    with pytest.raises(TransactionLogFormatError, match="version 7"):
        decode_value(struct.pack(">h", 7) + b"\x00" * 40)
    with pytest.raises(TransactionLogFormatError, match="unknown TransactionStatus 42"):
        decode_value(_value(0, 1, 0, 42, {}))
    with pytest.raises(TransactionLogFormatError, match="more wanted"):
        decode_value(_value(1, 1, 0, 2, {"orders": [1]})[:-12])


@given(
    version=st.integers(0, 1),
    pid=st.integers(0, 2**63 - 1),
    epoch=st.integers(0, 2**15 - 1),
    status=st.sampled_from([1, 2, 3]),
    partitions=st.dictionaries(
        st.text("abcdefghij.-_", min_size=1, max_size=20), st.lists(st.integers(0, 2**31 - 1), max_size=20), max_size=8
    ),
)
def test_any_value_decodes_to_what_was_encoded(
    version: int, pid: int, epoch: int, status: int, partitions: dict[str, list[int]]
) -> None:
    value = decode_value(_value(version, pid, epoch, status, partitions))
    assert value is not None
    assert (value.producer_id, value.producer_epoch, int(value.status)) == (pid, epoch, status)
    assert value.partitions == {(t, p) for t, ids in partitions.items() for p in ids}


def test_the_coordinator_partition_is_javas_string_hash() -> None:
    # Java: "".hashCode() == 0, "a".hashCode() == 97, "polygenelubricants".hashCode() == Integer.MIN_VALUE.
    assert (java_string_hash(""), java_string_hash("a"), java_string_hash("hello")) == (0, 97, 99162322)
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert coordinator_partition("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    assert coordinator_partition("a", 50) == 47


def test_a_transaction_is_visible_everywhere_or_nowhere_between_two_reads_of_the_log() -> None:
    """Prepared.visible: the rule a cut is checked by (mirror_sink.task.transaction_cuts)."""
    from mirror_sink.core.clients.source_transactions import Prepared, SourceTransaction

    txn = SourceTransaction("app", 7, 0, True, frozenset({("a", 0), ("b", 1)}), False, 0, 1)
    done = Prepared(txn, log_partition=3, prepared_at=10, completed_at=12)
    # CompleteCommit written before the first read: every marker was written.
    assert done.visible(before={3: 13}, after={3: 20}) is True
    # PrepareCommit written after the second read: no marker yet.
    assert done.visible(before={3: 5}, after={3: 10}) is False
    # Anything else may have fallen while the markers were written.
    assert done.visible(before={3: 12}, after={3: 20}) is None
    assert Prepared(txn, 3, 10).visible(before={3: 30}, after={3: 40}) is None, "not completed yet"
    assert done.visible(before={}, after={}) is False, "a partition never read counts as not yet prepared"


def _prepared(partitions: set[tuple[str, int]], prepared_at: int, completed_at: int | None) -> Any:
    from mirror_sink.core.clients.source_transactions import Prepared, SourceTransaction

    txn = SourceTransaction("app", 7, 0, True, frozenset(partitions), False, 0, 1)
    return Prepared(txn, log_partition=0, prepared_at=prepared_at, completed_at=completed_at)


def test_a_partial_cut_holds_back_only_what_a_transaction_mid_markers_ties_together() -> None:
    """transaction_cuts.held_back: the partitions that stay at their limits so the others can move."""
    from mirror_sink.task.transaction_cuts import held_back

    owned = {("a", 0), ("b", 0), ("c", 0), ("d", 0)}
    old = ({0: 10}, {0: 12})  # the snapshot every current limit came from
    now = ({0: 20}, {0: 22})
    bases = dict.fromkeys(owned, old)
    mid = _prepared({("a", 0), ("b", 0)}, prepared_at=19, completed_at=None)  # markers on their way now
    # Completed between the old snapshot and now: below the LSO now, above it at the old snapshot.
    since = _prepared({("b", 0), ("c", 0)}, prepared_at=14, completed_at=15)
    # Visible at both: already below the old limits everywhere.
    before = _prepared({("c", 0), ("d", 0)}, prepared_at=3, completed_at=4)
    assert held_back([mid], owned, bases, now) == {("a", 0), ("b", 0)}
    # b stays at the old limit, where `since` is not visible: c must stay with it, else `since`
    # would be whole on c and missing on b.
    assert held_back([mid, since], owned, bases, now) == {("a", 0), ("b", 0), ("c", 0)}
    assert held_back([mid, since, before], owned, bases, now) == {("a", 0), ("b", 0), ("c", 0)}
    # Nothing mid-markers: nothing held.
    assert held_back([since, before], owned, bases, now) == set()
    # A transaction with one partition of this task only ties nothing.
    assert held_back([_prepared({("a", 0), ("x", 9)}, 19, None)], owned, bases, now) == set()
