"""Rewriting a Structured Streaming checkpoint for the target: what is translated, copied, left out
or refused, on a checkpoint laid out as Spark writes it (the integration test runs a real query)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.failover.checkpoints.offset_translator import Direction, Outcome, TopicOffset, TranslatedOffset
from mirror_sink.failover.checkpoints.spark_checkpoint import CheckpointRefused, kafka_offsets, rewrite_checkpoint

META = '{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{"spark.sql.shuffle.partitions":"2"}}'


def _translate(asked: Sequence[TopicOffset], direction: Direction) -> list[TranslatedOffset]:
    """Source offset N of ``orders`` lands at N + 1000 of ``src.orders``; below 10 the syncs expired."""
    assert direction is Direction.SOURCE_TO_TARGET
    out = []
    for a in asked:
        if a.topic != "orders":
            out.append(TranslatedOffset(a, Outcome.NOT_MIRRORED, None, "not mirrored"))
        elif a.offset < 10:
            out.append(TranslatedOffset(a, Outcome.BEFORE_SYNCS, None, "older than the syncs"))
        else:
            out.append(TranslatedOffset(a, Outcome.EXACT, TopicOffset("src.orders", a.partition, a.offset + 1000), ""))
    return out


def _checkpoint(root: Path, batches: dict[int, dict[str, int]], committed: Sequence[int], first: int = 0) -> Path:
    cp = root / "cp"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "sources" / "0").mkdir(parents=True)
    (cp / "metadata").write_text('{"id":"q-1"}\n')
    for batch, parts in batches.items():
        line = json.dumps({"orders": parts}, separators=(",", ":"))
        (cp / "offsets" / str(batch)).write_text(f"v1\n{META}\n{line}\n-")  # a second, idle source
        (cp / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    for batch in committed:
        (cp / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (cp / "commits" / f".{batch}.crc").write_bytes(b"crc")
    (cp / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + json.dumps({"orders": {"0": first, "1": first}}).encode())
    return cp


def test_the_newest_batches_are_translated_into_a_copy_and_the_original_is_untouched(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path, {0: {"0": 5, "1": 7}, 1: {"0": 20, "1": 30}, 2: {"0": 40, "1": 50}}, committed=[0, 1])
    before = {p: p.read_bytes() for p in cp.rglob("*") if p.is_file()}
    out = tmp_path / "cp-target"
    report = rewrite_checkpoint(_translate, cp, out)

    assert {p: p.read_bytes() for p in cp.rglob("*") if p.is_file()} == before
    assert (out / "offsets" / "2").read_text() == f'v1\n{META}\n{{"src.orders":{{"0":1040,"1":1050}}}}\n-'
    assert (out / "offsets" / "1").read_text().endswith('{"src.orders":{"0":1020,"1":1030}}\n-')
    # Batch 0 is older than the syncs kept: Spark never reads it again, so it is left out.
    assert not (out / "offsets" / "0").exists() and report.dropped_batches == [0]
    assert not (out / "commits" / "0").exists() and (out / "commits" / "1").exists(), "both logs alike"
    # Rewritten files lose their checksums; every other file is copied as it was.
    assert not (out / "offsets" / ".2.crc").exists()
    assert (out / "commits" / ".1.crc").read_bytes() == b"crc" and (out / "metadata").read_text() == '{"id":"q-1"}\n'
    # The first offsets are older than the syncs too: the oldest kept batch's stand in.
    assert (out / "sources" / "0" / "0").read_bytes() == b'\x00v1\n{"src.orders":{"0":1020,"1":1030}}'
    assert report.target_topics == {"src.orders"} and not report.committed
    assert "subscribe=src.orders" in report.lines()[-1]
    assert not (tmp_path / "cp-target.partial").exists()


def test_a_newest_batch_without_an_exact_answer_refuses_and_writes_nothing(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path, {3: {"0": 5}, 4: {"0": 20}}, committed=[3, 4])
    with pytest.raises(CheckpointRefused, match=r"batch 3, source 0 has no exact target offset for orders-0@5"):
        rewrite_checkpoint(_translate, cp, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def test_a_dry_run_reports_and_writes_nothing(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path, {0: {"0": 15}}, committed=[0], first=12)
    report = rewrite_checkpoint(_translate, cp, tmp_path / "out", dry_run=True)
    assert not (tmp_path / "out").exists()
    assert report.committed
    assert [r.where for r in report.rewritten] == ["batch 0, source 0", "first offsets of source 0"]
    assert "would rewrite" in "\n".join(report.lines())


def test_not_a_checkpoint_and_an_existing_out_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--spark-checkpoint"):
        rewrite_checkpoint(_translate, tmp_path, tmp_path / "out")
    cp = _checkpoint(tmp_path, {0: {"0": 15}}, committed=[0])
    (tmp_path / "taken").mkdir()
    with pytest.raises(ConfigError, match="--out"):
        rewrite_checkpoint(_translate, cp, tmp_path / "taken")


def test_only_kafka_source_lines_are_read_as_kafka_offsets() -> None:
    assert kafka_offsets('{"orders":{"0":5,"1":-2}}') == {"orders": {"0": 5, "1": -2}}
    assert kafka_offsets("-") is None
    assert kafka_offsets('{"logOffset":3}') is None  # a file source
    assert kafka_offsets("42") is None  # a rate source
    assert kafka_offsets('{"orders":{"zero":5}}') is None
