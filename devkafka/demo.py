"""``mirror-sink-dev demo``: the main job on the embedded default (two local clusters).

Starts the local ``source`` and ``target`` clusters, writes a batch of orders into the source in
transactions (some aborted, as real producers leave them), mirrors them exactly once with a
MirrorSinkConnector, shows progress, and checks the target record for record before stopping.
Each run adds a new batch, so a second run shows the mirror resuming from the shadow group.
"""

from __future__ import annotations

import argparse
import json
import time

from confluent_kafka import KafkaException

from api.server import BackgroundServer
from devkafka.data import (
    ProduceSpec,
    Rec,
    committed_offsets,
    create_topic,
    end_offsets,
    produce_transactions,
    read_all,
)
from devkafka.pair import DevClusters, print_clusters
from mirror_sink.worker.config_store import FileConfigBackingStore
from mirror_sink.worker.herder import Herder

TOPIC = "orders"
PARTITIONS = 3
CONNECTOR = "demo-mirror"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``demo`` verb."""
    p = subparsers.add_parser("demo", help="start the local clusters and mirror a batch of orders exactly once")
    p.add_argument("--records", type=int, default=20_000, help="committed records to add this run")
    p.add_argument("--keep-running", action="store_true", help="keep mirroring after the check (Ctrl-C stops)")
    p.add_argument("--port", type=int, default=8083, help="the worker's REST port: status page, metrics (0: any)")
    p.set_defaults(func=run)


def _orders(start: int, count: int, run_id: str) -> list[Rec]:
    now = int(time.time() * 1000)
    return [
        Rec(
            f"customer-{i % 500}".encode(),
            json.dumps({"order": i, "run": run_id, "sku": f"sku-{i % 97}", "qty": i % 5 + 1}).encode(),
            (("source", b"demo"),),
            now + i,
            i % PARTITIONS,
        )
        for i in range(start, start + count)
    ]


def _seed(bootstrap: str, records: int, run_id: str) -> None:
    """``records`` committed orders in transactions of 500; every fourth transaction aborted."""
    batches: list[tuple[list[Rec], bool]] = []
    written = 0
    while written < records:
        n = min(500, records - written)
        batches.append((_orders(written, n, run_id), True))
        written += n
        if len(batches) % 4 == 3:
            batches.append((_orders(0, 100, f"{run_id}-aborted"), False))
    produce_transactions(bootstrap, TOPIC, batches, ProduceSpec(compression="lz4", transactional_id="demo-seed"))


def run(args: argparse.Namespace) -> int:
    """Seed, mirror with progress, verify exactly-once, stop."""
    clusters = DevClusters()
    print("starting the local Kafka clusters...")
    clusters.up()
    print_clusters(clusters)
    src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    if TOPIC not in _topics(src):
        create_topic(src, TOPIC, PARTITIONS, {"compression.type": "lz4"})
    run_id = time.strftime("%Y%m%dT%H%M%S")
    print(f"writing {args.records:,} orders to source topic {TOPIC!r} (lz4, transactions, some aborted)...")
    _seed(src, args.records, run_id)

    config = {
        "name": CONNECTOR,
        "connector.class": "MirrorSinkConnector",
        "source.cluster.alias": "source",
        "source.cluster.bootstrap.servers": src,
        "target.cluster.bootstrap.servers": tgt,
        "topics": TOPIC,
        "tasks.max": "2",
    }
    config_path = clusters.home / f"{CONNECTOR}.json"
    config_path.write_text(json.dumps({"name": CONNECTOR, "config": config}, indent=2))
    print(f"mirroring with connector config {config_path}")
    # A REST worker in this process, as `mirror-sink worker` runs one: Connect's API, the status page, metrics.
    herder = Herder("demo", FileConfigBackingStore(clusters.home / "demo-worker" / "connectors.json"))
    herder.start()
    server, port = _serve(herder, args.port)
    base = f"http://127.0.0.1:{port}"
    print(f"status page: {base}/ui   metrics: {base}/metrics   REST: {base}/connectors/{CONNECTOR}/status")
    started = time.monotonic()
    herder.put_config(CONNECTOR, config)
    target_topic = f"source.{TOPIC}"
    ends = end_offsets(src, TOPIC)
    try:
        while True:
            time.sleep(1)
            if herder.worker.running(CONNECTOR).failed():
                print(f"the mirror FAILED; see the log above or {base}/ui")
                return 1
            done = _shadow(tgt, target_topic, ends)
            print(f"  shadow group {done:,} / {sum(ends.values()):,} source offsets mirrored")
            if done >= sum(ends.values()):
                break
        exact = _verify(src, tgt, target_topic, time.monotonic() - started)
        if args.keep_running:
            print(f"still mirroring; the status page is {base}/ui; Ctrl-C to stop")
            while True:
                time.sleep(3600)
        return 0 if exact else 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
        herder.stop()
        print("stopped. Run again to add more orders, or stop the clusters: mirror-sink-dev kafka down")


def _verify(src: str, tgt: str, target_topic: str, elapsed: float) -> bool:
    """Read both clusters: the target holds every committed source record once, in order per partition."""
    source_records = read_all(src, TOPIC)
    target_records = read_all(tgt, target_topic)
    exact = all(
        [r.content() for r in target_records.get(p, [])] == [r.content() for r in recs]
        for p, recs in source_records.items()
    )
    total = sum(len(v) for v in source_records.values())
    mirrored = sum(len(v) for v in target_records.values())
    print(f"{total:,} committed source records; target topic {target_topic!r} holds {mirrored:,}")
    print(f"exactly once, in order per partition: {'yes' if exact else 'NO'} (mirrored in {elapsed:.1f} s)")
    return exact


def _serve(herder: Herder, port: int) -> tuple[BackgroundServer, int]:
    """The REST API on ``port``, or on a free port when it is taken (or 0)."""
    for candidate in (port, 0) if port else (0,):
        server = BackgroundServer(herder, port=candidate)
        try:
            return server, server.start()
        except RuntimeError:
            continue
    raise RuntimeError("no port for the REST API")


def _topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


def _shadow(bootstrap: str, target_topic: str, ends: dict[int, int]) -> int:
    """Source offsets covered by the shadow group so far (0 before the target topic exists)."""
    try:
        if target_topic not in _topics(bootstrap):
            return 0
        stored = committed_offsets(bootstrap, f"connect-{CONNECTOR}", [(target_topic, p) for p in ends])
    except KafkaException:  # the group coordinator is still starting up: ask again next time
        return 0
    return sum(max(0, o) for o in stored.values())
