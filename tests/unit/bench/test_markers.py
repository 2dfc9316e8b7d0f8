"""bench.markers' pure logic: percentiles, the per-P summary, the record batch it writes."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatch

from bench.markers import RECORDS_PER_BATCH, Sample, percentile, small_batch, summarize


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(10, 0, -1)]  # unsorted on purpose
    assert percentile(values, 90) == 9.0
    assert percentile(values, 100) == 10.0
    assert percentile(values, 1) == 1.0
    assert percentile([3.0], 90) == 3.0


def test_summary_in_milliseconds_and_per_partition() -> None:
    samples = [Sample(0.1 * i, 0.01, 0.002 * i, 0.05 * i, i, float(i)) for i in range(1, 11)]
    s = summarize(1, 100, samples)
    assert (s.protocol, s.commits) == (1, 10)
    assert s.commit_ms == 11.0  # median of 2..20 ms
    assert s.commit_p90_ms == 18.0
    assert s.add_ms == 550.0
    assert s.transaction_ms == 571.0  # 550 + 10 + 11
    assert s.transaction_p90_ms == 928.0  # the ninth: 900 + 10 + 18
    assert s.transaction_per_partition_ms == 5.71
    assert s.last_refusal_ms == 275.0
    assert s.refusals == 5.5
    assert s.produce_ms == 10.0


def test_small_batch_is_a_plain_v2_batch_of_a_few_hundred_bytes() -> None:
    raw = small_batch()
    assert 200 <= len(raw) <= 1000
    batch = DefaultRecordBatch(bytearray(raw))
    assert not batch.is_transactional
    assert len(list(batch)) == RECORDS_PER_BATCH
