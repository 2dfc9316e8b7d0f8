"""A worker group: three REST workers share one config topic and one status topic on the target.

A connector with ``tasks.max=6`` is created through one worker; its six tasks spread two per worker,
and ``/status`` on any worker shows all six with the worker that runs each. Under a transactional
source load, every worker is restarted in turn (SIGTERM, SIGTERM, then SIGKILL): each time the
status converges to six RUNNING tasks over the workers alive, and again two per worker once the
restarted one is back. At the end a read_committed reader that ran throughout saw every source
record exactly once, in order per partition.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from devkafka.data import read_all
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.configs import FAST_SETTINGS
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import WorkerProcess
from tests.integration.harness.records import LiveReader, TransactionalLoad, contents
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

pytestmark = pytest.mark.timeout(600)

TASKS = 6
PARTITIONS = 12
WORKERS = ("a", "b", "c")


def _spread(worker: WorkerProcess, name: str) -> Counter[str] | None:
    """Workers -> RUNNING tasks, as ``worker`` reports the connector's status (None while not all six run)."""
    try:
        status = httpx.get(f"{worker.url}/connectors/{name}/status", timeout=5).json()
    except httpx.HTTPError:
        return None
    tasks = status.get("tasks", [])
    if len(tasks) != TASKS or any(t["state"] != "RUNNING" for t in tasks):
        return None
    return Counter(t["worker_id"] for t in tasks)


def test_three_workers_spread_six_tasks_and_survive_a_rolling_restart_exactly_once(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    name, topic = unique("group"), new_topic("group", PARTITIONS)
    properties = tmp_path / "worker.properties"
    settings = {
        "config.storage": "kafka",
        "config.storage.topic": unique("mirror-sink-configs"),
        "status.storage.topic": unique("mirror-sink-status"),
        "bootstrap.servers": target.bootstrap_servers,
    }
    properties.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
    workers = {w: WorkerProcess(tmp_path, str(properties), worker_id=w).start() for w in WORKERS}
    target_topic = f"source.{topic}"
    live = LiveReader(target.bootstrap_servers, [(target_topic, p) for p in range(PARTITIONS)])
    load = TransactionalLoad(source.bootstrap_servers, topic, PARTITIONS, 10**9, pause_s=0.05, txn_id=unique("g"))

    def converged(alive: tuple[str, ...], what: str) -> None:
        """Every alive worker reports six RUNNING tasks, spread evenly over exactly the alive workers."""
        even = {w: TASKS // len(alive) for w in alive}
        wait_until(
            lambda: all(_spread(workers[w], name) == even for w in alive),
            90,
            f"six RUNNING tasks spread {even} {what}",
            detail=lambda: (
                "\n".join(f"{w}: {_spread(workers[w], name)}" for w in alive)
                + "\n"
                + "\n".join(workers[w].log_tail(15) for w in alive)
            ),
        )

    def moving(what: str) -> None:
        goal = live.count() + 500
        wait_until(lambda: live.count() >= goal, 120, f"500 more records {what}")

    live.start()
    load.start()
    try:
        config = {
            "connector.class": "MirrorSinkConnector",
            "source.cluster.bootstrap.servers": source.bootstrap_servers,
            "target.cluster.bootstrap.servers": target.bootstrap_servers,
            "topics": topic,
            "tasks.max": str(TASKS),
            **FAST_SETTINGS,
        }
        created = httpx.post(f"{workers['a'].url}/connectors", json={"name": name, "config": config}, timeout=30)
        assert created.status_code == 201, created.text
        converged(WORKERS, "after the create")
        moving("at the start")
        for w in WORKERS:
            others = tuple(o for o in WORKERS if o != w)
            stopped = time.monotonic()
            if w == WORKERS[-1]:
                workers[w].kill()  # a crash: the others notice its silence
            else:
                assert workers[w].stop() == 0, workers[w].log_tail()
            converged(others, f"with worker {w} down")
            moving(f"with worker {w} down")
            print(f"worker {w} down: tasks spread over {others} after {time.monotonic() - stopped:.1f} s")
            workers[w].start()
            converged(WORKERS, f"after worker {w} came back")
        moving("after the rolling restart")
        load.stop()
        load.join(120)
        wait_until(
            lambda: shadow_caught_up(source, topic, target, target_topic, f"connect-{name}"),
            120,
            "mirrored to the end",
        )
        live.wait_for(load.committed, 60)
        time.sleep(1)  # a duplicate would arrive now
    finally:
        load.stop()
        live.stop()
        codes = {w: p.stop() for w, p in workers.items()}
    assert codes == dict.fromkeys(WORKERS, 0), {w: p.log_tail() for w, p in workers.items()}
    expected = read_all(source.bootstrap_servers, topic)
    for p in range(PARTITIONS):
        seen = live.records.get((target_topic, p), [])
        assert contents(seen) == contents(expected[p]), f"{target_topic}-{p}: loss, duplicates or reordering"
    assert_exact_mirror(source, topic, target, target_topic, f"connect-{name}")
