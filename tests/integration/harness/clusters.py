"""A cluster as tests reach it: its address with full rights, group offsets committed as an
application would, and its state before and after a command that must write nothing."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from devkafka.data import Address, client_settings, end_offsets
from devkafka.endpoints import KafkaEndpoint
from mirror_sink.core.base.errors import Retriable
from mirror_sink.core.runtime.retry import retry_call


def address(endpoint: KafkaEndpoint) -> Address:
    """How to reach ``endpoint`` with full rights (a secured cluster's super user settings)."""
    settings: Address | None = getattr(endpoint, "client_config", None)
    return settings or endpoint.bootstrap_servers


#: A group coordinator that is loading, moving or not reached yet: asked again.
_COORDINATOR_MOVING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}


def commit_group_offsets(bootstrap: Address, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` as a consumer application would (not a member: no join).
    A coordinator still loading its partition on a busy machine (COORDINATOR_LOAD_IN_PROGRESS, seen
    in CI) is asked again, as a client would, for up to 30 s (the project's retry policy)."""
    consumer = Consumer({**client_settings(bootstrap), "group.id": group, "enable.auto.commit": False})

    def attempt() -> None:
        try:
            consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0]
            if err.retriable() or err.code() in _COORDINATOR_MOVING:
                raise Retriable(err.str()) from exc
            raise

    try:
        retry_call(attempt, f"committing offsets of {group}", deadline_s=30, max_delay_s=0.5)
    finally:
        consumer.close()


def cluster_state(
    cluster: KafkaEndpoint, token: str, besides: Collection[str] = ()
) -> dict[str, dict[tuple[str, int], int]]:
    """What a command could have written on ``cluster``, for the topics and groups whose names hold
    ``token`` (a test's unique suffix): every partition's end, aborted writes included, and every
    group's committed offsets, but for the groups in ``besides`` (written by something else running,
    such as a mirror's own lag group on the source)."""
    admin = AdminClient(client_settings(address(cluster)))
    topics = sorted(t for t in admin.list_topics(timeout=30).topics if token in t)
    state: dict[str, dict[tuple[str, int], int]] = {}
    for topic in topics:
        ends = end_offsets(address(cluster), topic, isolation="read_uncommitted")
        state[f"topic {topic}"] = {(topic, p): end for p, end in ends.items()}
    listed = admin.list_consumer_groups(request_timeout=30).result(30)
    for group in sorted(g.group_id for g in listed.valid if token in g.group_id and g.group_id not in besides):
        request = [ConsumerGroupTopicPartitions(group)]
        stored = admin.list_consumer_group_offsets(request)[group].result(30)
        state[f"group {group}"] = {(tp.topic, tp.partition): tp.offset for tp in stored.topic_partitions}
    return state


def assert_refused_alike(
    run: Callable[..., subprocess.CompletedProcess[str]],
    config: dict[str, str],
    workdir: Path,
    *args: str,
    says: str,
    clusters: Sequence[KafkaEndpoint],
    token: str,
    besides: Collection[str] = (),
) -> None:
    """A refusal writes nothing, and its dry run foresees it: ``run(config, workdir, *args)`` exits 1
    saying ``says``, so does the same command with ``--dry-run``, and no topic end or group offset
    named with ``token`` moved on any of ``clusters`` (the groups in ``besides`` aside: a mirror
    still running writes them)."""
    before = [cluster_state(c, token, besides) for c in clusters]
    for extra in ((), ("--dry-run",)):
        result = run(config, workdir, *args, *extra)
        shown = " ".join([*args, *extra])
        assert result.returncode == 1, f"{shown}: exit {result.returncode}\n{result.stdout}{result.stderr}"
        assert says in result.stdout, f"{shown}: not refused with {says!r}\n{result.stdout}{result.stderr}"
    after = [cluster_state(c, token, besides) for c in clusters]
    for cluster, was, now in zip(clusters, before, after, strict=True):
        assert now == was, f"a refused {' '.join(args)} wrote to {cluster.bootstrap_servers}: {was} -> {now}"
