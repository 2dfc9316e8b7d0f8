"""What a running MirrorSink connector hands the DR readiness score: each reading from the job on the
board now (none while a job does not run), the settings that count, and the drift it measured.

The board's jobs are the fakes of ``tests/unit/connectors/fakes.py``; the score itself is
``failover.readiness.assess``'s (tests/unit/failover/rehearsal/test_readiness.py).
"""

from __future__ import annotations

import datetime
import time

import pytest

from connectors import jobs
from connectors.jobs import JobBoard
from connectors.readiness import readiness, readiness_inputs
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.failover.rehearsal.readiness import assess
from mirror_sink.worker.connector_plugin import JobPhase
from tests.unit.connectors.fakes import FakeCheckpoints, FakeDrills, FakeLag, FakeVerifier, config, fake

pytestmark = pytest.mark.unit

DRILL = {"drill_id": "d1", "started": "2026-01-01T00:00:00+00:00", "outcome": "passed"}


@pytest.fixture(autouse=True)
def fake_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "CheckpointEmitter", FakeCheckpoints)
    monkeypatch.setattr(jobs, "BackgroundVerifier", FakeVerifier)
    monkeypatch.setattr(jobs, "DrillWatch", FakeDrills)
    monkeypatch.setattr(jobs, "LagMonitor", FakeLag)


def _running_board(cfg: MirrorSinkConfig) -> JobBoard:
    """A board with every job of ``cfg`` made, and readings on each."""
    board = JobBoard(cfg, dict)
    board.make(JobPhase.BESIDE_TASKS)
    board.make(JobPhase.WHILE_ACTIVE)
    fake(board.lag, FakeLag).last = {("east.orders", 0): (5, 1.5), ("east.orders", 1): (0, 0.0)}
    verifier = fake(board.verifier, FakeVerifier)
    verifier.mismatches = 1
    verifier.verified = {TargetPartition("east.orders", 0): 40}
    fake(board.checkpoints, FakeCheckpoints).coverage = (4, 3, time.monotonic() - 10.0)
    fake(board.drills, FakeDrills).kept = [DRILL]
    return board


def test_with_no_job_running_nothing_is_measured_and_the_settings_still_count() -> None:
    cfg = config(**{"verify.enabled": "true", "source.transactions.whole": "true", "sync.topic.acls.enabled": "false"})
    before = datetime.datetime.now(datetime.UTC)
    inputs = readiness_inputs(cfg, JobBoard(cfg, dict), topic_config_problem=None, topic_acl_problem=None)
    assert before <= inputs.now <= datetime.datetime.now(datetime.UTC)
    assert (inputs.lag_seconds, inputs.drills, inputs.partitions, inputs.partitions_verified) == ([], [], 0, 0)
    assert inputs.verify_mismatches == 0 and inputs.groups is None and inputs.groups_checkpointed == 0
    assert inputs.checkpoint_age_s is None and inputs.checkpoint_interval_s == 5.0
    assert inputs.verify_enabled and inputs.checkpoints_enabled and inputs.exactly_once
    assert inputs.transactions_whole and inputs.sync_topic_configs and not inputs.sync_topic_acls


def test_the_running_jobs_readings_are_handed_over() -> None:
    cfg = config(**{"verify.enabled": "true"})
    inputs = readiness_inputs(
        cfg, _running_board(cfg), topic_config_problem="describe configs timed out", topic_acl_problem="denied"
    )
    assert sorted(inputs.lag_seconds) == [0.0, 1.5] and inputs.partitions == 2
    assert inputs.verify_mismatches == 1 and inputs.partitions_verified == 1
    assert (inputs.groups, inputs.groups_checkpointed) == (4, 3)
    assert inputs.checkpoint_age_s is not None and 10.0 <= inputs.checkpoint_age_s < 11.0
    assert inputs.drills == [DRILL]
    assert (inputs.topic_config_problem, inputs.topic_acl_problem) == ("describe configs timed out", "denied")


def test_checkpoints_count_as_enabled_only_with_the_offset_syncs_they_translate_through() -> None:
    cfg = config(**{"emit.offset-syncs.enabled": "false"})
    assert cfg.emit_checkpoints
    inputs = readiness_inputs(cfg, JobBoard(cfg, dict), topic_config_problem=None, topic_acl_problem=None)
    assert not inputs.checkpoints_enabled


def test_the_score_is_the_assessment_of_those_readings() -> None:
    cfg = config(**{"verify.enabled": "true"})
    board = _running_board(cfg)
    scored = readiness(cfg, board, topic_config_problem=None, topic_acl_problem=None)
    expected = assess(readiness_inputs(cfg, board, topic_config_problem=None, topic_acl_problem=None))
    assert [(c.name, c.points) for c in scored.components] == [(c.name, c.points) for c in expected.components]
    assert "verify: background verification found 1 mismatches" in scored.reasons()
