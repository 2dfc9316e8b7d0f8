"""Start to first commit: the worker image under podman against the bare process, side by side.

    .venv/bin/python -m bench.image_start              # 5 rounds each, about 3 minutes on 2 cores
    .venv/bin/python -m bench.image_start --rounds 2   # a smoke run

Builds the image first (``deploy/image/image.sh``: cached base, warm pip cache), starts its own local
clusters and writes one topic. Each round then starts a worker, alternately the bare process
(``python -m api.cli worker``) and the container (``podman run --network host``, read-only,
as tests/integration/test_image.py runs it), with one connector declared in ``connectors.config.dir``
and a fresh shadow group, and measures from the launch:

- REST: ``/health`` answers 200;
- ready: ``/health/ready`` answers 200 (every task RUNNING);
- first commit: the shadow group holds an offset on the target (its first transaction committed).

Results go to ``bench/results/image-start-<timestamp>.json`` and a table on stdout. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from confluent_kafka import Consumer

from bench.mirror_throughput import PARTITIONS, write_source
from devkafka.cluster import free_port
from devkafka.pair import DevClusters
from devkafka.podman import podman
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.clients.stable_offsets import read_stable_offsets

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
IMAGE_UID = 65532
PHASES = ("rest_s", "ready_s", "first_commit_s")


def _build_image() -> str:
    out = subprocess.run(["bash", str(ROOT / "deploy/image/image.sh")], capture_output=True, text=True, check=True)
    return out.stdout.split()[-2]


def _connector(name: str, src: str, tgt: str, topic: str) -> dict[str, object]:
    return {
        "name": name,
        "config": {
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSinkConnector",
            "source.cluster.bootstrap.servers": src,
            "target.cluster.bootstrap.servers": tgt,
            "topics": topic,
        },
    }


def _until(predicate: Callable[[], bool], started: float, timeout: float = 120) -> float:
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.05)
    raise TimeoutError(f"not within {timeout} s")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def one_round(runtime: str, image: str, workdir: Path, clusters: tuple[str, str, str], n: int) -> dict[str, float]:
    """Start a worker of ``runtime`` ("process" or "container") and time its phases."""
    src, tgt, topic = clusters
    name = f"start-{runtime}-{n}-{int(time.time())}"
    port = free_port()
    etc, data = workdir / name / "etc", workdir / name / "data"
    (etc / "connectors").mkdir(parents=True)
    data.mkdir(parents=True)
    os.chown(data, IMAGE_UID, IMAGE_UID)
    (etc / "worker.properties").write_text("")
    (etc / "connectors" / f"{name}.json").write_text(json.dumps(_connector(name, src, tgt, topic)))
    group = f"connect-{name}"
    # A consumer's committed(), not the admin client's list_consumer_group_offsets: librdkafka crashes
    # the process on the NOT_COORDINATOR a fresh group's first lookup gets (mirror_sink.core.clients.stable_offsets).
    reader = Consumer(
        {"bootstrap.servers": tgt, "group.id": group, "isolation.level": "read_committed", "enable.auto.commit": False}
    )
    shadow = [(f"source.{topic}", p) for p in range(PARTITIONS)]

    def committed() -> bool:
        try:
            offsets = read_stable_offsets(reader, shadow, give_up_after_s=5)
        except TaskFailure:
            return False
        return any(offset is not None and offset > 0 for offset in offsets.values())

    listeners = f"http://127.0.0.1:{port}"
    declared = "/etc/mirror-sink/connectors" if runtime == "container" else str(etc / "connectors")
    env = {"CONNECT_LISTENERS": listeners, "CONNECT_CONNECTORS_CONFIG_DIR": declared}
    started = time.monotonic()
    if runtime == "container":
        flags = [
            f"--env={k}={v}" for k, v in {**env, "CONNECT_CONNECTORS_CONFIG_DIR": "/etc/mirror-sink/connectors"}.items()
        ]
        out = podman(
            "run", "--detach", "--name", name, "--network", "host", "--read-only",
            "--volume", f"{etc}:/etc/mirror-sink:ro", "--volume", f"{data}:/var/lib/mirror-sink",
            *flags, image, "worker", "/etc/mirror-sink/worker.properties",
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(out.stderr)

        def stop() -> None:
            podman("rm", "--force", "--time", "10", name)

    else:
        log = open(workdir / f"{name}.log", "wb")  # noqa: SIM115  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "api.cli",
                "worker",
                str(etc / "worker.properties"),
                "--data-dir",
                str(data),
            ],
            env={**os.environ, **env, "CONNECT_CONNECTORS_CONFIG_DIR": str(etc / "connectors")},
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def stop() -> None:
            proc.terminate()
            proc.wait(30)
            log.close()

    try:
        url = f"http://127.0.0.1:{port}"
        rest = _until(lambda: _answers(f"{url}/health"), started)
        ready = _until(lambda: _answers(f"{url}/health/ready"), started)
        first = _until(committed, started)
        return {"rest_s": rest, "ready_s": ready, "first_commit_s": first}
    finally:
        stop()
        reader.close()


def main() -> None:
    """Measure and print; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    image = _build_image()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    workdir = RESULTS / f"image-start-{stamp}"
    workdir.mkdir(parents=True, exist_ok=True)
    clusters = DevClusters(workdir / "clusters")
    clusters.up()
    try:
        src, tgt = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
        topic = f"image-start-{int(time.time())}"
        write_source(src, topic, 10_000, "lz4")
        runs: dict[str, list[dict[str, float]]] = {"process": [], "container": []}
        for n in range(args.rounds):
            for runtime, rounds in runs.items():  # alternated, so that a warming machine favours neither
                rounds.append(one_round(runtime, image, workdir, (src, tgt, topic), n))
        medians = {rt: {p: round(statistics.median(r[p] for r in rs), 2) for p in PHASES} for rt, rs in runs.items()}
        (workdir / "result.json").write_text(json.dumps({"image": image, "runs": runs, "medians": medians}, indent=2))
        print(f"median of {args.rounds} starts each, seconds from launch ({image}):")
        print("| runtime | /health 200 | /health/ready 200 | first commit |")
        print("| --- | ---: | ---: | ---: |")
        for runtime, m in medians.items():
            print(f"| {runtime} | {m['rest_s']} | {m['ready_s']} | {m['first_commit_s']} |")
    finally:
        clusters.discard()


if __name__ == "__main__":
    main()
