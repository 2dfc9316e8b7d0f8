"""MirrorSinkRest, what the REST API asks MirrorSink connectors beyond Connect's resources: it answers
only for MirrorSink connectors, from the jobs running now (nothing when one does not run), and
keeps the drill reports it read when a fresh read fails.

A real MirrorSinkConnector (made from its props; it connects nowhere until started) whose engine jobs
are the fakes of ``tests/unit/connectors/fakes.py``; its offsets store is a recording stand-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pytest

from connectors import jobs
from connectors.mirror_sink_connector import MirrorSinkConnector
from connectors.offsets import ConnectorOffsets
from connectors.rest_extension import MirrorSinkRest
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.failover.checkpoints.offset_translator import TranslatedOffset
from mirror_sink.worker.connector_plugin import (
    CheckpointState,
    Conflict,
    ConnectorPlugin,
    JobPhase,
    PartitionLag,
    PartitionOffset,
)
from mirror_sink.worker.herder_types import ConnectorNotFound
from tests.unit.connectors.fakes import BASE, FakeCheckpoints, FakeDrills, FakeLag, FakeVerifier, fake
from tests.unit.worker.fakes import FakeConnector

pytestmark = pytest.mark.unit

CHECKPOINT = CheckpointState("app", "east.orders", 0, 40, 38, 1_700_000_000_000)


class RecordingOffsets:
    """The connector's offsets store, as far as the extension asks it."""

    def __init__(self) -> None:
        self.asked: list[tuple[Sequence[PartitionOffset], str]] = []

    def checkpoints(self) -> tuple[str, list[CheckpointState]]:
        return "east.checkpoints.internal", [CHECKPOINT]

    def translate(self, offsets: Sequence[PartitionOffset], direction: str) -> list[TranslatedOffset]:
        self.asked.append((offsets, direction))
        return []


@pytest.fixture(autouse=True)
def fake_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "CheckpointEmitter", FakeCheckpoints)
    monkeypatch.setattr(jobs, "BackgroundVerifier", FakeVerifier)
    monkeypatch.setattr(jobs, "DrillWatch", FakeDrills)
    monkeypatch.setattr(jobs, "LagMonitor", FakeLag)


@pytest.fixture
def mirror() -> MirrorSinkConnector:
    return MirrorSinkConnector({**BASE, "verify.enabled": "true"})


def _rest(*connectors: ConnectorPlugin) -> MirrorSinkRest:
    by_name = {c.settings.name: c for c in connectors}

    def connector_of(name: str) -> ConnectorPlugin:
        if name not in by_name:
            raise ConnectorNotFound(name)
        return by_name[name]

    return MirrorSinkRest(connector_of)


def _running(mirror: MirrorSinkConnector) -> tuple[FakeLag, FakeVerifier, FakeDrills]:
    mirror.jobs(JobPhase.BESIDE_TASKS)
    mirror.jobs(JobPhase.WHILE_ACTIVE)
    board = mirror.jobs_board
    return fake(board.lag, FakeLag), fake(board.verifier, FakeVerifier), fake(board.drills, FakeDrills)


def test_only_mirrorsink_connectors_are_answered_for_and_an_unknown_one_is_not_found(
    mirror: MirrorSinkConnector,
) -> None:
    rest = _rest(mirror, FakeConnector({"name": "other"}))
    assert rest.source_alias("mirror") == "east"
    with pytest.raises(Conflict) as refused:
        rest.lag("other")
    assert refused.value.message == "Connector other is not a MirrorSinkConnector"
    with pytest.raises(ConnectorNotFound):
        rest.readiness("nope")


def test_with_no_job_running_there_is_no_lag_verification_or_drill_to_show(mirror: MirrorSinkConnector) -> None:
    rest = _rest(mirror)
    assert rest.lag("mirror") == [] and rest.verified("mirror") == {} and rest.verify_mismatches("mirror") == 0
    assert rest.drills("mirror") == [] and rest.drills("mirror", fresh=True) == []


def test_the_lag_and_the_verification_are_the_running_jobs_readings_by_target_partition(
    mirror: MirrorSinkConnector,
) -> None:
    lag, verifier, _ = _running(mirror)
    lag.last = {("east.orders", 1): (0, 0.0), ("east.orders", 0): (5, 1.5)}
    verifier.verified = {TargetPartition("east.orders", 0): 40}
    verifier.mismatches = 2
    rest = _rest(mirror)
    assert rest.lag("mirror") == [PartitionLag("east.orders", 0, 5, 1.5), PartitionLag("east.orders", 1, 0, 0.0)]
    assert rest.verified("mirror") == {("east.orders", 0): 40} and rest.verify_mismatches("mirror") == 2


def test_fresh_drill_reports_are_read_again_first(mirror: MirrorSinkConnector) -> None:
    _, _, drills = _running(mirror)
    drills.kept = [{"drill_id": "d2"}, {"drill_id": "d1"}]
    rest = _rest(mirror)
    assert rest.drills("mirror") == drills.kept and "refresh" not in drills.calls
    assert rest.drills("mirror", fresh=True) == drills.kept and drills.calls == ["refresh"]


def test_a_fresh_read_that_fails_answers_with_the_reports_read_before_or_else_is_refused(
    mirror: MirrorSinkConnector,
) -> None:
    _, _, drills = _running(mirror)
    drills.refresh_error = TaskFailure("east.drills.internal: not authorized")
    rest = _rest(mirror)
    with pytest.raises(Conflict) as refused:
        rest.drills("mirror", fresh=True)
    assert refused.value.message == (
        "cannot read the drill reports of mirror from east.drills.internal: east.drills.internal: not authorized"
    )
    drills.kept = [{"drill_id": "d1"}]
    assert rest.drills("mirror", fresh=True) == [{"drill_id": "d1"}]


def test_readiness_checkpoints_and_translation_are_the_connector_s_own(mirror: MirrorSinkConnector) -> None:
    offsets = RecordingOffsets()
    mirror.offsets_store = cast(ConnectorOffsets, offsets)
    rest = _rest(mirror)
    assert rest.checkpoints("mirror") == ("east.checkpoints.internal", [CHECKPOINT])
    asked = [PartitionOffset("orders", 0, 40)]
    assert rest.translate("mirror", asked, "source-to-target") == []
    assert offsets.asked == [(asked, "source-to-target")]
    scored = rest.readiness("mirror")
    assert 0 <= scored.score <= 100
    assert [c.name for c in scored.components] == ["rpo", "drill", "verify", "checkpoints", "transactions", "sync"]
