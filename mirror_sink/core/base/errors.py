"""Errors that name what is wrong, for operators, and the one classification every layer uses.

What happens next depends only on the class:

- ``TaskFailure`` (fatal): the task ends FAILED with the message and trace;
- ``RecoverableTaskFailure``: the task's clients are replaced, a bounded number of times;
- ``AbortCycle``: the open cycle is aborted and re-read from the committed offsets;
- ``Retriable``: the same call is tried again with backoff (``mirror_sink.core.runtime.retry``);
- ``SwitchToRecordMode``: raised between cycles (nothing open), the task reopens its clients in
  record mode (``mirror.mode=auto`` only), not counted as a failure.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is missing or invalid; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


class TaskFailure(RuntimeError):
    """A task cannot go on (fenced, not authorized, a target partition missing, ...)."""


class RecoverableTaskFailure(TaskFailure):
    """The task's clients are unusable, but a fresh set may work (its producer fenced by its own
    transaction timing out during a broker outage, say): the task recreates them and goes on."""


class ClientWedged(RecoverableTaskFailure):
    """A librdkafka call did not return within its bound; the client must be replaced."""


class SwitchToRecordMode(Exception):
    """Raw mode measured the source's batches too small to forward profitably: record mode it is."""


class AbortCycle(Exception):
    """The cycle's work is void (aborted, or not acknowledged): rewind to the committed offsets."""


class Retriable(Exception):
    """Try again after a backoff (``mirror_sink.core.runtime.retry``); past the deadline it is raised as it is."""


class SourceTruncated(TaskFailure):
    """A source partition's log diverged from what was mirrored (KIP-320's diverging epoch): an unclean
    leader election truncated records the target already holds."""


class SourceOffsetOutOfRange(TaskFailure):
    """The source no longer has the offset a data path asked for: deleted by retention or
    DeleteRecords, a topic deleted and created again, a log truncated. Never skipped: the task checks
    what happened to every partition it reads and fails naming each (``mirror_sink.task.source_continuity``)."""

    def __init__(self, topic: str, partition: int, offset: int | None, detail: str) -> None:
        at = f"offset {offset}" if offset is not None else "the next offset to mirror"
        super().__init__(f"source partition {topic}-{partition}: {at} is no longer on the source: {detail}")
        self.topic, self.partition, self.offset = topic, partition, offset
