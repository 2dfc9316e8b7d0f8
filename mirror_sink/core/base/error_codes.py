"""Kafka protocol error codes by name, and the one classification both modes act on.

librdkafka reports broker errors with the same numbers (``KafkaError.UNSTABLE_OFFSET_COMMIT == 88``),
so record mode, raw mode, the herder and Spark all decide with these tables:

- ``FATAL``: no retry can fix it (the task fails, naming the resource);
- ``FENCED``: this producer epoch is over (new clients, whose init fences the old ones);
- ``NOT_OWNER``: the shadow group moved the partitions on (abort the cycle, serve the rebalance);
- ``RETRIABLE``: ask again after a metadata or coordinator refresh.
"""

from __future__ import annotations

from enum import IntEnum


class KafkaErrorCode(IntEnum):
    """The protocol error codes mirror-sink acts on (Kafka's ``Errors`` enum, same numbers)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    ILLEGAL_GENERATION = 22
    UNKNOWN_MEMBER_ID = 25
    REBALANCE_IN_PROGRESS = 27
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    INVALID_PRODUCER_EPOCH = 47
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    OFFSET_NOT_AVAILABLE = 78
    FENCED_INSTANCE_ID = 82
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    INCONSISTENT_TOPIC_ID = 103
    FETCH_SESSION_TOPIC_ID_ERROR = 106

    @classmethod
    def of(cls, code: int) -> KafkaErrorCode | int:
        """The named code, or the bare number for one this table does not name."""
        try:
            return cls(code)
        except ValueError:
            return code


E = KafkaErrorCode

#: This producer epoch is over: a newer holder of the transactional.id, or our own timed-out transaction.
FENCED = frozenset({E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED})

#: The shadow group's generation moved on: the cycle's partitions belong to another member now.
NOT_OWNER = frozenset({E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS, E.FENCED_INSTANCE_ID})

#: After these, asking again (after a metadata or coordinator refresh) can succeed.
RETRIABLE = frozenset(
    {
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.LEADER_NOT_AVAILABLE,
        E.NOT_LEADER_OR_FOLLOWER,
        E.REQUEST_TIMED_OUT,
        E.REPLICA_NOT_AVAILABLE,
        E.COORDINATOR_LOAD_IN_PROGRESS,
        E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_COORDINATOR,
        E.CONCURRENT_TRANSACTIONS,
        E.KAFKA_STORAGE_ERROR,
        E.FENCED_LEADER_EPOCH,
        E.UNKNOWN_LEADER_EPOCH,
        E.OFFSET_NOT_AVAILABLE,
    }
)

#: The coordinator moved or is not ready: look it up again before the retry.
COORDINATOR_MOVED = frozenset({E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR})

#: A write no retry can fix: the task fails naming the partition.
FATAL_WRITE = frozenset(
    {
        E.CORRUPT_MESSAGE,
        E.MESSAGE_TOO_LARGE,
        E.RECORD_LIST_TOO_LARGE,
        E.TOPIC_AUTHORIZATION_FAILED,
        E.CLUSTER_AUTHORIZATION_FAILED,
        E.INVALID_TIMESTAMP,  # outside the target topic's message.timestamp.*.max.ms
        E.UNSUPPORTED_FOR_MESSAGE_FORMAT,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        E.UNSUPPORTED_COMPRESSION_TYPE,
        E.INVALID_RECORD,
    }
)
