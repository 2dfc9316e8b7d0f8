"""JobBoard, MirrorSinkConnector's background jobs: which it makes for each phase under which settings,
how each job stops as the runtime asks (the checkpoint emitter stopped, not only asked, and once), and
that a job asked to stop leaves the board at once while a newer one of its kind stays.

The engine's jobs are faked where the module names them (``tests/unit/connectors/fakes.py``).
"""

from __future__ import annotations

import pytest

from connectors import jobs
from connectors.jobs import JobBoard
from mirror_sink.topics.source_discovery import TopicMapping
from mirror_sink.worker.connector_plugin import ConnectorJob, JobPhase
from tests.unit.connectors.fakes import FakeCheckpoints, FakeDrills, FakeJob, FakeLag, FakeVerifier, config, fake

pytestmark = pytest.mark.unit

MAPPINGS = {"east.orders": TopicMapping("orders", "east.orders", 3, None)}
NO_SYNCS = {"emit.offset-syncs.enabled": "false"}


@pytest.fixture(autouse=True)
def fake_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "CheckpointEmitter", FakeCheckpoints)
    monkeypatch.setattr(jobs, "BackgroundVerifier", FakeVerifier)
    monkeypatch.setattr(jobs, "DrillWatch", FakeDrills)
    monkeypatch.setattr(jobs, "LagMonitor", FakeLag)


def _board(**overrides: str) -> JobBoard:
    return JobBoard(config(**overrides), lambda: MAPPINGS)


def _engine_job(job: ConnectorJob) -> FakeJob:
    inner = job._job  # type: ignore[attr-defined]  # the engine job a board's job runs
    assert isinstance(inner, FakeJob)
    return inner


def test_beside_the_tasks_come_checkpoints_and_drills_by_default_and_verification_when_enabled() -> None:
    board = _board()
    assert [j.name for j in board.make(JobPhase.BESIDE_TASKS)] == ["checkpoints-mirror", "drills-mirror"]
    assert board.checkpoints is not None and board.drills is not None and board.verifier is None
    verifying = _board(**{"verify.enabled": "true"})
    made = verifying.make(JobPhase.BESIDE_TASKS)
    assert [j.name for j in made] == ["checkpoints-mirror", "verify-mirror", "drills-mirror"]
    assert all(isinstance(j, ConnectorJob) for j in made)
    assert verifying.lag is None, "the lag monitor is no job beside the tasks"


def test_without_offset_syncs_no_job_runs_beside_the_tasks_and_without_checkpoints_only_drills() -> None:
    assert _board(**NO_SYNCS).make(JobPhase.BESIDE_TASKS) == []
    board = _board(**{"emit.checkpoints.enabled": "false"})
    assert [j.name for j in board.make(JobPhase.BESIDE_TASKS)] == ["drills-mirror"]
    assert board.checkpoints is None


def test_while_active_comes_the_lag_monitor_alone_over_the_connector_s_current_mappings() -> None:
    board = _board(**NO_SYNCS)
    [job] = board.make(JobPhase.WHILE_ACTIVE)
    assert job.name == "lag-mirror"
    assert fake(board.lag, FakeLag).mappings() == MAPPINGS
    assert board.checkpoints is None and board.drills is None


def test_a_job_starts_and_says_whether_it_runs() -> None:
    board = _board()
    [checkpoints, drills] = board.make(JobPhase.BESIDE_TASKS)
    checkpoints.start()
    assert checkpoints.is_alive() and not drills.is_alive()


def test_a_job_asked_to_stop_leaves_the_board_at_once_and_is_asked_only() -> None:
    board = _board(**{"verify.enabled": "true"})
    _, verify, drills = board.make(JobPhase.BESIDE_TASKS)
    for job in (verify, drills):
        job.start()
        job.request_stop()
        assert _engine_job(job).calls == ["start", "request_stop"] and job.is_alive()
    assert board.verifier is None and board.drills is None and board.checkpoints is not None
    drills.stop(2.0)
    assert _engine_job(drills).calls[-1] == "stop(2)" and not drills.is_alive()


def test_the_checkpoint_emitter_asked_to_stop_is_stopped_and_not_stopped_again() -> None:
    board = _board()
    checkpoints, _ = board.make(JobPhase.BESIDE_TASKS)
    checkpoints.start()
    checkpoints.request_stop()
    assert board.checkpoints is None and not checkpoints.is_alive()
    checkpoints.stop(5.0)
    assert _engine_job(checkpoints).calls == ["start", "stop(30)"], "its round ends within its own 30 s"


def test_stopping_an_older_job_leaves_a_newer_one_of_its_kind_on_the_board() -> None:
    board = _board()
    old_checkpoints, old_drills = board.make(JobPhase.BESIDE_TASKS)
    [old_lag] = board.make(JobPhase.WHILE_ACTIVE)
    board.make(JobPhase.BESIDE_TASKS)
    board.make(JobPhase.WHILE_ACTIVE)
    newer = (board.checkpoints, board.drills, board.lag)
    for job in (old_checkpoints, old_drills, old_lag):
        job.stop(1.0)
    assert (board.checkpoints, board.drills, board.lag) == newer and None not in newer
