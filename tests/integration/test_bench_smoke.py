"""The benchmark harness's quick mode runs end to end (CI's smoke run; its numbers are not judged here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.scenarios.scale import plot_scale
from devkafka.endpoints import KafkaEndpoint

ROOT = Path(__file__).resolve().parents[2]

#: One mirror of each runner (MirrorMaker 2, record mode, raw mode), exactly once: the at-least-once
#: rows differ from these by a setting only, and each costs the smoke a mirror's start and copy (an
#: MM2 JVM for mm2-alo), on a suite that must stay under 25 minutes.
MIRRORS = ("mm2-eos", "record-eos", "raw-eos")
LATENCY_MIRRORS = ("mm2-eos", "raw-eos")


def test_bench_compare_quick_mode_measures_each_runner_and_writes_the_report(
    source: KafkaEndpoint, target: KafkaEndpoint, tmp_path: Path
) -> None:
    out = tmp_path / "docs"
    argv = [
        sys.executable, "-m", "bench.compare", "--quick", "--latency-rates", "5000",
        "--mirrors", ",".join(MIRRORS), "--latency-mirrors", ",".join(LATENCY_MIRRORS),
        "--source", source.bootstrap_servers, "--target", target.bootstrap_servers,
        "--out", str(out), "--workdir", str(tmp_path / "work"),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "[1/" in done.stdout and "100%" in done.stdout, "progress is shown while it runs"
    results = json.loads((out / "data" / "benchmarks.json").read_text())
    assert {r["mirror"] for r in results["throughput"]} == set(MIRRORS)
    # Every latency mirror at the one rate asked for (--quick's two would double this test's longest part).
    assert sorted((r["mirror"], r["rate_per_s"]) for r in results["latency"]) == sorted(
        (m, 5000) for m in LATENCY_MIRRORS
    )
    for row in results["throughput"]:
        assert row["mb_per_s"] > 0 and row["cpu_s_per_gb"] > 0 and row["peak_rss_mb"] > 0, row
    for row in results["latency"]:
        assert 0 < row["p50_ms"] <= row["p99_ms"] <= row["max_ms"], row
        assert row["complete"] and row["achieved_rate_per_s"] > 0, row
        if row["mirror"].endswith("-eos"):
            assert row["markers"] > 0, row  # at least one transaction's markers in the window
    assert results["ceiling"] and results["ceiling"][0]["mb_per_s"] > 0
    page = (out / "benchmarks.md").read_text()
    assert all(m in page for m in MIRRORS) and "MirrorMaker 2" in page
    assert "## Latency" in page and "### Transaction markers" in page and "of ceiling" in page
    pngs = ("benchmarks-throughput.png", "benchmarks-cpu.png", "benchmarks-latency.png", "benchmarks-latency-rate.png")
    for png in pngs:
        assert (out / "data" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png


def test_bench_wan_runs_each_mirror_across_the_delay_link(tmp_path: Path) -> None:
    out = tmp_path / "docs"
    argv = [
        sys.executable, "-m", "bench.wan", "--gb", "0.01", "--rtts", "50", "--mirrors", "raw-eos,mm2-eos",
        "--out", str(out), "--workdir", str(tmp_path / "work"),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    results = json.loads((out / "data" / "benchmarks-wan.json").read_text())
    assert sorted((r["mirror"], r["rtt_ms"]) for r in results["runs"]) == [("mm2-eos", 50), ("raw-eos", 50)]
    for row in results["runs"]:
        assert row["mb_per_s"] > 0 and row["mb_per_core_s"] > 0 and row["peak_rss_mb"] > 0, row
    assert "## Over a WAN link" in done.stdout


def test_bench_scale_small_records_runs_every_mirror(
    source: KafkaEndpoint, target: KafkaEndpoint, tmp_path: Path
) -> None:
    out = tmp_path / "docs"
    argv = [
        sys.executable, "-m", "bench.scale", "--scenarios", "small-records", "--scale", "0.01",
        "--source", source.bootstrap_servers, "--target", target.bootstrap_servers,
        "--out", str(out), "--workdir", str(tmp_path / "work"),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (scenario,) = json.loads((out / "data" / "benchmarks-scale.json").read_text())["scenarios"]
    assert [r["mirror"] for r in scenario["runs"]] == ["raw-eos", "record-eos", "auto-eos", "mm2-eos"]
    for row in scenario["runs"]:
        assert "error" not in row, row
        assert row["mb_per_s"] > 0 and row["mb_per_core_s"] > 0 and row["first_commit_s"] > 0, row
    assert "## At scale" in done.stdout
    png = plot_scale(json.loads((out / "data" / "benchmarks-scale.json").read_text()), tmp_path / "scale.png")
    assert png.stat().st_size > 10_000
