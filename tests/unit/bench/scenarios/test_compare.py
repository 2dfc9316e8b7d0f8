"""The limit per byte: the target broker's own CPU per GB at the ceiling, and each mirror's beside it."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from bench.ceiling import Ceiling
from bench.common.cpu import ProcessCpu, ProcessTree, process_cpu_seconds
from bench.scenarios.compare import ceiling_entry, per_gb
from bench.scenarios.compare_page import CEILING_LABEL, broker_cpu_ratio, render_markdown
from devkafka.pair import BrokerPair, given_or_local, given_or_local_pair

TIMES = "\N{MULTIPLICATION SIGN}"


def _results(broker_cpu: float | None) -> dict[str, Any]:
    return {
        "gb_per_codec": 0.5,
        "record_bytes": 1024,
        "partitions": 6,
        "throughput": [
            {"codec": "none", "mirror": "mm2-eos", "seconds": 18.0, "mb_per_s": 28.0, "cpu_s_per_gb": 36.0},
            {
                "codec": "none",
                "mirror": "raw-eos",
                "seconds": 4.0,
                "mb_per_s": 120.0,
                "copy_mb_per_s": 145.0,
                "cpu_s_per_gb": 4.0,
                "peak_rss_mb": 110.0,
            },
        ],
        "ceiling": [{"codec": "none", "seconds": 1.5, "mb_per_s": 345.0, "broker_cpu_s_per_gb": broker_cpu}],
    }


def _row(page: str, start: str) -> list[str]:
    line = next(line for line in page.splitlines() if line.startswith(start))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_per_gb_is_cpu_seconds_per_10_to_the_9_bytes_and_unknown_stays_unknown() -> None:
    assert per_gb(2.0, 500.0) == 4.0
    assert per_gb(None, 500.0) is None
    assert per_gb(1.0, 0.0) is None


def test_the_ceiling_takes_the_fastest_runs_speed_and_the_lowest_broker_cpu() -> None:
    records = 500_000  # 512 MB of 1 KB records
    cold = Ceiling(seconds=2.0, batches=100, records=records, machine_cores_busy=1.7, broker_cpu_seconds=3.0)
    warm = Ceiling(seconds=1.6, batches=100, records=records, machine_cores_busy=1.5, broker_cpu_seconds=2.2)
    entry = ceiling_entry("none", [cold, warm])
    assert entry["seconds"] == 1.6 and entry["machine_cores_busy"] == 1.5
    assert entry["broker_cpu_s_per_gb"] == 2.2 / 0.512
    assert entry["broker_cpu_s_per_gb_runs"] == [3.0 / 0.512, 2.2 / 0.512]
    # Lower CPU in the slower run still counts: the cheapest ingest measured is the comparison.
    slow_cheap = Ceiling(seconds=2.0, batches=100, records=records, broker_cpu_seconds=1.0)
    assert ceiling_entry("none", [slow_cheap, warm])["broker_cpu_s_per_gb"] == 1.0 / 0.512


def test_a_remote_target_has_no_broker_cpu() -> None:
    runs = [Ceiling(seconds=1.0, batches=1, records=1000) for _ in range(2)]
    entry = ceiling_entry("lz4", runs)
    assert entry["broker_cpu_s_per_gb"] is None and entry["broker_cpu_s_per_gb_runs"] == [None, None]


def test_process_cpu_of_this_process_grows_and_an_unknown_pid_is_none() -> None:
    before = process_cpu_seconds(os.getpid())
    assert before is not None and before > 0
    cpu = ProcessCpu(os.getpid())
    sum(i * i for i in range(300_000))
    spent = cpu.seconds()
    assert spent is not None and spent >= 0
    assert process_cpu_seconds(None) is None and ProcessCpu(None).seconds() is None


def test_given_clusters_have_no_pids(tmp_path: Path) -> None:
    with given_or_local_pair(tmp_path, "a:9092", "b:9092") as pair:
        assert pair == BrokerPair("a:9092", "b:9092", None, None)
    with given_or_local(tmp_path, "a:9092", "b:9092") as (src, tgt):
        assert (src, tgt) == ("a:9092", "b:9092")


def test_broker_cpu_ratio_is_the_mirrors_cpu_over_the_brokers() -> None:
    assert broker_cpu_ratio({"cpu_s_per_gb": 2.0}, {"broker_cpu_s_per_gb": 4.0}) == 0.5
    assert broker_cpu_ratio({"cpu_s_per_gb": 2.0}, {"broker_cpu_s_per_gb": None}) is None
    assert broker_cpu_ratio({"cpu_s_per_gb": 2.0}, None) is None


def test_the_table_shows_the_brokers_cpu_on_the_ceiling_row_and_each_mirrors_ratio_to_it() -> None:
    page = render_markdown(_results(broker_cpu=8.0))
    header = _row(page, "| mirror |")
    assert "CPU/GB vs broker ingest" in header
    raw = dict(zip(header, _row(page, "| `raw-eos` |"), strict=True))
    assert raw["CPU-s/GB"] == "4.0" and raw["MB/s per core"] == "250.0"
    assert raw["CPU/GB vs broker ingest"] == f"0.50{TIMES}"
    mm2 = dict(zip(header, _row(page, "| `mm2-eos` |"), strict=True))
    assert mm2["CPU/GB vs broker ingest"] == f"4.50{TIMES}"
    ceiling = dict(zip(header, _row(page, f"| {CEILING_LABEL} |"), strict=True))
    assert ceiling["CPU-s/GB"] == "8.0" and ceiling["MB/s per core"] == "125.0"
    assert ceiling["CPU/GB vs broker ingest"] == f"1.00{TIMES}"
    assert ceiling["peak RSS MB"] == "-" and ceiling["speed vs MM2"] == "-"
    assert f"raw-eos spends **0.50{TIMES}** the target broker's own CPU per GB" in page


def test_runs_without_the_brokers_cpu_render_as_before() -> None:
    page = render_markdown(_results(broker_cpu=None))
    header = _row(page, "| mirror |")
    assert "CPU/GB vs broker ingest" not in header
    ceiling = dict(zip(header, _row(page, f"| {CEILING_LABEL} |"), strict=True))
    assert ceiling["CPU-s/GB"] == "-" and ceiling["MB/s per core"] == "-"
    assert "the target broker's own CPU per GB" not in page


def test_the_ratio_uses_the_copys_own_cpu_where_it_was_measured() -> None:
    entry = {"cpu_s_per_gb": 4.0, "copy_cpu_s_per_gb": 3.0}
    assert broker_cpu_ratio(entry, {"broker_cpu_s_per_gb": 6.0}) == 0.5


def test_a_process_trees_cpu_between_samples_is_read_linearly() -> None:
    tree = ProcessTree(os.getpid())
    tree.sample()
    first_at, first = time.time(), tree.cpu_seconds()
    busy_until = time.process_time() + 0.2
    while time.process_time() < busy_until:  # burn CPU between the samples
        pass
    tree.sample()
    last_at, last = time.time(), tree.cpu_seconds()
    assert last - first >= 0.15
    assert tree.cpu_at(first_at - 60) == 0.0  # before the first sample: all of it counts as the copy's
    middle = tree.cpu_at((first_at + last_at) / 2)
    assert first < middle < last
    assert tree.cpu_at(last_at + 60) == last
    assert tree.peak_rss_bytes > 0
