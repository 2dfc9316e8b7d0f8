"""A wheel built from the repository mirrors without the checkout and without the developer tooling."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from devkafka.data import ProduceSpec, Rec, produce_transactions
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.exactness import assert_exact_mirror, shadow_caught_up
from tests.integration.harness.processes import MirrorProcess
from tests.integration.harness.topics import TopicFactory, Unique
from tests.integration.harness.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]


class WheelMirror(MirrorProcess):
    """``mirror-sink run`` from an unpacked wheel: ``python -S`` skips the editable install's path
    hook, so only the unpacked wheel and the third-party packages can be imported."""

    def __init__(self, config: dict[str, str], workdir: Path, unpacked: Path) -> None:
        super().__init__(config, "w1", workdir)
        self.env = {"PYTHONPATH": f"{unpacked}:{sysconfig.get_paths()['purelib']}"}
        self.python = [sys.executable, "-S"]
        self.cwd = workdir  # -m puts the working directory first on sys.path: never the checkout


def _sources(into: Path) -> Path:
    """A copy of the checkout's files (tracked, or new and not ignored): setuptools builds in the
    source tree, and deploy/spark/package.sh may be building in the checkout at the same time."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout.split("\0")  # fmt: skip
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, into / name)
    return into


def _unpacked_wheel(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    sources = _sources(tmp_path / "sources")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(sources)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    (wheel,) = dist.glob("mirror_sink-*.whl")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    # The product must not need the developer tooling the wheel also carries.
    shutil.rmtree(unpacked / "devkafka")
    return unpacked


def test_a_wheel_mirrors_without_the_checkout_or_devkafka(
    source: KafkaEndpoint, target: KafkaEndpoint, unique: Unique, new_topic: TopicFactory, tmp_path: Path
) -> None:
    unpacked = _unpacked_wheel(tmp_path)
    name, topic = unique("wheel"), new_topic("wheel-orders", 2)
    mirror = WheelMirror(mirror_config(name, source, target, topic), tmp_path / "run", unpacked)
    imported = subprocess.run(
        [*mirror.python, "-c", "import mirror_sink, api.cli.main, api.server; print(mirror_sink.__file__)"],
        env={"PYTHONPATH": mirror.env["PYTHONPATH"]},
        cwd=mirror.cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, f"the wheel's product does not import on its own:\n{imported.stderr}"
    where = imported.stdout.strip()
    assert Path(where).is_relative_to(unpacked), f"mirror_sink imported from {where}, not from the wheel"

    records = [Rec(f"k{i}".encode(), json.dumps({"i": i}).encode(), partition=i % 2) for i in range(200)]
    produce_transactions(
        source.bootstrap_servers, topic, [(records, True)], ProduceSpec(transactional_id=unique("wheel-tx"))
    )
    mirror.start()
    try:
        group = f"connect-{name}"
        target_topic = f"source.{topic}"
        wait_until(
            lambda: shadow_caught_up(source, topic, target, target_topic, group), 90, "the wheel's mirror to catch up"
        )
        assert assert_exact_mirror(source, topic, target, target_topic, group) == 200
    finally:
        assert mirror.stop() == 0, mirror.log_tail()
    assert "devkafka" not in mirror.log_text()
