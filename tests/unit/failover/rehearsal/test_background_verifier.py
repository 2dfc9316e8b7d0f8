"""BackgroundVerifier: verification rounds on a thread of their own, into metrics and positions.
What a round publishes (per partition or summed per topic), what it adds up across rounds, that a
failed round is retried, and that stopping closes the verifier and takes the connector's series away.

The ``Verifier`` is a fake that gives the reports the test scripts, one a round; rounds run in the
test's thread (the job's round) or on the job's thread, which each test stops."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import REGISTRY

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import SourcePartition, TargetPartition
from mirror_sink.failover.rehearsal import background_verifier
from mirror_sink.failover.rehearsal.background_verifier import BackgroundVerifier
from mirror_sink.failover.rehearsal.verify import PartitionVerdict, VerifyReport

pytestmark = pytest.mark.unit

T0, T1 = TargetPartition("source.orders", 0), TargetPartition("source.orders", 1)
WAIT_S = 2.0  # an upper bound only: each wait ends when the job's thread gets there
_names = itertools.count()

Step = tuple[VerifyReport, dict[TargetPartition, int]] | Exception


@dataclass
class Script:
    """What the verifiers made during a test give, round after round, and what they were told."""

    steps: list[Step] = field(default_factory=list)
    made: list[FakeVerifier] = field(default_factory=list)
    #: Released at the start of each round (for tests on the job's thread).
    rounds: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))


class FakeVerifier:
    """A ``Verifier``: each ``run`` takes the script's next step (none left: the target is away)."""

    script = Script()

    def __init__(self, config: MirrorSinkConfig, *, max_bytes_per_s: int, stop: threading.Event, say: Any) -> None:
        self.max_bytes_per_s = max_bytes_per_s
        self.stop = stop
        self.next: dict[TargetPartition, int] = {}
        self.closed = 0
        self.script.made.append(self)

    def run(self) -> VerifyReport:
        self.script.rounds.release()
        step = self.script.steps.pop(0) if self.script.steps else RuntimeError("the target is away")
        if isinstance(step, Exception):
            raise step
        report, nexts = step
        self.next.update(nexts)
        return report

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Iterator[Script]:
    fresh = Script()
    monkeypatch.setattr(FakeVerifier, "script", fresh)
    monkeypatch.setattr(background_verifier, "Verifier", FakeVerifier)
    yield fresh


def _config(**extra: str) -> MirrorSinkConfig:
    """A connector of its own name (the metrics registry is the process's)."""
    return MirrorSinkConfig.parse(
        {
            "name": f"verify-test-{next(_names)}",
            "source.cluster.bootstrap.servers": "src:9092",
            "target.cluster.bootstrap.servers": "tgt:9092",
            "verify.interval.seconds": "0.001",
            **extra,
        }
    )


def _verdict(target: TargetPartition, verified: int, mismatches: int = 0, unverifiable: int = 0) -> PartitionVerdict:
    source = SourcePartition("orders", target.partition)
    verdict = PartitionVerdict(target, source, verified=verified, bytes=10 * verified, mismatches=mismatches)
    verdict.unverifiable = Counter({"compacted": unverifiable}) if unverifiable else Counter()
    return verdict


def _sample(name: str, config: MirrorSinkConfig, partition: str) -> float | None:
    labels = {"connector": config.name, "source": "source", "target": "target", "topic": "source.orders"}
    return REGISTRY.get_sample_value(name, {**labels, "partition": partition})


def test_a_round_publishes_each_partitions_position_mismatches_bytes_and_unverifiable_records(script: Script) -> None:
    config = _config(**{"verify.max.bytes.per.second": "2048"})
    background = BackgroundVerifier(config)
    report = VerifyReport(config.name, [_verdict(T0, 5, mismatches=2), _verdict(T1, 3, unverifiable=1)])
    script.steps.append((report, {T0: 105, T1: 53}))
    background._round()
    (made,) = script.made
    assert made.max_bytes_per_s == 2048 and made.stop is background._job.stopping
    assert background.positions() == {T0: 105, T1: 53}
    assert background.mismatches == 2 and background.rounds == 1
    assert _sample("mirror_sink_verified_offset", config, "0") == 105
    assert _sample("mirror_sink_verify_mismatches_total", config, "0") == 2
    assert _sample("mirror_sink_verified_bytes_total", config, "1") == 30
    assert _sample("mirror_sink_verify_unverifiable_records_total", config, "1") == 1
    assert _sample("mirror_sink_verify_mismatches_total", config, "1") == 0, "every series exists from the first round"


def test_with_topic_aggregation_the_positions_are_summed_per_topic(script: Script) -> None:
    config = _config(**{"metrics.aggregate": "topic"})
    background = BackgroundVerifier(config)
    script.steps.append((VerifyReport(config.name, [_verdict(T0, 1), _verdict(T1, 1)]), {T0: 10, T1: 20}))
    background._round()
    assert _sample("mirror_sink_verified_offset", config, "all") == 30
    assert _sample("mirror_sink_verified_offset", config, "0") is None


def test_rounds_add_up_and_go_on_with_the_same_verifier(script: Script) -> None:
    config = _config()
    background = BackgroundVerifier(config)
    script.steps.append((VerifyReport(config.name, [_verdict(T0, 1, mismatches=1)]), {T0: 10}))
    script.steps.append((VerifyReport(config.name, [_verdict(T0, 1, mismatches=3)]), {T0: 12}))
    background._round()
    background._round()
    assert len(script.made) == 1, "each round goes on from where the last one ended"
    assert background.rounds == 2 and background.mismatches == 4 and background.positions() == {T0: 12}
    assert _sample("mirror_sink_verify_mismatches_total", config, "0") == 4


def test_a_mismatch_is_logged_as_a_warning_and_mirroring_is_not_judged(
    script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    config = _config()
    background = BackgroundVerifier(config)
    script.steps.append((VerifyReport(config.name, [_verdict(T0, 4, mismatches=1)]), {T0: 5}))
    with caplog.at_level("DEBUG", logger=background_verifier.__name__):
        background._round()
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "found 1 mismatches" in warning.getMessage()


def test_the_job_retries_a_failed_round_and_stopping_closes_the_verifier_and_removes_its_series(
    script: Script,
) -> None:
    config = _config()
    background = BackgroundVerifier(config)
    script.steps.extend([RuntimeError("the target is away"), (VerifyReport(config.name, [_verdict(T0, 1)]), {T0: 7})])
    background.start()
    try:
        for _ in range(3):  # the failed round, the good one, and the next round's start
            assert script.rounds.acquire(timeout=WAIT_S)
        assert background.is_alive()
    finally:
        background.stop(WAIT_S)
    assert not background.is_alive()
    assert background.rounds == 1 and background.positions() == {T0: 7}
    (made,) = script.made
    assert made.closed == 1, "the job's thread releases its clients itself"
    assert _sample("mirror_sink_verified_offset", config, "0") is None, "the connector's series go with it"
