"""Pure logic of the workload-shapes benchmark: the mirror log's progress lines, the ratios, the report."""

from __future__ import annotations

from typing import Any

from bench.scenarios.shapes import _ratios, connector_config, parse_mirror_log
from bench.scenarios.shapes import render as render_shapes

_PREFIX = "2026-11-22 16:29:24,152 INFO  connectors.mirror_sink_task: "


def _progress(task: int, records: int, aborted: int, path: str) -> str:
    return (
        f"{_PREFIX}[shapes-x task {task}] mirrored {records} records (1.0 MB) in 3 commits, {aborted} aborted; "
        f"reading 3 partitions; {path}"
    )


def test_raw_progress_lines_are_summed_over_tasks_from_each_tasks_last_line() -> None:
    text = "\n".join(
        [
            _progress(0, 10, 0, "raw mode: 1 batches forwarded as they are, re-encoded: none; memory peak 1.0 MB"),
            _progress(
                0, 100, 1, "raw mode: 7 batches forwarded as they are, re-encoded: 4 compacted; memory peak 2.5 MB"
            ),
            _progress(
                1,
                50,
                0,
                "raw mode: 3 batches forwarded as they are, re-encoded: 2 compacted, 1 mid-batch start; "
                "memory peak 1.5 MB",
            ),
            "2026-11-22 16:29:24,000 WARNING connectors.mirror_sink_task: [shapes-x task 1] cycle aborted",
        ]
    )
    s = parse_mirror_log(text)
    assert (s.tasks_reporting, s.records, s.aborts, s.commits) == (2, 150, 1, 6)
    assert s.records_by_task == {"0": 100, "1": 50}
    assert s.forwarded == 10
    assert s.reencoded == {"compacted": 6, "mid-batch start": 1}
    assert s.memory_peak_mb == 4.0
    assert len(s.problems) == 1 and "cycle aborted" in s.problems[0]


def test_record_mode_has_no_batch_counts() -> None:
    s = parse_mirror_log(_progress(0, 5, 0, "record mode"))
    assert s.records == 5 and s.forwarded is None and s.reencoded == {}


def _run(mirror: str, mb_per_s: float, cpu: float | None) -> dict[str, Any]:
    return {"mirror": mirror, "mb_per_s": mb_per_s, "cpu_s_per_gb": cpu, "peak_rss_mb": 90.0, "seconds": 2.0}


def test_ratios_are_raw_over_record_and_missing_when_a_side_failed() -> None:
    ratio = _ratios([_run("record-eos", 10.0, 40.0), _run("raw-eos", 5.0, 80.0)])
    assert ratio == {"speed": 0.5, "cpu_per_gb": 2.0}
    failed = _ratios([_run("record-eos", 10.0, 40.0), {"mirror": "raw-eos", "error": "boom"}])
    assert failed == {"speed": None, "cpu_per_gb": None}


def test_report_has_its_heading_a_row_per_run_and_survives_failures() -> None:
    raw = _run("raw-eos", 5.0, 80.0) | {"aborts": 1, "forwarded": 12, "reencoded": {"compacted": 3}}
    results = {
        "machine": "2 cores",
        "scale": 0.05,
        "codec": "lz4",
        "shapes": [
            {
                "shape": "compacted",
                "records": 700,
                "megabytes": 0.7,
                "notes": ["700 of 2,900 records left by the log cleaner"],
                "runs": [_run("record-eos", 10.0, 40.0), raw],
                "raw_vs_record": {"speed": 0.5, "cpu_per_gb": 2.0},
            },
            {
                "shape": "mixed",
                "records": 1,
                "megabytes": 1.0,
                "runs": [{"mirror": "raw-eos", "error": "mirror exited with 1"}],
                "raw_vs_record": {"speed": None, "cpu_per_gb": None},
            },
        ],
    }
    md = render_shapes(results)
    assert md.startswith("## Workload shapes: raw mode against record mode\n")
    assert "| compacted | 700 records, 0.7 MB | raw-eos | 5.0 | 80.0 | 90 | 2.0 | 1 | 12 | 3 compacted |" in md
    assert "| compacted |" in md and "| 0.50x | 2.00x |" in md
    assert "failed: mirror exited with 1" in md and "| - | - |" in md
    assert "smoke test" in md
    table = [line for line in md.splitlines() if line.startswith("| compacted | 700")]
    assert all(line.count("|") == 11 for line in table)


def test_each_run_mirrors_every_topic_with_two_tasks_into_its_own_target_topics() -> None:
    config = connector_config("run-1", "raw-eos", "src:9092", "tgt:9092", topics=["a", "b"], codec="zstd")
    assert config["topics"] == "a,b" and config["tasks.max"] == "2"
    assert config["source.cluster.alias"] == "run-1"
    assert config["mirror.mode"] == "raw" and config["transaction.producer"] == "true"
    assert config["target.cluster.producer.compression.type"] == "zstd"
